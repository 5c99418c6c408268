import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOSSL

/// The TLS context new connections of the members' listener use, replaced by `reload()` (on `SIGHUP`): handshakes
/// after it use the new pair, connections already open go on with theirs, and a pair that does not load keeps the old
/// one (said in the log and in `gatehouse_tls_reloads_total{result="failed"}`).
final class ListenerTLS: Sendable {
    /// What ALPN offers, in order of preference.
    static func protocols(_ configuration: ListenTLSConfiguration) -> [String] { configuration.http2 ? ["h2", "http/1.1"] : ["http/1.1"] }

    let configuration: ListenTLSConfiguration
    private let current: NIOLockedValueBox<(context: NIOSSLContext, notValidAfter: Date)>
    /// The certificates of the file first read: the leaf (which may sign itself), then its chain (and a development
    /// authority's own root).
    let chain: [NIOSSLCertificate]
    private let reloads: NIOLockedValueBox<(succeeded: Int, failed: Int)> = .init((0, 0))
    private let logger: Logger

    init(configuration: ListenTLSConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        let identity = try TLSIdentity.load(configuration).get()
        chain = identity.chain
        current = NIOLockedValueBox((try Self.context(identity, configuration), identity.notValidAfter))
    }

    private static func context(_ identity: TLSIdentity, _ configuration: ListenTLSConfiguration) throws -> NIOSSLContext {
        try identity.context(minimumVersion: configuration.minimumVersion, protocols: protocols(configuration))
    }

    var context: NIOSSLContext { current.withLockedValue { $0.context } }
    var notValidAfter: Date { current.withLockedValue { $0.notValidAfter } }
    var reloadCounts: (succeeded: Int, failed: Int) { reloads.withLockedValue { $0 } }

    /// The files' states (`FileState`): what `TLSReloader` compares to notice a renewal.
    func filesState() -> [FileState] {
        [configuration.certificateFile, configuration.privateKeyFile].map(FileState.init(path:))
    }

    /// Reads the pair again; true when the new one is in use.
    @discardableResult
    func reload() -> Bool {
        do {
            let identity = try TLSIdentity.load(configuration).get()
            let context = try Self.context(identity, configuration)
            current.withLockedValue { $0 = (context, identity.notValidAfter) }
            reloads.withLockedValue { $0.succeeded += 1 }
            logger.notice(
                "TLS certificate reloaded", metadata: ["not_valid_after": .string(ISO8601DateFormatter().string(from: identity.notValidAfter))])
            return true
        } catch {
            reloads.withLockedValue { $0.failed += 1 }
            logger.error("TLS certificate not reloaded: the one loaded before stays in use", metadata: ["error": .string("\(error)")])
            return false
        }
    }
}
