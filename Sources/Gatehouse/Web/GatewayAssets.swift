import CompressNIO
import Crypto
import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird
import NIOCore

/// The gateway's own files (`Public/`: its CSS, JavaScript and icons), read once at start and prepared once: each
/// under its plain name and under a name that carries a hash of its bytes (`gatehouse.3f9a2c7e1b.css`), gzipped at
/// the best level where that makes it smaller. Pages name the hashed files (`url(for:)`), which browsers may keep for
/// a year: a new build changes the name, never what a name means. The plain names stay for what cannot know the hash
/// (an app's icon in the configuration, a page cached from before an upgrade), revalidated by their tag each time.
public struct GatewayAssets: Sendable {
    struct Asset: Sendable {
        let contentType: String
        let identity: ByteBuffer
        let gzip: ByteBuffer?
        /// A strong tag: the hash of the bytes, quoted.
        let tag: String
        /// Named by its hash: the same name never means other bytes.
        var isImmutable = false
    }

    private let byPath: [String: Asset]
    /// Plain path → hashed path.
    private let hashedPaths: [String: String]

    static let immutableCaching = "public, max-age=31536000, immutable"
    static let revalidatedCaching = "no-cache"
    /// Types worth compressing (text); images such as PNG are compressed already.
    static let compressibleTypes: Set = ["css", "js", "svg", "json", "txt", "html", "map"]

    init(files: [(path: String, bytes: [UInt8])]) throws {
        var byPath: [String: Asset] = [:]
        var hashedPaths: [String: String] = [:]
        for (path, bytes) in files {
            let digest = SHA256.hash(data: bytes).withUnsafeBytes { String(lowerHex: $0) }
            let name = Self.hashedName(path, hash: String(digest.prefix(10)))
            let type = Self.fileExtension(path)
            let identity = ByteBuffer(bytes: bytes)
            let gzip = Self.compressibleTypes.contains(type) ? try Self.gzip(identity) : nil
            var asset = Asset(
                contentType: MediaType.getMediaType(forExtension: type)?.description ?? "application/octet-stream", identity: identity,
                gzip: gzip.flatMap { $0.readableBytes < identity.readableBytes ? $0 : nil }, tag: "\"\(digest.prefix(32))\"")
            byPath[Paths.publicAssets + path] = asset
            asset.isImmutable = true
            byPath[Paths.publicAssets + name] = asset
            hashedPaths[Paths.publicAssets + path] = Paths.publicAssets + name
        }
        self.byPath = byPath
        self.hashedPaths = hashedPaths
    }

    /// Every regular file under `directory`, by its path below it (`/gatehouse.css`, `/icons/wiki.svg`), and the files
    /// made from the configuration (`adding`: the brand's).
    public static func load(directory: String, adding made: [(path: String, bytes: [UInt8])] = []) throws -> GatewayAssets {
        let root = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        guard let walk = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else {
            throw GatewayAssetsError.unreadable(directory)
        }
        var files: [(path: String, bytes: [UInt8])] = []
        for case let url as URL in walk where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            let relative = url.standardizedFileURL.path.dropFirst(root.path.count)
            guard relative.hasPrefix("/"), !relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) else { continue }
            guard let data = FileManager.default.contents(atPath: url.path) else { throw GatewayAssetsError.unreadable(url.path) }
            files.append((String(relative), Array(data)))
        }
        let assets = try GatewayAssets(files: files.filter { file in !made.contains { $0.path == file.path } } + made)
        for required in [Paths.barScript, Paths.barKeeperScript, Paths.barStyle, Paths.toastsScript, Paths.sessionScript, Paths.liveScript] where assets.byPath[required] == nil {
            throw GatewayAssetsError.missing(required, directory: directory)
        }
        return assets
    }

    /// Where a page finds one of the gateway's files (`Paths.barScript`…): its hashed name, or the path itself for a
    /// file the gateway does not have.
    public func url(for path: String) -> String { hashedPaths[path] ?? path }

    /// The hashed URLs by a name templates can use: `/gatehouse-bar.js` as `gatehouse_bar_js` (`{{assets.gatehouse_bar_js}}`).
    var templateNames: [String: String] {
        var names: [String: String] = [:]
        for (plain, hashed) in hashedPaths {
            let name = plain.dropFirst(Paths.publicAssets.count + 1).map { $0.isLetter || $0.isNumber ? $0 : "_" }
            names[String(name)] = hashed
        }
        return names
    }

    /// The answer to a `GET` or `HEAD` of `path`, or nil when it is not one of the gateway's files.
    func response(path: String, acceptEncoding: String?, ifNoneMatch: String?, isHEAD: Bool) -> Response? {
        guard let asset = byPath[path] else { return nil }
        var headers: HTTPFields = [
            .contentType: asset.contentType, .eTag: asset.tag,
            .cacheControl: asset.isImmutable ? Self.immutableCaching : Self.revalidatedCaching,
        ]
        if asset.gzip != nil { headers[.vary] = "Accept-Encoding" }
        if let ifNoneMatch, ifNoneMatch.split(separator: ",").contains(where: { Self.tagMatches($0, asset.tag) }) {
            return Response(status: .notModified, headers: headers)
        }
        var body = asset.identity
        if let gzip = asset.gzip, AcceptEncoding(acceptEncoding).takesGzip {
            body = gzip
            headers[.contentEncoding] = "gzip"
        }
        headers[.contentLength] = "\(body.readableBytes)"
        return Response(status: .ok, headers: headers, body: isHEAD ? .init() : .init(byteBuffer: body))
    }

    /// `If-None-Match` compares weakly (RFC 9110 §13.1.2): a `W/` tag, as proxies make of a gzipped one, matches too.
    static func tagMatches(_ candidate: Substring, _ tag: String) -> Bool {
        var candidate = candidate.trimmingCharacters(in: .whitespaces)[...]
        if candidate.hasPrefix("W/") { candidate = candidate.dropFirst(2) }
        return candidate == "*" || candidate == tag
    }

    static func fileExtension(_ path: String) -> String {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return name[name.index(after: dot)...].lowercased()
    }

    /// `/icons/wiki.svg` with hash `h` is `/icons/wiki.h.svg`; a name without an extension gets `.h` at its end.
    static func hashedName(_ path: String, hash: String) -> String {
        let slash = path.lastIndex(of: "/") ?? path.startIndex
        guard let dot = path[slash...].lastIndex(of: "."), path[path.index(before: dot)] != "/" else { return path + "." + hash }
        return path[..<dot] + "." + hash + path[dot...]
    }

    static func gzip(_ bytes: ByteBuffer) throws -> ByteBuffer {
        var input = bytes
        let compressor = try ZlibCompressor(algorithm: .gzip, configuration: .init(compressionLevel: .bestCompression))
        var output = ByteBufferAllocator().buffer(capacity: compressor.maxSize(from: input))
        try compressor.deflate(from: &input, to: &output, flush: .finish)
        return output
    }
}

public enum GatewayAssetsError: Error, CustomStringConvertible {
    case unreadable(String)
    case missing(String, directory: String)

    public var description: String {
        switch self {
        case .unreadable(let path): "the gateway's files at \(path) cannot be read"
        case .missing(let path, let directory):
            "\(directory) has no \(path.dropFirst(Paths.publicAssets.count + 1)): the gateway bar cannot work without it"
        }
    }
}

/// Serves `GatewayAssets` under `/static`; anything else there is not found (the next responders never see it).
struct GatewayAssetsMiddleware<Context: RequestContext>: RouterMiddleware {
    let assets: GatewayAssets

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if path == Paths.favicon {
            // Under its fixed name, kept a day: browsers ask for it at every page of an app that names no icon, and a
            // revalidation per reload is a request for nothing.
            guard request.method == .get || request.method == .head,
                var response = assets.response(path: Paths.faviconAsset, acceptEncoding: nil, ifNoneMatch: nil, isHEAD: request.method == .head)
            else { throw HTTPError(.notFound) }
            response.headers[.cacheControl] = "public, max-age=86400"
            return response
        }
        guard path.hasPrefix(Paths.publicAssets + "/") else { return try await next(request, context) }
        guard request.method == .get || request.method == .head else {
            throw HTTPError(.methodNotAllowed, headers: [.allow: "GET, HEAD"])
        }
        guard
            let response = assets.response(
                path: path, acceptEncoding: request.headers[.acceptEncoding], ifNoneMatch: request.headers[.ifNoneMatch],
                isHEAD: request.method == .head)
        else { throw HTTPError(.notFound) }
        return response
    }
}
