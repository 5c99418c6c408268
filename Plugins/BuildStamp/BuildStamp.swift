import Foundation
import PackagePlugin

/// Writes `BuildStamp.swift` for the executable before each build: the commit the binary is built from (with
/// `-dirty` when the work tree has changes) and the day it is built, as `gatehouse --version`, `/healthz` and the
/// `gatehouse_build_info` metric say them. The file is rewritten only when its text changes, so that an unchanged
/// commit on the same day compiles nothing again. Outside a git checkout (a source archive) the commit is `unknown`.
@main
struct BuildStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Stamp")
        let script = #"""
            set -u
            root=$1; out=$2
            mkdir -p "$out"
            commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
            if [ "$commit" != unknown ] && [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
            built=$(date -u +%Y-%m-%d)
            text="// Written by the BuildStamp plugin at each build.
            enum BuildStamp {
                static let commit = \"$commit\"
                static let built = \"$built\"
            }"
            if [ "$(cat "$out/BuildStamp.swift" 2>/dev/null)" != "$text" ]; then printf '%s\n' "$text" >"$out/BuildStamp.swift"; fi
            """#
        return [
            .prebuildCommand(
                displayName: "Build stamp (commit and day)", executable: URL(filePath: "/bin/sh"),
                arguments: ["-c", script, "build-stamp", context.package.directoryURL.path, output.path], outputFilesDirectory: output)
        ]
    }
}
