import Foundation

/// A key that signs identity assertions, kept so that every replica signs with the same keys: its generation (one
/// key per generation, whichever replica made it first), its P-256 private key (raw, base64) and when it signs from.
public struct AssertionKeyRecord: Sendable, Equatable {
    public var generation: Int
    public var privateKey: String
    public var signsFrom: Date

    public init(generation: Int, privateKey: String, signsFrom: Date) {
        self.generation = generation
        self.privateKey = privateKey
        self.signsFrom = signsFrom
    }
}

public protocol AssertionKeyStore: Sendable {
    /// Every kept key, oldest generation first.
    func keys() async throws -> [AssertionKeyRecord]
    /// Keeps `record` unless its generation is taken (another replica made that key first): `false` then.
    func add(_ record: AssertionKeyRecord) async throws -> Bool
    /// Drops the keys of these generations (retired: their last assertions have expired).
    func remove(generations: [Int]) async throws
}
