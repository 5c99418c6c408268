import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird
import Logging

/// Steps 3 to 5 and the end: username, PIN, profile, and the registration written in one statement.
extension RegistrationController {
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
            // Held for the member until the flow ends: nobody else can take it while they choose a PIN.
            guard try await claim(name, context) else {
                return try page(
                    .username, flow, context, errors: [FieldError("username", strings["upgrade_username_error_taken"])], ["username": name])
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
        let sub = context.session.identity.sub
        try await limiter.admit(.usernameCheck, key: sub)
        if try await registrations.isUsernameTaken(name, for: sub, claimsSince: claimsSince) { return .taken }
        do {
            switch try await chat.refusal(ofName: name) {
            case nil: return nil
            case .taken: return .taken
            case .reserved: return .reserved
            case .invalid: return .refusedByChatService
            }
        } catch {
            context.logger.warning("chat homeserver not asked about a username", metadata: ["error": .string("\(error)")])
            return .chatServiceUnavailable
        }
    }

    /// Claims made before this are stale: their flows have restarted.
    var claimsSince: Date { now().addingTimeInterval(-RegistrationFlow.resumeWindow) }

    func claim(_ name: String, _ context: SignedInRequestContext) async throws -> Bool {
        try await registrations.claimUsername(name, for: context.session.identity.sub, at: now(), claimsSince: claimsSince)
    }

    /// `/upgrade/username/check?username=…`: what the username field shows while the member types.
    /// The page's script sends the page's CSRF token (`GatewayPageIsolation`): a token that is not the
    /// session's is refused.
    func checkUsername(_ name: String, _ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try GatewayPageIsolation.checkPageToken(request, session: context.session)
        guard isOffered(context) else { throw RequestError.forbidden("the upgrade is not offered to this member") }
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

    /// What is wrong with a display name (trimmed), in the member's words; `nil` when nothing is.
    func displayNameProblem(_ name: String) -> String? {
        if name.isEmpty { return strings["upgrade_profile_error_name_empty"] }
        if name.count > Self.displayNameLimit { return strings["upgrade_profile_error_name_long"] }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { return strings["upgrade_profile_error_name_invalid"] }
        return nil
    }

    /// A profile form's display name and discoverability (the upgrade's last step, the account page), and what is
    /// wrong with them.
    func profileEntry(_ form: [String: String]) -> (name: String, discoverability: Discoverability?, errors: [FieldError]) {
        let name = (form["display_name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let discoverability = form["discoverability"].flatMap(Discoverability.init(rawValue:))
        var errors: [FieldError] = []
        if let problem = displayNameProblem(name) { errors.append(FieldError("display-name", problem)) }
        if discoverability == nil {
            errors.append(FieldError("discoverable-everybody", strings["upgrade_profile_error_discoverability"], key: "discoverability"))
        }
        return (name, discoverability, errors)
    }

    func submitProfile(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await submit(.profile, request, context) { flow, form in
            let (name, discoverability, errors) = profileEntry(form)
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
        var registration = try flow.registration(displayName: displayName, discoverability: discoverability, now: now())
        // The name is the member's again (a claim older than the resume window may have been taken meanwhile), then
        // the chat account is made, and only then is anything stored as done.
        guard try await claim(registration.username, context) else { return try await usernameTaken(flow) }
        do {
            registration.chatUserID = try await chat.createAccount(
                ChatAccountRequest(
                    sub: flow.sub, username: registration.username, displayName: displayName, phoneNumber: registration.phoneNumber)
            )?.userID
        } catch .nameTaken {
            return try await usernameTaken(flow)
        } catch {
            // The flow stays as it is: the member tries again from here, and a retry completes what this one began.
            context.logger.error("chat account not made", metadata: ["error": .string("\(error)"), "sub": .string(flow.sub)])
            var response = try profilePage(
                flow, context, displayName: displayName, discoverability: discoverability,
                errors: [FieldError("finish", strings["upgrade_chat_error_unavailable"])], status: .serviceUnavailable)
            response.headers[.retryAfter] = "10"
            return response
        }
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
            return try await usernameTaken(flow)
        }
        return redirect(FormEncoding.url(Paths.upgradeDone, adding: [("next", flow.returnTo)]))
    }

    /// Somebody else has the name now: back to the username step, which says so.
    func usernameTaken(_ flow: RegistrationFlow) async throws -> Response {
        var flow = flow
        flow.usernameTaken(now: now())
        try await flows.save(flow)
        return redirect(FormEncoding.url(Paths.upgrade(.username), adding: [("taken", "1")]))
    }

    func done(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        guard context.session.level == .registered else { return redirect(Paths.upgrade) }
        // The member's Matrix device is made while they read this page, so that Chats opens at once.
        chats?.prepare(context.session)
        let next = request.uri.queryParameters.get("next").flatMap(ReturnTarget.init)?.path ?? Paths.chats
        let account = try await registrations.account(sub: context.session.identity.sub)
        var values: [String: Any] = [
            "heading": strings["upgrade_done_heading"], "next": next,
            // Other tabs of this browser are told, their bars and tabs being at `sso` still.
            "broadcast": "upgraded",
            "text": account.map { strings.text("upgrade_done_text", ["username": $0.username]) } ?? strings["feature_unlocked_note"],
            // Besides the way back, the features the member just unlocked.
            "features": FeatureTab.allCases.filter { $0 != .webApps && configuration.features.offers($0, to: context.session.identity) }.map { tab in
                ["id": tab.rawValue, "href": tab.path, "label": strings["tab_\(tab.rawValue)"]]
            },
        ]
        // The Matrix ID, kept unbroken in right-to-left text.
        values["chatAccount"] = account?.chatUserID.map { strings.text("upgrade_done_chat_account", ["id": "\u{2068}\($0)\u{2069}"]) }
        return try renderer.page("upgrade-done", title: strings["upgrade_done_heading"], values)
    }
}
