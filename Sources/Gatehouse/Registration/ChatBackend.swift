import Foundation
import GatehouseCore
import HTTPTypes

/// A member's account on the organization's chat homeserver.
public struct ChatAccount: Sendable, Equatable, Codable {
    /// The Matrix ID, `@alice:chat.example`.
    public var userID: String

    public init(userID: String) {
        self.userID = userID
    }

    /// `alice` of `@alice:chat.example`.
    public var localpart: String {
        String(userID.dropFirst().prefix { $0 != ":" })
    }
}

/// What the upgrade's last step asks the homeserver to hold for the member.
public struct ChatAccountRequest: Sendable, Equatable {
    /// The member's SSO subject: the link the chat app's own sign-in through the identity provider finds.
    public var sub: String
    /// The chosen username, whose lower-case form is the account's localpart.
    public var username: String
    public var displayName: String
    /// Verified in the upgrade.
    public var phoneNumber: PhoneNumber
}

/// Why the homeserver will not give a member a name.
public enum ChatNameRefusal: String, Sendable, Equatable {
    /// Somebody has it (or had it: a deactivated account keeps its name).
    case taken
    /// The homeserver's own rules refuse it.
    case invalid
    /// The homeserver keeps it for something else (an application service's namespace).
    case reserved
}

/// What went wrong talking to the homeserver.
public enum ChatBackendError: Error, Sendable, Equatable, CustomStringConvertible {
    /// It did not answer, or answered with a server error: worth a retry.
    case unavailable(String)
    /// It refused what was asked (the admin token, a malformed request): a retry alone will not help.
    case refused(status: Int, errcode: String?, message: String?)
    /// The name belongs to an account that is not the member's.
    case nameTaken

    public var description: String {
        switch self {
        case .unavailable(let detail): "chat homeserver unavailable: \(detail)"
        case .refused(let status, let errcode, let message):
            "chat homeserver refused (HTTP \(status)\(errcode.map { " \($0)" } ?? "")): \(message ?? "no message")"
        case .nameTaken: "the name belongs to another chat account"
        }
    }
}

/// A failure shown to whoever waited for the homeserver (an operator's reset): nothing was changed.
extension ChatBackendError: PresentableError {
    public var status: HTTPResponse.Status {
        if case .unavailable = self { return .serviceUnavailable }
        return .badGateway
    }

    public var reason: String {
        switch self {
        case .unavailable: "chat_homeserver_unavailable"
        case .refused(let status, let errcode, _): "chat_homeserver_refused:\(errcode ?? "HTTP \(status)")"
        case .nameTaken: "chat_name_taken"
        }
    }

    public var messageKey: String { "error_chat_homeserver" }
}

/// The homeserver the upgrade makes members' chat accounts on (`chat.backend`). Every call is one the member (or an
/// operator) waits for; none is retried behind their back.
public protocol ChatBackend: Sendable {
    /// Why the homeserver would not give out `localpart`, or `nil` when it would.
    func refusal(ofName localpart: String) async throws(ChatBackendError) -> ChatNameRefusal?
    /// The live account the homeserver links to the member's SSO subject, if any.
    func account(linkedTo sub: String) async throws(ChatBackendError) -> ChatAccount?
    /// Makes the member's account, or completes the one an earlier attempt left (an account of that name linked to
    /// the member is theirs), or returns the account already linked to the member. `nil`: this backend makes none.
    /// Throws `nameTaken` when the name is somebody else's.
    func createAccount(_ request: ChatAccountRequest) async throws(ChatBackendError) -> ChatAccount?
    /// Changes what the member changed on the account page (`nil`: unchanged).
    func update(_ account: ChatAccount, displayName: String?, phoneNumber: PhoneNumber?) async throws(ChatBackendError)
    /// Ends the account, and frees the member's SSO subject for a later upgrade.
    func deactivate(_ account: ChatAccount) async throws(ChatBackendError)
    /// What stops the gateway from using the homeserver, each a sentence for `check-config`; empty when nothing does.
    func problems() async -> [String]
}

/// `chat.backend: none`: registrations live in the gateway's own store only (the provisioning webhook may take them
/// further).
public struct NoChatBackend: ChatBackend {
    public init() {}
    public func refusal(ofName localpart: String) async throws(ChatBackendError) -> ChatNameRefusal? { nil }
    public func account(linkedTo sub: String) async throws(ChatBackendError) -> ChatAccount? { nil }
    public func createAccount(_ request: ChatAccountRequest) async throws(ChatBackendError) -> ChatAccount? { nil }
    public func update(_ account: ChatAccount, displayName: String?, phoneNumber: PhoneNumber?) async throws(ChatBackendError) {}
    public func deactivate(_ account: ChatAccount) async throws(ChatBackendError) {}
    public func problems() async -> [String] { [] }
}
