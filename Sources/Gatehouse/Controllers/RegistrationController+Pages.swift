import Foundation
import GatehouseCore
import Hummingbird
import Logging

/// The step pages, with their inline messages.
extension RegistrationController {
    typealias FieldError = UpgradeFieldError

    func page(
        _ step: RegistrationStep, _ flow: RegistrationFlow, _ context: SignedInRequestContext, errors: [FieldError] = [],
        _ values: [String: Any] = [:], status: HTTPResponse.Status? = nil
    ) throws -> Response {
        var values = values
        values["csrf"] = context.session.csrfToken
        values["progress"] = strings.text("upgrade_progress", ["step": "\(step.number)", "total": "\(RegistrationStep.allCases.count)"])
        values["heading"] = strings["upgrade_\(step.rawValue)_heading"]
        values["errors"] = errors.map { ["field": $0.field, "message": $0.message] }
        values["hasErrors"] = !errors.isEmpty
        for error in errors { values["\(error.key)Error"] = error.message }
        // A step shown again with its problems answers a form: in the history it stands as the step's own address.
        if !errors.isEmpty { values["formPage"] = Paths.upgrade(step) }
        let title = strings["upgrade_\(step.rawValue)_heading"] + " · " + strings["upgrade_title"]
        return try renderer.page(
            "upgrade-\(step.rawValue)", title: title, status: status ?? (errors.isEmpty ? .ok : .unprocessableContent), values)
    }

    func phonePage(
        _ flow: RegistrationFlow, _ context: SignedInRequestContext, entered: String? = nil, error: String? = nil, status: String? = nil
    ) throws -> Response {
        // A number is shown grouped as every other page shows it (the claim too, when it is one).
        let claim = context.session.identity.phoneNumber.map { claim in (try? PhoneNumber.parse(claim).get())?.display ?? claim }
        let shown = entered ?? flow.phoneNumber?.display ?? claim ?? ""
        var values: [String: Any] = ["phone": shown, "fromSSO": claim != nil && shown == claim]
        values["status"] = status
        return try page(.phone, flow, context, errors: error.map { [FieldError("phone", $0)] } ?? [], values)
    }

    func codePage(
        _ flow: RegistrationFlow, _ context: SignedInRequestContext, entered: String = "", errors: [FieldError] = [], status: String? = nil
    ) throws -> Response {
        let resendAt = flow.code?.resendAvailableAt(rules: rules) ?? now()
        let wait = Int(resendAt.timeIntervalSince(now()).rounded(.up))
        var values: [String: Any] = expiry(of: flow.code)
        values.merge([
            "intro": strings.text("upgrade_code_intro", ["phone": flow.phoneNumber?.displayInText ?? ""]), "code": entered,
            "resendAt": Int(resendAt.timeIntervalSince1970.rounded(.up)),
            "resendText": wait > 0 ? strings.text("upgrade_code_resend_wait", ["seconds": "\(wait)"]) : strings["upgrade_code_resend_ready"],
        ]) { $1 }
        values["status"] = status
        return try page(.code, flow, context, errors: errors, values)
    }

    /// How long `code` still works: the time for the page's script to count down, and the text it shows without it.
    func expiry(of code: PendingCode?) -> [String: Any] {
        let expiresAt = code?.expiresAt ?? now()
        let left = max(0, Int(expiresAt.timeIntervalSince(now()).rounded(.down)))
        return [
            "expiresAt": Int(expiresAt.timeIntervalSince1970),
            "expiryText": left > 0
                ? strings.text("upgrade_code_expires_in", ["time": String(format: "%d:%02d", left / 60, left % 60)]) : strings["upgrade_code_expired"],
        ]
    }

    func profilePage(
        _ flow: RegistrationFlow, _ context: SignedInRequestContext, displayName: String, discoverability: Discoverability?, errors: [FieldError] = [],
        status: HTTPResponse.Status? = nil, notice: String? = nil
    ) throws -> Response {
        let fromSSO = context.session.identity.name != nil && displayName == context.session.identity.name
        let nameError = errors.contains { $0.field == "display-name" }
        let describedBy = [fromSSO ? "name-from-sso" : nil, nameError ? "display-name-error" : nil].compactMap { $0 }.joined(separator: " ")
        var values: [String: Any] = [
            "displayName": displayName, "nameFromSSO": fromSSO, "describedBy": describedBy,
            "everybody": discoverability == .everybody, "nobody": discoverability == .nobody,
        ]
        values["status"] = notice
        return try page(.profile, flow, context, errors: errors, values, status: status)
    }

    func developmentInbox(_ inbox: DevelopmentInbox, _ context: SignedInRequestContext) throws -> Response {
        let messages = inbox.messages(for: context.session.identity.sub).map { ["to": $0.phoneNumber.display, "code": $0.code, "text": $0.text] }
        return try renderer.page("dev-inbox", title: strings["dev_inbox_title"], ["messages": messages, "hasMessages": !messages.isEmpty])
    }

    func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}
