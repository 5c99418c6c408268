import Foundation
import GatehouseCore

/// A registered member as the chat's directory finds them.
public struct DirectoryEntry: Sendable, Equatable {
    public var sub: String
    public var username: String
    public var chatUserID: String?
    public var displayName: String?
    public var phoneNumber: PhoneNumber?
    public var discoverability: Discoverability?

    public init(
        sub: String, username: String, chatUserID: String?, displayName: String?, phoneNumber: PhoneNumber?, discoverability: Discoverability?
    ) {
        self.sub = sub
        self.username = username
        self.chatUserID = chatUserID
        self.displayName = displayName
        self.phoneNumber = phoneNumber
        self.discoverability = discoverability
    }

    /// Whether the member is found by `query`: by their username always (its start, any case); by their display
    /// name (any word's start, case and accents aside) or their phone number (its digits, from the country code)
    /// only when they chose to be discoverable in the upgrade's profile step.
    public func isFound(by query: String) -> Bool {
        let wanted = Self.folded(query.trimmingCharacters(in: .whitespaces))
        guard !wanted.isEmpty else { return false }
        let name = wanted.hasPrefix("@") ? String(wanted.dropFirst()) : wanted
        if Self.folded(username).hasPrefix(name) { return true }
        guard discoverability == .everybody else { return false }
        if let displayName {
            let folded = Self.folded(displayName)
            if folded.hasPrefix(wanted) || folded.split(separator: " ").contains(where: { $0.hasPrefix(wanted) }) { return true }
        }
        let digits = query.filter { $0.isASCII && $0.isNumber }
        if digits.count >= 6, let phoneNumber, phoneNumber.e164.dropFirst().hasPrefix(digits) { return true }
        return false
    }

    static func folded(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }
}

extension RegistrationStore {
    /// The registered members `query` finds (`DirectoryEntry.isFound`), by username, at most `limit`.
    public func directory(search query: String, limit: Int) async throws -> [DirectoryEntry] {
        Array(try await directoryEntries(limit: Self.directoryScanLimit).filter { $0.isFound(by: query) }.prefix(limit))
    }

    /// How many registrations a search reads at most (display names and numbers are sealed: they are compared after
    /// opening, never in SQL).
    public static var directoryScanLimit: Int { 20_000 }
}
