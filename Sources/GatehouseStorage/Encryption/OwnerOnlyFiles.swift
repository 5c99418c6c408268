import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Files only the gateway's own user may read: the database and its folder, development mode's key.
public enum OwnerOnlyFiles {
    /// Makes the folder `path` is in (and the folders above it, as needed) readable by its owner only; a folder that
    /// exists keeps its mode (it may be shared on purpose, such as the working folder).
    public static func createFolder(of path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        guard !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) else { return }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Creates `path` with mode 0600 and `contents`, failing if it exists (never following a link put in its place).
    public static func create(_ path: String, contents: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path]) }
        defer { close(descriptor) }
        let bytes = Array(contents.utf8)
        guard write(descriptor, bytes, bytes.count) == bytes.count else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }

    /// Makes `path` (if it exists) readable and writable by its owner only, whatever made it before.
    public static func restrict(_ path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }
}
