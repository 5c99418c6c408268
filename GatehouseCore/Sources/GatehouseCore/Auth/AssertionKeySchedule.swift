import Foundation

/// When the keys that sign identity assertions change. Keys are numbered by generation; each signs from its
/// `signsFrom` until the next one does. A new key is published `announcement` before it signs (apps that cached the
/// key set find it there), and an old key stays published `retention` after it stopped signing (its last assertions
/// are checked until they expire). Every replica reads the same kept keys, so all agree without talking.
public struct AssertionKeySchedule: Sendable {
    public struct Key: Sendable, Equatable {
        public var generation: Int
        public var signsFrom: Date

        public init(generation: Int, signsFrom: Date) {
            self.generation = generation
            self.signsFrom = signsFrom
        }
    }

    /// How long a key signs.
    public var rotation: TimeInterval
    public var announcement: TimeInterval
    public var retention: TimeInterval

    public init(rotation: TimeInterval, announcement: TimeInterval = 3600, retention: TimeInterval = IdentityAssertion.lifetime + 300) {
        self.rotation = rotation
        self.announcement = announcement
        self.retention = retention
    }

    /// The key that signs at `now`: the newest one whose time has come.
    public func signing(_ keys: [Key], now: Date) -> Key? {
        keys.filter { $0.signsFrom <= now }.max { $0.generation < $1.generation }
    }

    /// The keys to publish: the one that signs, the next one if it is announced, and older ones still in retention.
    public func published(_ keys: [Key], now: Date) -> [Key] {
        let retired = Set(self.retired(keys, now: now).map(\.generation))
        return keys.filter { !retired.contains($0.generation) }.sorted { $0.generation < $1.generation }
    }

    /// The keys nobody needs any more: a newer key has signed for longer than `retention`.
    public func retired(_ keys: [Key], now: Date) -> [Key] {
        guard let current = signing(keys, now: now) else { return [] }
        return keys.filter { key in
            guard key.generation < current.generation else { return false }
            let successor = keys.filter { $0.generation > key.generation }.min { $0.generation < $1.generation }!
            return successor.signsFrom.addingTimeInterval(retention) <= now
        }
    }

    /// The key to make now, if one is due: the first at once (no app knows any key yet), later ones `announcement`
    /// before the newest has signed for `rotation`.
    public func next(_ keys: [Key], now: Date) -> Key? {
        guard let newest = keys.max(by: { $0.generation < $1.generation }) else { return Key(generation: 1, signsFrom: now) }
        guard newest.signsFrom <= now, newest.signsFrom.addingTimeInterval(rotation - announcement) <= now else { return nil }
        return Key(
            generation: newest.generation + 1, signsFrom: max(now.addingTimeInterval(announcement), newest.signsFrom.addingTimeInterval(rotation)))
    }
}
