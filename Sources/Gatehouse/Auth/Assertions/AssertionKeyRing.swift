import Crypto
import Foundation
import GatehouseCore
import GatehouseStorage
import Logging
import NIOConcurrencyHelpers

/// The keys that sign identity assertions, and the set published at `/.well-known/jwks.json`. Either one key from a
/// file (`assertions.signing_key_file`), or keys made and kept in the store, where every replica finds the same ones:
/// `refresh` (at the start and every minute) reads them, makes the next one when `AssertionKeySchedule` says it is
/// due (whichever replica is first; the others read its key) and drops retired ones.
final class AssertionKeyRing: Sendable {
    struct Key: Sendable {
        let signsFrom: Date
        let privateKey: P256.Signing.PrivateKey
        let kid: String

        init(signsFrom: Date, privateKey: P256.Signing.PrivateKey) {
            self.signsFrom = signsFrom
            self.privateKey = privateKey
            self.kid = IdentityAssertion.keyID(of: privateKey.publicKey)
        }
    }

    enum Source: Sendable {
        case file(P256.Signing.PrivateKey)
        case store(any AssertionKeyStore, AssertionKeySchedule)
    }

    let source: Source
    let logger: Logger
    /// The keys in use (signing and published), oldest first, and the published set's JSON.
    /// Read by every request to an app that takes assertions, changed by a refresh: each thread reads its own copy.
    private let state = ReadMostly<(keys: [Key], published: Data)>(([], Data(#"{"keys":[]}"#.utf8)))

    init(source: Source, logger: Logger) {
        self.source = source
        self.logger = logger
        if case .file(let key) = source { publish([Key(signsFrom: .distantPast, privateKey: key)]) }
    }

    /// The ring `configuration` asks for; a key file that cannot be read, or is not a P-256 key, is a configuration
    /// problem named with its key.
    static func make(_ configuration: AssertionsConfiguration, store: any AssertionKeyStore, logger: Logger) throws(ConfigurationError)
        -> AssertionKeyRing
    {
        guard let path = configuration.signingKeyFile else {
            let schedule = AssertionKeySchedule(rotation: TimeInterval(configuration.rotationDays) * 86_400)
            return AssertionKeyRing(source: .store(store, schedule), logger: logger)
        }
        return AssertionKeyRing(source: .file(try readKey(path)), logger: logger)
    }

    static func readKey(_ path: String) throws(ConfigurationError) -> P256.Signing.PrivateKey {
        let problem = { (text: String) in ConfigurationError(problems: [ConfigurationProblem("assertions.signing_key_file", text)]) }
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else { throw problem("cannot read \(path)") }
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw problem("\(path) is not a PEM P-256 (prime256v1) private key (openssl ecparam -name prime256v1 -genkey makes one)")
        }
        return key
    }

    /// The key that signs at `now`: the newest whose time has come.
    func signing(at now: Date) -> Key? {
        state.value.keys.last { $0.signsFrom <= now }
    }

    /// `{"keys": [...]}`: every key that signs, will sign or signed assertions not yet expired.
    var publishedSet: Data { state.value.published }

    func refresh(now: Date = Date()) async throws {
        guard case .store(let store, let schedule) = source else { return }
        var records = try await store.keys()
        func scheduled(_ records: [AssertionKeyRecord]) -> [AssertionKeySchedule.Key] {
            records.map { AssertionKeySchedule.Key(generation: $0.generation, signsFrom: $0.signsFrom) }
        }
        if let next = schedule.next(scheduled(records), now: now) {
            let key = P256.Signing.PrivateKey()
            // Whole seconds: every store gives the same instant back, never one a fraction later than it was made.
            let signsFrom = Date(timeIntervalSince1970: next.signsFrom.timeIntervalSince1970.rounded(.down))
            let record = AssertionKeyRecord(
                generation: next.generation, privateKey: key.rawRepresentation.base64EncodedString(), signsFrom: signsFrom)
            if try await store.add(record) {
                logger.notice(
                    "made the next assertion signing key",
                    metadata: ["kid": .string(IdentityAssertion.keyID(of: key.publicKey)), "signs_from": .string("\(signsFrom)")])
            }
            records = try await store.keys()
        }
        let retired = Set(schedule.retired(scheduled(records), now: now).map(\.generation))
        if !retired.isEmpty { try await store.remove(generations: retired.sorted()) }
        publish(
            records.filter { !retired.contains($0.generation) }.compactMap { record in
                guard let raw = Data(base64Encoded: record.privateKey), let key = try? P256.Signing.PrivateKey(rawRepresentation: raw) else {
                    logger.error(
                        "an assertion signing key in the store does not read as a P-256 key", metadata: ["generation": "\(record.generation)"])
                    return nil
                }
                return Key(signsFrom: record.signsFrom, privateKey: key)
            })
    }

    private func publish(_ keys: [Key]) {
        let set = ["keys": keys.map { IdentityAssertion.jwk(of: $0.privateKey.publicKey) }]
        let json = (try? JSONSerialization.data(withJSONObject: set, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        state.change { $0 = (keys.sorted { $0.signsFrom < $1.signsFrom }, json) }
    }
}
