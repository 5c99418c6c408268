import Foundation
import Hummingbird
import Logging

/// The upgrade flow's pages (SPEC §5): one page per step, each validated on the server with inline messages, each
/// working without JavaScript. The flow lives in `RegistrationFlowStore` per SSO subject; the registration is written
/// in one statement at the end.
public struct RegistrationController: Sendable {
    let flows: any RegistrationFlowStore
    let registrations: any RegistrationStore
    let sender: any CodeSender
    let hasher: PINHasher
    let events: EventRecorder
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration
    /// Development mode only.
    let inbox: DevelopmentInbox?
    let metrics: GatewayMetrics
    let limiter: RateLimiter
    let now: @Sendable () -> Date

    public init(
        flows: any RegistrationFlowStore, registrations: any RegistrationStore, sender: any CodeSender, hasher: PINHasher, events: EventRecorder,
        renderer: PageRenderer, configuration: GatehouseConfiguration, inbox: DevelopmentInbox?, metrics: GatewayMetrics, limiter: RateLimiter,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.flows = flows
        self.registrations = registrations
        self.sender = sender
        self.hasher = hasher
        self.events = events
        self.renderer = renderer
        self.configuration = configuration
        self.inbox = inbox
        self.metrics = metrics
        self.limiter = limiter
        self.now = now
    }

    var rules: VerificationRules { configuration.registration.rules }
    var strings: StringsTable { renderer.strings }

    /// Where the entry may say the member came from (the `detail` of `registration_started`).
    static let origins: Set = ["banner", "chats", "calls", "stories", "portal", "app"]
    /// The web apps, with the failure toast naming what failed (`PortalController.registrationFailures`).
    static func failureLocation(reason: String) -> String {
        let named = reason.hasPrefix("level_") ? "account_changed" : reason
        return FormEncoding.url(Paths.portal, adding: [("toast", "registration_failed"), ("reason", named)])
    }

    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.upgrade)) { request, context in try await enter(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgrade(.phone))) { request, context in
            try await step(.phone, context) { flow in try phonePage(flow, context) }
        }
        group.post(RouterPath(stringLiteral: Paths.upgrade(.phone))) { request, context in try await submitPhone(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgrade(.code))) { request, context in
            try await step(.code, context) { flow in
                try codePage(flow, context, status: request.uri.queryParameters.get("resent") == "1" ? strings["upgrade_code_resent"] : nil)
            }
        }
        group.post(RouterPath(stringLiteral: Paths.upgrade(.code))) { request, context in try await submitCode(request, context) }
        group.post(RouterPath(stringLiteral: Paths.upgradeResend)) { request, context in try await resend(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgrade(.username))) { request, context in
            try await step(.username, context) { flow in
                let taken = request.uri.queryParameters.get("taken") == "1"
                return try page(
                    .username, flow, context, errors: taken ? [FieldError("username", strings["upgrade_username_error_taken"])] : [],
                    ["username": flow.username ?? ""])
            }
        }
        group.post(RouterPath(stringLiteral: Paths.upgrade(.username))) { request, context in try await submitUsername(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgradeUsernameCheck)) { request, context in
            try await checkUsername(request.uri.queryParameters.get("username") ?? "", context)
        }
        group.get(RouterPath(stringLiteral: Paths.upgrade(.pin))) { _, context in
            try await step(.pin, context) { flow in try page(.pin, flow, context) }
        }
        group.post(RouterPath(stringLiteral: Paths.upgrade(.pin))) { request, context in try await submitPIN(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgrade(.profile))) { _, context in
            try await step(.profile, context) { flow in
                try profilePage(flow, context, displayName: context.session.identity.name ?? "", discoverability: nil)
            }
        }
        group.post(RouterPath(stringLiteral: Paths.upgrade(.profile))) { request, context in try await submitProfile(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgradeDone)) { request, context in try await done(request, context) }
        group.post(RouterPath(stringLiteral: Paths.upgradeCancel)) { request, context in try await cancel(request, context) }
        if let inbox {
            group.get(RouterPath(stringLiteral: Paths.developmentInbox)) { _, context in try developmentInbox(inbox, context) }
        }
    }

    // MARK: - Entry, resume, cancel, failure

    /// `/upgrade`: starts a flow, or resumes the member's flow at its step when it is younger than 30 minutes.
    func enter(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let session = context.session
        let origin = query.get("from").flatMap { Self.origins.contains($0) ? $0 : nil } ?? "link"
        if origin == "banner" { events.record(.upgradeBannerTapped, sub: session.identity.sub) }
        let returnTo = query.get("return_to").flatMap(ReturnTarget.init)?.path ?? Paths.chats
        if session.level == .registered { return redirect(returnTo) }

        let now = now()
        if let flow = try await flows.flow(sub: session.identity.sub) {
            if !flow.isStale(now: now) {
                events.record(.registrationResumed, sub: session.identity.sub, detail: flow.step.rawValue)
                return redirect(Paths.upgrade(flow.step))
            }
            try await flows.deleteFlow(sub: session.identity.sub)
        }
        try await flows.save(RegistrationFlow(sub: session.identity.sub, returnTo: returnTo, now: now))
        events.record(.registrationStarted, sub: session.identity.sub, detail: origin)
        return redirect(Paths.upgrade(.phone))
    }

    func cancel(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        _ = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        try await flows.deleteFlow(sub: context.session.identity.sub)
        context.logger.info("registration cancelled", metadata: ["sub": .string(context.session.identity.sub)])
        return redirect(Paths.portal)
    }

    /// The flow cannot go on: it is dropped (the member stays at `sso`) and the web apps show the failure toast.
    func fail(_ sub: String, reason: String, _ context: SignedInRequestContext) async -> Response {
        do {
            // Parallel requests may all find the flow failed; only the one that ended it records the failure.
            if try await flows.deleteFlow(sub: sub) { events.record(.registrationFailed, sub: sub, detail: reason) }
        } catch {
            context.logger.error("failed flow not deleted", metadata: ["error": .string("\(error)")])
        }
        return redirect(Self.failureLocation(reason: reason))
    }

    /// Runs `body` with the member's live flow when it is at `requested`; otherwise sends the member where they belong.
    func step(
        _ requested: RegistrationStep, _ context: SignedInRequestContext, _ body: (RegistrationFlow) async throws -> Response
    ) async throws -> Response {
        if context.session.level == .registered { return redirect(Paths.chats) }
        guard let flow = try await flows.flow(sub: context.session.identity.sub), !flow.isStale(now: now()) else {
            // No flow, or one older than the resume window: the entry starts over.
            return redirect(Paths.upgrade)
        }
        guard flow.allows(requested) else { return redirect(Paths.upgrade(flow.step)) }
        return try await body(flow)
    }

    /// The same for a form: read (origin and CSRF checked) before anything else.
    func submit(
        _ requested: RegistrationStep, _ request: Request, _ context: SignedInRequestContext,
        _ body: (RegistrationFlow, [String: String]) async throws -> Response
    ) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        do {
            return try await step(requested, context) { flow in try await body(flow, form) }
        } catch let wrong as WrongStep {
            // Another tab moved the flow on between reading and writing: show the step it is at now.
            return redirect(Paths.upgrade(wrong.current))
        }
    }

    // MARK: - Phone number and code

    func submitPhone(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.phone, request, context) { flow, form in
            let entered = form["phone"] ?? ""
            switch PhoneNumber.parse(entered) {
            case .failure(let problem):
                return try phonePage(flow, context, entered: entered, error: strings["upgrade_phone_error_\(problem.rawValue)"])
            case .success(let number):
                var flow = flow
                if let refusal = try await sendCode(&flow, to: number, context) {
                    return try phonePage(flow, context, entered: entered, error: refusal)
                }
                return redirect(Paths.upgrade(.code))
            }
        }
    }

    func resend(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.code, request, context) { flow, _ in
            guard let number = flow.phoneNumber else { return redirect(Paths.upgrade(.phone)) }
            var flow = flow
            if let refusal = try await sendCode(&flow, to: number, context) {
                return try codePage(flow, context, errors: [FieldError("resend-code", refusal)])
            }
            return redirect(FormEncoding.url(Paths.upgrade(.code), adding: [("resent", "1")]))
        }
    }

    /// Issues, sends and records a new code, or says why not (resend window, rate limits, the sender failing).
    func sendCode(_ flow: inout RegistrationFlow, to number: PhoneNumber, _ context: SignedInRequestContext) async throws -> String? {
        let now = now()
        let sub = context.session.identity.sub
        if flow.step == .code, let pending = flow.code, now < pending.resendAvailableAt(rules: rules) {
            let seconds = Int(pending.resendAvailableAt(rules: rules).timeIntervalSince(now).rounded(.up))
            return strings.text("upgrade_phone_error_wait", ["seconds": "\(seconds)"])
        }
        let reservation = try await flows.reserveCodeSend(
            sub: sub, phoneNumber: number, at: now, since: now.addingTimeInterval(-rules.rateWindow), perMember: rules.codesPerMember,
            perPhoneNumber: rules.codesPerPhoneNumber)
        let sendID: Int
        switch reservation {
        case .success(let id):
            sendID = id
        case .failure(.memberLimit):
            metrics.codeRateLimited(limit: "member")
            context.logger.notice("code refused: member limit", metadata: ["sub": .string(sub)])
            return strings["upgrade_phone_error_member_limit"]
        case .failure(.phoneNumberLimit):
            metrics.codeRateLimited(limit: "phone_number")
            context.logger.notice("code refused: phone number limit", metadata: ["sub": .string(sub)])
            return strings["upgrade_phone_error_number_limit"]
        }
        let (code, pending) = PendingCode.issue(now: now, rules: rules)
        let message = VerificationMessage(
            sub: sub, phoneNumber: number, code: code, text: strings.text("code_message", ["code": code]), expiresAt: pending.expiresAt)
        do {
            try await sender.send(message)
        } catch {
            metrics.counter("gatehouse_verification_code_send_failures_total").increment()
            context.logger.error("verification code not sent", metadata: ["sub": .string(sub), "error": .string("\(error)")])
            try await flows.releaseCodeSend(id: sendID)
            return strings["upgrade_phone_error_send_failed"]
        }
        metrics.counter("gatehouse_verification_codes_sent_total").increment()
        try flow.codeSent(to: number, code: pending, now: now)
        try await flows.save(flow)
        return nil
    }

    func submitCode(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.code, request, context) { flow, form in
            var flow = flow
            let entered = form["code"] ?? ""
            let (now, sub) = (now(), flow.sub)
            let result = try await flow.verify(entered, now: now, rules: rules) { pending in
                try await flows.claimCodeAttempt(codeID: pending.id, sub: sub, maximum: rules.maximumWrongTries, at: now)
            }
            let error: String
            switch result {
            case .accepted:
                try await flows.save(flow)
                return redirect(Paths.upgrade(.username))
            case .burned:
                return await fail(flow.sub, reason: "code_attempts_exhausted", context)
            case .wrong(let remaining):
                error =
                    remaining == 1 ? strings["upgrade_code_error_wrong_one"] : strings.text("upgrade_code_error_wrong", ["remaining": "\(remaining)"])
            case .expired:
                error = strings["upgrade_code_error_expired"]
            case .malformed:
                error = strings["upgrade_code_error_malformed"]
            }
            // Nothing to write back: the try was counted in the store, and the flow itself did not change.
            return try codePage(flow, context, entered: entered, errors: [FieldError("code", error)])
        }
    }

    // MARK: - Username, PIN, profile

    func submitUsername(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.username, request, context) { flow, form in
            let name = (form["username"] ?? "").trimmingCharacters(in: .whitespaces)
            let problem: UsernameRules.Problem?
            do {
                problem = try await usernameProblem(name, context)
            } catch let limited as RateLimited {
                // The step again with the name as typed and the wait beside it, not a page that loses the form.
                return limited.answering(
                    try page(
                        .username, flow, context,
                        errors: [FieldError("username", strings.text("error_rate_limited_text", limited.messageArguments))], ["username": name]))
            }
            if let problem {
                return try page(
                    .username, flow, context, errors: [FieldError("username", strings["upgrade_username_error_\(problem.rawValue)"])],
                    ["username": name])
            }
            var flow = flow
            try flow.chooseUsername(name, now: now())
            try await flows.save(flow)
            return redirect(Paths.upgrade(.pin))
        }
    }

    /// Why `name` cannot be had, if it cannot. Asking whether a name is taken counts against the member's
    /// username-check limit (it would otherwise list the members' usernames); the rules alone do not.
    func usernameProblem(_ name: String, _ context: SignedInRequestContext) async throws -> UsernameRules.Problem? {
        if let problem = UsernameRules.problem(with: name, productName: configuration.brand.chatProductName) { return problem }
        try await limiter.admit(.usernameCheck, key: context.session.identity.sub)
        return try await registrations.isUsernameTaken(name) ? .taken : nil
    }

    /// `/upgrade/username/check?username=…`: what the username field shows while the member types.
    func checkUsername(_ name: String, _ context: SignedInRequestContext) async throws -> Response {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        let problem = try await usernameProblem(trimmed, context)
        var answer: [String: Any] = [
            "username": trimmed, "available": problem == nil,
            "message": problem.map { strings["upgrade_username_error_\($0.rawValue)"] }
                ?? strings.text("upgrade_username_available", ["username": trimmed]),
        ]
        if let problem { answer["reason"] = problem.rawValue }
        return try JSONResponse.make(answer)
    }

    func submitPIN(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.pin, request, context) { flow, form in
            let pin = form["pin"] ?? ""
            if let problem = PINRules.problem(pin: pin, confirmation: form["pin_confirmation"] ?? "") {
                // The PIN is never sent back to the browser, so both fields start empty again.
                let field = problem == .mismatch ? "pin-confirmation" : "pin"
                return try page(
                    .pin, flow, context, errors: [FieldError(field, strings["upgrade_pin_error_\(problem.rawValue)"])],
                    ["status": strings["upgrade_pin_reentry"]])
            }
            var flow = flow
            try flow.setPIN(hash: try await hasher.hash(pin), now: now())
            try await flows.save(flow)
            return redirect(Paths.upgrade(.profile))
        }
    }

    static let displayNameLimit = 64

    func submitProfile(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.profile, request, context) { flow, form in
            let name = (form["display_name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            let discoverability = form["discoverability"].flatMap(Discoverability.init(rawValue:))
            var errors: [FieldError] = []
            if name.isEmpty {
                errors.append(FieldError("display-name", strings["upgrade_profile_error_name_empty"]))
            } else if name.count > Self.displayNameLimit {
                errors.append(FieldError("display-name", strings["upgrade_profile_error_name_long"]))
            } else if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                errors.append(FieldError("display-name", strings["upgrade_profile_error_name_invalid"]))
            }
            if discoverability == nil {
                errors.append(FieldError("discoverable-everybody", strings["upgrade_profile_error_discoverability"], key: "discoverability"))
            }
            guard errors.isEmpty, let discoverability else {
                return try profilePage(flow, context, displayName: name, discoverability: discoverability, errors: errors)
            }
            return try await complete(flow, displayName: name, discoverability: discoverability, context)
        }
    }

    /// The end: the level transition is checked, then the registration, the sessions' level and the end of the flow
    /// are written in one statement.
    func complete(_ flow: RegistrationFlow, displayName: String, discoverability: Discoverability, _ context: SignedInRequestContext) async throws
        -> Response
    {
        let session = context.session
        guard events.transition(.upgradeCompleted, from: session.level, sub: session.identity.sub) != nil else {
            return await fail(flow.sub, reason: "level_\(session.level.rawValue)", context)
        }
        let registration = try flow.registration(displayName: displayName, discoverability: discoverability, now: now())
        let outcome: RegisterOutcome
        do {
            outcome = try await registrations.register(registration)
        } catch {
            context.logger.error("registration not stored", metadata: ["error": .string("\(error)")])
            return await fail(flow.sub, reason: "storage", context)
        }
        switch outcome {
        case .registered:
            events.record(.registrationCompleted, sub: flow.sub)
        case .alreadyRegistered:
            try await flows.deleteFlow(sub: flow.sub)
        case .usernameTaken:
            var flow = flow
            flow.usernameTaken(now: now())
            try await flows.save(flow)
            return redirect(FormEncoding.url(Paths.upgrade(.username), adding: [("taken", "1")]))
        }
        return redirect(FormEncoding.url(Paths.upgradeDone, adding: [("next", flow.returnTo)]))
    }

    func done(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        guard context.session.level == .registered else { return redirect(Paths.upgrade) }
        let next = request.uri.queryParameters.get("next").flatMap(ReturnTarget.init)?.path ?? Paths.chats
        let username = try await registrations.username(sub: context.session.identity.sub)
        return try renderer.page(
            "upgrade-done", title: strings["upgrade_done_heading"],
            [
                "heading": strings["upgrade_done_heading"], "next": next,
                "text": username.map { strings.text("upgrade_done_text", ["username": $0]) } ?? strings["feature_unlocked_note"],
            ])
    }

    // MARK: - Pages

    /// An inline message for one field; `key` names the template's `<key>Error` value when it differs from the id.
    struct FieldError {
        let field: String
        let message: String
        let key: String

        init(_ field: String, _ message: String, key: String? = nil) {
            self.field = field
            self.message = message
            self.key = key ?? Self.camelCase(field)
        }

        static func camelCase(_ id: String) -> String {
            let parts = id.split(separator: "-")
            return parts.enumerated().map { $0 == 0 ? String($1) : $1.prefix(1).uppercased() + $1.dropFirst() }.joined()
        }
    }

    func page(
        _ step: RegistrationStep, _ flow: RegistrationFlow, _ context: SignedInRequestContext, errors: [FieldError] = [],
        _ values: [String: Any] = [:]
    ) throws -> Response {
        var values = values
        values["csrf"] = context.session.csrfToken
        values["progress"] = strings.text("upgrade_progress", ["step": "\(step.number)", "total": "\(RegistrationStep.allCases.count)"])
        values["heading"] = strings["upgrade_\(step.rawValue)_heading"]
        values["errors"] = errors.map { ["field": $0.field, "message": $0.message] }
        values["hasErrors"] = !errors.isEmpty
        for error in errors { values["\(error.key)Error"] = error.message }
        let title = strings["upgrade_\(step.rawValue)_heading"] + " · " + strings["upgrade_title"]
        return try renderer.page(
            "upgrade-\(step.rawValue)", title: title, status: errors.isEmpty ? .ok : .unprocessableContent, values)
    }

    func phonePage(_ flow: RegistrationFlow, _ context: SignedInRequestContext, entered: String? = nil, error: String? = nil) throws -> Response {
        let claim = context.session.identity.phoneNumber
        let shown = entered ?? flow.phoneNumber?.e164 ?? claim ?? ""
        return try page(
            .phone, flow, context, errors: error.map { [FieldError("phone", $0)] } ?? [],
            ["phone": shown, "fromSSO": claim != nil && shown == claim])
    }

    func codePage(
        _ flow: RegistrationFlow, _ context: SignedInRequestContext, entered: String = "", errors: [FieldError] = [], status: String? = nil
    ) throws -> Response {
        let resendAt = flow.code?.resendAvailableAt(rules: rules) ?? now()
        let wait = Int(resendAt.timeIntervalSince(now()).rounded(.up))
        var values: [String: Any] = [
            "intro": strings.text("upgrade_code_intro", ["phone": flow.phoneNumber?.e164 ?? ""]), "code": entered,
            "resendAt": Int(resendAt.timeIntervalSince1970.rounded(.up)),
            "resendText": wait > 0 ? strings.text("upgrade_code_resend_wait", ["seconds": "\(wait)"]) : strings["upgrade_code_resend_ready"],
        ]
        values["status"] = status
        return try page(.code, flow, context, errors: errors, values)
    }

    func profilePage(
        _ flow: RegistrationFlow, _ context: SignedInRequestContext, displayName: String, discoverability: Discoverability?, errors: [FieldError] = []
    ) throws -> Response {
        let fromSSO = context.session.identity.name != nil && displayName == context.session.identity.name
        let nameError = errors.contains { $0.field == "display-name" }
        let describedBy = [fromSSO ? "name-from-sso" : nil, nameError ? "display-name-error" : nil].compactMap { $0 }.joined(separator: " ")
        return try page(
            .profile, flow, context, errors: errors,
            [
                "displayName": displayName, "nameFromSSO": fromSSO, "describedBy": describedBy,
                "everybody": discoverability == .everybody, "nobody": discoverability == .nobody,
            ])
    }

    func developmentInbox(_ inbox: DevelopmentInbox, _ context: SignedInRequestContext) throws -> Response {
        let messages = inbox.messages(for: context.session.identity.sub).map { ["to": $0.phoneNumber.e164, "code": $0.code, "text": $0.text] }
        return try renderer.page("dev-inbox", title: strings["dev_inbox_title"], ["messages": messages, "hasMessages": !messages.isEmpty])
    }

    func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}
