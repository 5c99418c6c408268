import Foundation

/// What the gateway remembers of a member between sessions, by account: the name they last signed in with (sealed),
/// so that the operator console shows people rather than subject ids, and the apps they opened last, so that the
/// portal lists them first after any sign-out and on any browser. Forgotten a year after the member was last seen.
public protocol MemberStore: Sendable {
    /// Records a sign-in with the name the provider gave (`nil` keeps the one known).
    func signedIn(account: String, name: String?, at: Date) async throws
    /// The apps the member opened last, newest first (empty for a member never seen).
    func recentApps(account: String) async throws -> [String]
    /// Replaces the member's recently opened apps.
    func setRecentApps(_ slugs: [String], account: String, at: Date) async throws
    /// Who `accounts` are: each known one's name and, if registered, username.
    func names(accounts: [String]) async throws -> [String: MemberName]
    /// Forgets the members not seen since `cutoff`; how many.
    @discardableResult func forgetUnseen(before cutoff: Date) async throws -> Int
}

/// A member as the console names them: the name they signed in with and the username they chose in the upgrade.
public struct MemberName: Sendable, Equatable {
    public var name: String?
    public var username: String?

    public init(name: String?, username: String?) {
        self.name = name
        self.username = username
    }
}

/// The recently opened apps as stored: slugs joined by spaces (slugs have none).
enum RecentAppsColumn {
    static func encode(_ slugs: [String]) -> String { slugs.joined(separator: " ") }
    static func decode(_ text: String?) -> [String] { text.map { $0.split(separator: " ").map(String.init) } ?? [] }
}
