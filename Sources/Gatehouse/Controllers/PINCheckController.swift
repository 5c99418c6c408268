import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird

/// `/signin/pin`: a registered member enters their upgrade PIN for a path that asks for it
/// (`require.pin_age_seconds`). The PIN is compared once (bcrypt, with the tries budget of codes), and the session
/// remembers when; the rule then compares that time with its own, on every request, without hashing anything.
struct PINCheckController: Sendable {
    let pins: PINGuard
    let sessions: any SessionStore
    let events: EventRecorder
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration
    let returns: SignInReturns

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.pinCheck)) { request, context in
            let returnTo = returns.accept(request.uri.queryParameters.get("return_to")) ?? Paths.portal
            // Without a PIN there is nothing to enter: the rule asks such members for a sign-in instead.
            guard context.session.level == .registered else { return redirect(returnTo) }
            return try page(context, returnTo: returnTo)
        }
        group.post(RouterPath(stringLiteral: Paths.pinCheck)) { request, context in try await check(request, context) }
    }

    func check(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        let returnTo = returns.accept(form["return_to"]) ?? Paths.portal
        let pin = form["pin"] ?? ""
        let sub = context.session.identity.sub
        guard !pin.isEmpty else { return try page(context, returnTo: returnTo, error: renderer.strings["account_error_pin_missing"]) }
        let strings = renderer.strings
        switch try await pins.check(pin, sub: sub) {
        case .right:
            var assurance = context.session.assurance ?? Assurance()
            assurance.pinVerifiedAt = pins.now()
            try await sessions.setAssurance(assurance, sessionID: context.session.id)
            events.record(.stepUp, sub: sub, detail: "pin")
            return redirect(returnTo)
        case .wrong(let remaining):
            events.record(.stepUp, sub: sub, detail: "pin_wrong")
            context.logger.notice("wrong PIN for a step-up", metadata: ["sub": .string(sub), "remaining": "\(remaining)"])
            let message = remaining == 0 ? strings["account_error_pin_locked"] : strings.text("account_error_pin_wrong", ["remaining": "\(remaining)"])
            return try page(context, returnTo: returnTo, error: message)
        case .locked: return try page(context, returnTo: returnTo, error: strings["account_error_pin_locked"], status: .tooManyRequests)
        case .noPIN: return try page(context, returnTo: returnTo, error: strings["account_no_pin"])
        }
    }

    func page(
        _ context: SignedInRequestContext, returnTo: String, error: String? = nil, status: HTTPResponse.Status? = nil
    ) throws -> Response {
        var values: [String: Any] = ["csrf": context.session.csrfToken, "returnTo": returnTo, "action": Paths.pinCheck]
        if let error {
            values["pinError"] = error
            values["hasErrors"] = true
            values["errors"] = [["field": "pin", "message": error]]
        }
        var response = try renderer.page(
            "pin-check", title: renderer.strings["pin_check_title"], status: status ?? (error == nil ? .ok : .unprocessableContent), values)
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}
