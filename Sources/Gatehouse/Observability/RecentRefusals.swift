import Foundation
import NIOConcurrencyHelpers

/// The last refusals this replica made (rate limits, allowlist blocks, access denials), with their reasons, for the
/// operator console. In memory, the newest `capacity`; never a member's identity, a path or a query: the route class,
/// the app and the reason.
public final class RecentRefusals: Sendable {
    public struct Refusal: Sendable, Equatable {
        public enum Kind: String, Sendable, CaseIterable {
            case rateLimit = "rate_limit"
            case allowlist
            case access
        }

        public let at: Date
        public let kind: Kind
        public let reason: String
        public let status: Int
    }

    let capacity: Int
    private let refusals = NIOLockedValueBox<[Refusal]>([])

    public init(capacity: Int = 100) {
        self.capacity = capacity
    }

    func record(_ kind: Refusal.Kind, reason: String, status: Int, at: Date = Date()) {
        refusals.withLockedValue { refusals in
            refusals.append(Refusal(at: at, kind: kind, reason: reason, status: status))
            if refusals.count > capacity { refusals.removeFirst(refusals.count - capacity) }
        }
    }

    /// Newest first.
    public var all: [Refusal] { refusals.withLockedValue { $0.reversed() } }
}
