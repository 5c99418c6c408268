import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird
import Logging

/// The account after the upgrade (`/account`, from the account menu): the display name and discoverability changed,
/// a new phone number verified with a code as in the upgrade. Every change is confirmed with the PIN chosen in the
/// upgrade (that is what it is for), reaches the chat homeserver first and is stored after. Wrong PINs are counted
/// as wrong codes are: `maximumWrongTries` within the rate window, after which no PIN is compared until it ends.
///
/// Apart from the upgrade (`RegistrationController`), whose code sending (with its limits), code checks and entries it
/// uses as the upgrade does.
struct AccountController: Sendable {
    typealias FieldError = UpgradeFieldError

    let upgrade: RegistrationController
    let flows: any RegistrationFlowStore
    let registrations: any RegistrationStore
    /// Where the member's chat account is changed first.
    let chat: any ChatBackend
    let pins: PINGuard
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration
    let now: @Sendable () -> Date

    init(upgrade: RegistrationController) {
        self.upgrade = upgrade
        (flows, registrations, chat, pins) = (upgrade.flows, upgrade.registrations, upgrade.chat, upgrade.pins)
        (renderer, configuration, now) = (upgrade.renderer, upgrade.configuration, upgrade.now)
    }

    var rules: VerificationRules { configuration.registration.rules }
    var strings: StringsTable { renderer.strings }

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.account)) { request, context in
            try await registered(context) { account in
                let saved = request.uri.queryParameters.get("saved").flatMap { ["profile", "phone"].contains($0) ? $0 : nil }
                return try accountPage(account, context, status: saved.map { strings["account_saved_\($0)"] })
            }
        }
        group.post(RouterPath(stringLiteral: Paths.accountProfile)) { request, context in try await changeProfile(request, context) }
        group.post(RouterPath(stringLiteral: Paths.accountPhone)) { request, context in try await startPhoneChange(request, context) }
        group.get(RouterPath(stringLiteral: Paths.accountPhoneCode)) { _, context in
            try await registered(context) { _ in
                guard let change = try await phoneChange(context) else { return upgrade.redirect(Paths.account) }
                return try phoneCodePage(change, context)
            }
        }
        group.post(RouterPath(stringLiteral: Paths.accountPhoneCode)) { request, context in try await confirmPhoneChange(request, context) }
        group.post(RouterPath(stringLiteral: Paths.accountPhoneCancel)) { request, context in
            _ = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
            try await flows.deleteFlow(sub: Self.phoneChangeKey(context.session.identity.sub))
            return upgrade.redirect(Paths.account)
        }
    }

    /// `body` with the member's registration; members who have none are sent to the upgrade.
    func registered(_ context: SignedInRequestContext, _ body: (RegisteredAccount) async throws -> Response) async throws -> Response {
        guard context.session.level == .registered, let account = try await registrations.account(sub: context.session.identity.sub) else {
            return upgrade.redirect(Paths.upgrade)
        }
        return try await body(account)
    }

    func accountPage(
        _ account: RegisteredAccount, _ context: SignedInRequestContext, errors: [FieldError] = [], status: String? = nil,
        displayName: String? = nil, discoverability: Discoverability? = nil, phone: String? = nil, httpStatus: HTTPResponse.Status? = nil
    ) throws -> Response {
        var values: [String: Any] = [
            "csrf": context.session.csrfToken, "username": account.username, "displayName": displayName ?? account.displayName ?? context.session.identity.displayName,
            "newPhone": phone ?? "", "hasPIN": account.discoverability != nil,
            "errors": errors.map { ["field": $0.field, "message": $0.message] }, "hasErrors": !errors.isEmpty,
        ]
        let chosen = discoverability ?? account.discoverability
        values["everybody"] = chosen == .everybody
        values["nobody"] = chosen == .nobody
        values["status"] = status
        values["chatUserID"] = account.chatUserID
        values["phone"] = account.phoneNumber?.display
        for error in errors { values["\(error.key)Error"] = error.message }
        return try renderer.page(
            "account", title: strings["account_title"], status: httpStatus ?? (errors.isEmpty ? .ok : .unprocessableContent), values)
    }

    /// The PIN's field error, or `nil` when it was right.
    func pinError(_ form: [String: String], account: RegisteredAccount, _ context: SignedInRequestContext) async throws -> FieldError? {
        let sub = context.session.identity.sub
        let pin = form["pin"] ?? ""
        guard !pin.isEmpty else { return FieldError("pin", strings["account_error_pin_missing"]) }
        switch try await pins.check(pin, sub: sub) {
        case .right: return nil
        case .noPIN: return FieldError("pin", strings["account_no_pin"])
        case .wrong(let remaining):
            context.logger.notice("wrong PIN on the account page", metadata: ["sub": .string(sub), "remaining": "\(remaining)"])
            return FieldError(
                "pin", remaining == 0 ? strings["account_error_pin_locked"] : strings.text("account_error_pin_wrong", ["remaining": "\(remaining)"]))
        case .locked: return FieldError("pin", strings["account_error_pin_locked"])
        }
    }

    func changeProfile(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        return try await registered(context) { account in
            let (name, discoverability, entryErrors) = upgrade.profileEntry(form)
            var errors = entryErrors
            if errors.isEmpty, let wrong = try await pinError(form, account: account, context) { errors.append(wrong) }
            guard errors.isEmpty, let discoverability else {
                return try accountPage(account, context, errors: errors, displayName: name, discoverability: discoverability)
            }
            if let userID = account.chatUserID, name != account.displayName {
                do {
                    try await chat.update(ChatAccount(userID: userID), displayName: name, phoneNumber: nil)
                } catch {
                    context.logger.error("chat account not changed", metadata: ["error": .string("\(error)")])
                    return try accountPage(
                        account, context, errors: [FieldError("save-profile", strings["error_chat_homeserver_text"])], displayName: name,
                        discoverability: discoverability, httpStatus: .serviceUnavailable)
                }
            }
            try await registrations.updateAccount(
                sub: context.session.identity.sub, displayName: name, discoverability: discoverability, phoneNumber: nil)
            return upgrade.redirect(FormEncoding.url(Paths.account, adding: [("saved", "profile")]))
        }
    }

    /// The new number and the PIN: then a code goes to the new number (with the upgrade's limits).
    func startPhoneChange(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        return try await registered(context) { account in
            let entered = (form["phone"] ?? "").trimmingCharacters(in: .whitespaces)
            let number: PhoneNumber
            switch PhoneNumber.parse(entered) {
            case .failure(let problem):
                return try accountPage(account, context, errors: [FieldError("new-phone", strings["upgrade_phone_error_\(problem.rawValue)"])], phone: entered)
            case .success(let parsed):
                number = parsed
            }
            if let wrong = try await pinError(form, account: account, context) {
                return try accountPage(account, context, errors: [wrong], phone: entered)
            }
            let sub = context.session.identity.sub
            var change = RegistrationFlow(sub: Self.phoneChangeKey(sub), returnTo: Paths.account, now: now())
            if let refusal = try await upgrade.sendCode(&change, to: number, context) {
                return try accountPage(account, context, errors: [FieldError("new-phone", refusal)], phone: entered)
            }
            return upgrade.redirect(Paths.accountPhoneCode)
        }
    }

    func confirmPhoneChange(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        return try await registered(context) { account in
            guard var change = try await phoneChange(context), let number = change.phoneNumber else { return upgrade.redirect(Paths.account) }
            let entered = form["code"] ?? ""
            let (now, key) = (now(), change.attemptsKey)
            let sub = context.session.identity.sub
            let result = try await change.verify(entered, now: now, rules: rules) { _ in
                try await flows.claimCodeAttempt(flowKey: key, sub: sub, maximum: rules.maximumWrongTries, at: now)
            }
            switch result {
            case .accepted:
                if let userID = account.chatUserID {
                    do {
                        try await chat.update(ChatAccount(userID: userID), displayName: nil, phoneNumber: number)
                    } catch {
                        context.logger.error("chat account's number not changed", metadata: ["error": .string("\(error)")])
                        return try phoneCodePage(
                            change, context, errors: [FieldError("code", strings["error_chat_homeserver_text"])], status: .serviceUnavailable)
                    }
                }
                try await registrations.updateAccount(sub: sub, displayName: nil, discoverability: nil, phoneNumber: number)
                try await flows.deleteFlow(sub: change.sub)
                return upgrade.redirect(FormEncoding.url(Paths.account, adding: [("saved", "phone")]))
            case .burned:
                try await flows.deleteFlow(sub: change.sub)
                return try accountPage(account, context, errors: [FieldError("new-phone", strings["account_error_code_burned"])])
            case .wrong, .expired, .malformed:
                return try phoneCodePage(change, context, entered: entered, errors: [FieldError("code", upgrade.codeError(result))])
            }
        }
    }

    /// A phone number change in progress is kept as a flow of its own, beside (never instead of) an upgrade's.
    static func phoneChangeKey(_ sub: String) -> String { "account-phone:" + sub }

    func phoneChange(_ context: SignedInRequestContext) async throws -> RegistrationFlow? {
        guard let change = try await flows.flow(sub: Self.phoneChangeKey(context.session.identity.sub)), !change.isStale(now: now()),
            change.step == .code
        else { return nil }
        return change
    }

    func phoneCodePage(
        _ change: RegistrationFlow, _ context: SignedInRequestContext, entered: String = "", errors: [FieldError] = [],
        status: HTTPResponse.Status? = nil
    ) throws -> Response {
        var values = upgrade.expiry(of: change.code)
        values.merge([
            "csrf": context.session.csrfToken, "code": entered,
            "intro": strings.text("upgrade_code_intro", ["phone": change.phoneNumber?.displayInText ?? ""]),
            "errors": errors.map { ["field": $0.field, "message": $0.message] }, "hasErrors": !errors.isEmpty,
        ]) { $1 }
        for error in errors { values["\(error.key)Error"] = error.message }
        return try renderer.page(
            "account-phone-code", title: strings["account_code_title"], status: status ?? (errors.isEmpty ? .ok : .unprocessableContent), values)
    }
}
