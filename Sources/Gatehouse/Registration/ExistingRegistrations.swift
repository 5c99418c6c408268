import Foundation
import GatehouseCore
import GatehouseStorage
import Logging

/// Whether a member signing in is `registered`: by an upgrade they finished here, by a chat account the homeserver
/// already links to their SSO subject (recorded then, so that it is asked once), or by the identity provider's word
/// (`registration.registered_claim`).
public struct ExistingRegistrations: Sendable {
    let registrations: any RegistrationStore
    let chat: any ChatBackend
    let registeredClaim: String?

    public init(registrations: any RegistrationStore, chat: any ChatBackend, registeredClaim: String?) {
        self.registrations = registrations
        self.chat = chat
        self.registeredClaim = registeredClaim
    }

    /// How a member signing in stands: registered or not, and with which chat account.
    public struct Standing: Sendable, Equatable {
        public var isRegistered: Bool
        public var chatUserID: String?

        static let notRegistered = Standing(isRegistered: false)
    }

    /// `claims`: the verified ID token's. A homeserver that cannot be asked leaves the member at `sso` (logged): the
    /// upgrade's last step finds the linked account later and completes with it.
    public func standing(_ identity: MemberIdentity, claims: [String: Any]?, logger: Logger) async throws -> Standing {
        if let account = try await registrations.account(sub: identity.sub) { return Standing(isRegistered: true, chatUserID: account.chatUserID) }
        if let registeredClaim, Self.holds(registeredClaim, identity: identity, claims: claims) { return Standing(isRegistered: true) }
        let account: ChatAccount?
        do {
            account = try await chat.account(linkedTo: identity.sub)
        } catch {
            logger.warning("chat homeserver not asked for an existing account", metadata: ["error": .string("\(error)")])
            return .notRegistered
        }
        guard let account else { return .notRegistered }
        // The account's localpart is the member's username, unless a registration here has it already: then the Matrix
        // ID itself (never a valid username, so never anybody else's).
        var outcome = try await registrations.registerExisting(sub: identity.sub, username: account.localpart, chatUserID: account.userID, at: Date())
        if outcome == .usernameTaken {
            outcome = try await registrations.registerExisting(sub: identity.sub, username: account.userID, chatUserID: account.userID, at: Date())
        }
        logger.info("existing chat account recognised", metadata: ["sub": .string(identity.sub), "chat_user_id": .string(account.userID)])
        return outcome == .usernameTaken ? .notRegistered : Standing(isRegistered: true, chatUserID: account.userID)
    }

    /// A role or group of that name, or a claim of that name that is true, a non-empty string or a non-empty list.
    static func holds(_ name: String, identity: MemberIdentity, claims: [String: Any]?) -> Bool {
        if identity.roles.contains(name) || identity.groups.contains(name) { return true }
        switch claims?[name] {
        case let flag as Bool: return flag
        case let text as String: return !text.isEmpty && text.lowercased() != "false"
        case let list as [Any]: return !list.isEmpty
        default: return false
        }
    }
}
