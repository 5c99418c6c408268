import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird
import Logging

/// The upgrade flow's pages (product §5): one page per step, each validated on the server with inline messages, each
/// working without JavaScript. The flow lives in `RegistrationFlowStore` per SSO subject; the registration is written
/// in one statement at the end.
public struct RegistrationController: Sendable {
    let flows: any RegistrationFlowStore
    let registrations: any RegistrationStore
    let sender: any CodeSender
    /// Where the member's chat account is made (`chat.backend`).
    let chat: any ChatBackend
    /// The gateway's own chat, whose device for the session is prepared as the upgrade ends.
    let chats: ChatSessions?
    let hasher: PINHasher
    let events: EventRecorder
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration
    /// Development mode only.
    let inbox: DevelopmentInbox?
    let metrics: GatewayMetrics
    let limiter: RateLimiter
    /// The PIN chosen in the upgrade, checked where it confirms something (the account's changes, a sign-in's check).
    let pins: PINGuard
    let now: @Sendable () -> Date

    public init(
        flows: any RegistrationFlowStore, registrations: any RegistrationStore, sender: any CodeSender, chat: any ChatBackend = NoChatBackend(),
        chats: ChatSessions? = nil, hasher: PINHasher, events: EventRecorder, renderer: PageRenderer, configuration: GatehouseConfiguration, inbox: DevelopmentInbox?,
        metrics: GatewayMetrics, limiter: RateLimiter, now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.flows = flows
        self.registrations = registrations
        self.sender = sender
        self.chat = chat
        self.chats = chats
        self.hasher = hasher
        self.events = events
        self.renderer = renderer
        self.configuration = configuration
        self.inbox = inbox
        self.metrics = metrics
        self.limiter = limiter
        self.now = now
        pins = PINGuard(flows: flows, registrations: registrations, hasher: hasher, rules: configuration.registration.rules, now: now)
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
            try await step(.phone, context) { flow in try phonePage(flow, context, status: arrivalNotice(request)) }
        }
        group.post(RouterPath(stringLiteral: Paths.upgrade(.phone))) { request, context in try await submitPhone(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgrade(.code))) { request, context in
            try await step(.code, context) { flow in
                try codePage(
                    flow, context, status: request.uri.queryParameters.get("resent") == "1" ? strings["upgrade_code_resent"] : arrivalNotice(request))
            }
        }
        group.post(RouterPath(stringLiteral: Paths.upgrade(.code))) { request, context in try await submitCode(request, context) }
        group.post(RouterPath(stringLiteral: Paths.upgradeResend)) { request, context in try await resend(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgrade(.username))) { request, context in
            try await step(.username, context) { flow in
                let taken = request.uri.queryParameters.get("taken") == "1"
                var values: [String: Any] = ["username": flow.username ?? ""]
                values["status"] = arrivalNotice(request)
                return try page(
                    .username, flow, context, errors: taken ? [FieldError("username", strings["upgrade_username_error_taken"])] : [], values)
            }
        }
        group.post(RouterPath(stringLiteral: Paths.upgrade(.username))) { request, context in try await submitUsername(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgradeUsernameCheck)) { request, context in
            try await checkUsername(request.uri.queryParameters.get("username") ?? "", request, context)
        }
        group.get(RouterPath(stringLiteral: Paths.upgrade(.pin))) { request, context in
            try await step(.pin, context) { flow in try page(.pin, flow, context, arrivalNotice(request).map { ["status": $0] } ?? [:]) }
        }
        group.post(RouterPath(stringLiteral: Paths.upgrade(.pin))) { request, context in try await submitPIN(request, context) }
        group.get(RouterPath(stringLiteral: Paths.upgrade(.profile))) { request, context in
            try await step(.profile, context) { flow in
                try profilePage(
                    flow, context, displayName: context.session.identity.name ?? "", discoverability: nil, notice: arrivalNotice(request))
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
        let asked = query.get("return_to").flatMap(ReturnTarget.init)?.path
        let returnTo = asked ?? Paths.chats
        if session.level == .registered { return redirect(returnTo) }
        // Chats says why there is no upgrade for this member.
        guard isOffered(context) else { return redirect(Paths.chats) }

        let now = now()
        if var flow = try await flows.flow(sub: session.identity.sub) {
            if !flow.isStale(now: now) {
                // Resumed from somewhere else (the banner in another app, say): the member goes back there afterwards,
                // not where the flow was first started.
                if let asked, asked != flow.returnTo {
                    flow.returnTo = asked
                    try await flows.save(flow)
                }
                events.record(.registrationResumed, sub: session.identity.sub, detail: flow.step.rawValue)
                // The step says it was resumed, not started.
                return redirect(FormEncoding.url(Paths.upgrade(flow.step), adding: [("resumed", "1")]))
            }
            // Too old to resume: it starts again, says so, and keeps what the member had typed.
            try await flows.deleteFlow(sub: session.identity.sub)
            try await flows.save(RegistrationFlow.restart(after: flow, returnTo: returnTo, now: now))
            events.record(.registrationStarted, sub: session.identity.sub, detail: origin)
            return redirect(FormEncoding.url(Paths.upgrade(.phone), adding: [("restarted", "1")]))
        }
        try await flows.save(RegistrationFlow(sub: session.identity.sub, returnTo: returnTo, now: now))
        events.record(.registrationStarted, sub: session.identity.sub, detail: origin)
        return redirect(Paths.upgrade(.phone))
    }

    /// Cancel: the flow is forgotten and the member lands where they started it, told so on the gateway's own pages
    /// (an app page they came from is simply theirs again).
    func cancel(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        _ = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        let sub = context.session.identity.sub
        let flow = try await flows.flow(sub: sub)
        try await flows.deleteFlow(sub: sub)
        events.record(.registrationCancelled, sub: sub, detail: flow?.step.rawValue)
        let back = flow?.returnTo ?? Paths.portal
        let ownPages = [Paths.portal] + FeatureTab.allCases.map(\.path)
        return redirect(ownPages.contains(back) ? FormEncoding.url(back, adding: [("toast", "registration_cancelled")]) : back)
    }

    /// The step's notice when the member arrives from the entry: resumed, or started again after it lapsed.
    func arrivalNotice(_ request: Request) -> String? {
        let query = request.uri.queryParameters
        if query.get("resumed") == "1" { return strings["upgrade_resumed"] }
        if query.get("restarted") == "1" { return strings["upgrade_restarted"] }
        if query.get("elsewhere") == "1" { return strings["upgrade_elsewhere"] }
        return nil
    }

    /// Whether the upgrade is offered to this member at all (`registration.enabled`, required roles and groups).
    func isOffered(_ context: SignedInRequestContext) -> Bool {
        AccessPolicy.mayUpgrade(context.session.identity, registration: configuration.registration)
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
    /// A form (`posted`) sent from a step the flow has left, in another tab, is not used: its step says so.
    func step(
        _ requested: RegistrationStep, _ context: SignedInRequestContext, posted: Bool = false, _ body: (RegistrationFlow) async throws -> Response
    ) async throws -> Response {
        if context.session.level == .registered || !isOffered(context) { return redirect(Paths.chats) }
        guard let flow = try await flows.flow(sub: context.session.identity.sub), !flow.isStale(now: now()) else {
            // No flow, or one older than the resume window: the entry starts over.
            return redirect(Paths.upgrade)
        }
        guard flow.allows(requested) else { return posted ? movedOn(to: flow.step) : redirect(Paths.upgrade(flow.step)) }
        return try await body(flow)
    }

    /// The step the flow is at, saying that another tab took it there (what this tab sent was not used).
    func movedOn(to current: RegistrationStep) -> Response {
        redirect(FormEncoding.url(Paths.upgrade(current), adding: [("elsewhere", "1")]))
    }

    /// The same for a form: read (origin and CSRF checked) before anything else.
    func submit(
        _ requested: RegistrationStep, _ request: Request, _ context: SignedInRequestContext,
        _ body: (RegistrationFlow, [String: String]) async throws -> Response
    ) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        do {
            return try await step(requested, context, posted: true) { flow in try await body(flow, form) }
        } catch let wrong as WrongStep {
            // Another tab moved the flow on between reading and writing: show the step it is at now.
            return movedOn(to: wrong.current)
        }
    }
}
