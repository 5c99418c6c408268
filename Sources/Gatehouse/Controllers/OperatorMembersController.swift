import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird
import Logging

/// The console's members (`/operator/members`, members with `operator.role`): a registered member found by subject,
/// username or Matrix ID, and their upgrade reset for a member who lost their phone or left the organization. The
/// reset ends the chat account on the homeserver or keeps it (the operator's choice), removes the registration and
/// lowers the member's sessions to `sso`; the event `registration_reset` and a log line name the operator.
struct OperatorMembersController: Sendable {
    let registrations: any RegistrationStore
    let chat: any ChatBackend
    let events: EventRecorder
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration

    /// What the operator chose for the member's chat account.
    enum ChatAccountChoice: String {
        case deactivate
        case keep
    }

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.operatorMembers), use: members)
        group.post(RouterPath(stringLiteral: Paths.operatorMembersReset), use: reset)
    }

    /// `?q=` looks the member up; `?reset=` says what the last reset did. JSON for API callers.
    func members(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let text = (query.get("q") ?? "").trimmingCharacters(in: .whitespaces)
        let found = text.isEmpty ? nil : try await registrations.lookup(String(text.prefix(300)))
        if ErrorAnswer.wantsJSON(accept: request.headers[.accept]) {
            guard !text.isEmpty else { throw RequestError.badRequest("q: a subject, username or Matrix ID is required") }
            guard let found else { throw RequestError.notFound }
            return try JSONResponse.make(Self.json(found))
        }
        let strings = renderer.strings
        var values: [String: Any] = [
            "csrf": context.session.csrfToken, "query": text, "searched": !text.isEmpty,
            "nav": OperatorNavigation.items(current: .members, strings: strings),
        ]
        if let found {
            var member: [String: Any] = ["sub": found.sub, "username": found.username, "registeredAt": found.registeredAt.formatted(.iso8601)]
            member["chatUserID"] = found.chatUserID
            values["member"] = member
        } else if !text.isEmpty {
            values["notFound"] = strings.text("operator_members_not_found", ["query": text])
        }
        if let done = query.get("reset").flatMap(ChatAccountChoice.init(rawValue:)), let who = query.get("member") {
            values["status"] = strings.text("operator_members_reset_\(done.rawValue)", ["member": who])
        }
        return try renderer.page("operator-members", title: strings["operator_members_title"], values)
    }

    static func json(_ member: MemberRegistration) -> [String: Any] {
        ["sub": member.sub, "username": member.username, "chat_user_id": member.chatUserID as Any, "registered_at": member.registeredAt.formatted(.iso8601)]
    }

    func reset(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        guard let sub = form["sub"], !sub.isEmpty, let choice = form["chat_account"].flatMap(ChatAccountChoice.init(rawValue:)) else {
            throw RequestError.badRequest("sub and chat_account (deactivate or keep) are required")
        }
        guard let member = try await registrations.lookup(sub), member.sub == sub else { throw RequestError.notFound }
        let operatorSub = context.session.identity.sub
        if choice == .deactivate, let userID = member.chatUserID {
            do {
                try await chat.deactivate(ChatAccount(userID: userID))
            } catch {
                // Nothing is reset: the member keeps their registration until the homeserver has ended the account.
                context.logger.error("chat account not deactivated", metadata: ["error": .string("\(error)"), "sub": .string(sub)])
                throw error
            }
        }
        _ = try await registrations.unregister(sub: sub)
        _ = events.transition(.upgradeReset, from: .registered, sub: sub)
        events.record(.registrationReset, sub: sub, detail: "\(choice == .deactivate ? "deactivated" : "kept") by \(operatorSub)")
        context.logger.notice(
            "upgrade reset by an operator",
            metadata: [
                "sub": .string(sub), "operator": .string(operatorSub), "chat_account": .string(choice.rawValue),
                "chat_user_id": .string(member.chatUserID ?? "-"),
            ])
        let location = FormEncoding.url(Paths.operatorMembers, adding: [("reset", choice.rawValue), ("member", member.username)])
        return Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}
