import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird

/// `/operator/funnel`: the funnel report as JSON for members with the operator role; always JSON, errors too.
public struct FunnelController: Sendable {
    let events: any EventStore
    let registrations: any RegistrationStore
    let configuration: GatehouseConfiguration
    /// The messages' words (a command has none).
    let languages: Languages?
    /// This replica's events on their way to the store, flushed before a report (a command has none).
    let queue: EventQueue?

    public init(
        events: any EventStore, queue: EventQueue? = nil, registrations: any RegistrationStore, configuration: GatehouseConfiguration,
        languages: Languages? = nil
    ) {
        self.events = events
        self.queue = queue
        self.registrations = registrations
        self.configuration = configuration
        self.languages = languages
    }

    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.operatorFunnel)) { request, context -> Response in
            guard configuration.isOperator(context.session.identity) else {
                return try JSONResponse.make(
                    [
                        "error": "forbidden",
                        "message": languages?.strings.text("operator_forbidden", ["role": configuration.operatorRole]) ?? "forbidden",
                    ],
                    status: .forbidden)
            }
            let query = request.uri.queryParameters
            switch FunnelWindow.parse(days: query.get("days"), since: query.get("since"), until: query.get("until")) {
            case .failure(let error):
                return try JSONResponse.make(
                    [
                        "error": "bad_request",
                        "message": languages?.strings.text("operator_bad_window", ["detail": error.description]) ?? error.description,
                    ],
                    status: .badRequest)
            case .success(let window):
                return try JSONResponse.make(try await report(window).json())
            }
        }
    }

    public func report(_ window: DateInterval) async throws -> FunnelReport {
        await queue?.flush()
        let backlog =
            configuration.registration.provisioning.endpoint == nil
            ? nil : try await registrations.provisioningBacklog(maximumAttempts: configuration.registration.provisioning.maximumAttempts)
        return FunnelReport(window: window, counts: try await events.counts(in: window), provisioning: backlog)
    }
}
