import Foundation
import GatehouseCore
import GatehouseMatrix
import HTTPTypes
import Hummingbird
import Logging

/// The one place errors become responses: the sign-in page for `SignInRequired`, otherwise an error page for
/// browsers or JSON for API callers, always with the request id. The underlying error is logged here, once.
public struct ErrorPageMiddleware<Context: RequestContext>: RouterMiddleware {
    let renderer: PageRenderer

    public init(renderer: PageRenderer) {
        self.renderer = renderer
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let required as SignInRequired {
            return signIn(required, request: request)
        } catch AccessError.registrationRequired(let returnTo) where !Self.wantsJSON(request) {
            return onboarding(returnTo: returnTo, request: request, context: context)
        } catch let error as AccessError where error.stepUpURL != nil {
            return stepUp(error, request: request, context: context)
        } catch {
            return respond(to: error, request: request, context: context)
        }
    }

    func signIn(_ required: SignInRequired, request: Request) -> Response {
        if request.uri.path.hasPrefix(Paths.appsPrefix + "/"),
            let answer = AnonymousAppRequest.answer(request.headers, message: renderer.strings["signin_subtitle"])
        {
            return answer
        }
        if Self.wantsJSON(request) {
            return json(
                status: .unauthorized, reason: required.sessionExpired ? "session_expired" : "sign_in_required",
                message: renderer.strings[required.sessionExpired ? "session_expired" : "signin_subtitle"], requestID: nil)
        }
        var pairs: [(String, String)] = []
        if let target = required.returnTarget, target != Paths.portal { pairs.append(("return_to", target)) }
        if required.sessionExpired { pairs.append(("expired", "1")) }
        let location = pairs.isEmpty ? Paths.signIn : FormEncoding.url(Paths.signIn, adding: pairs)
        var response = Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
        // The session ended elsewhere (another browser, the provider, a timeout): this browser forgets the apps' data too.
        if required.sessionExpired { response.headers.append(SecurityHeaders.signedOut) }
        return response
    }

    /// A path that asks the member to prove themselves again: a browser's page goes there and comes back; a script's
    /// request (`fetch`, a WebSocket) or an API caller cannot follow a provider's pages, and gets `401` naming where.
    func stepUp(_ error: AccessError, request: Request, context: Context) -> Response {
        let url = error.stepUpURL ?? Paths.signIn
        context.logger.info("step-up required", metadata: ["reason": .string(error.reason)])
        if Self.wantsJSON(request) || !Self.isNavigation(request) {
            return ErrorAnswer.json(
                status: .unauthorized, reason: error.reason, message: renderer.strings["\(error.messageKey)_text"], requestID: context.id,
                extra: ["sign_in_url": url]
            ).response
        }
        return Response(status: .seeOther, headers: [.location: url, .cacheControl: "no-store"])
    }

    /// A page the browser navigates to, as against a script's request: `Sec-Fetch-Mode` says so where browsers send it.
    static func isNavigation(_ request: Request) -> Bool {
        guard let mode = request.headers[GatewayPageIsolation.fetchMode] else { return true }
        return mode == "navigate"
    }

    /// A chat app opened at level `sso` shows the onboarding prompt instead of an error (product §2).
    func onboarding(returnTo: String?, request: Request, context: Context) -> Response {
        let target = returnTo.flatMap(ReturnTarget.init)?.path ?? Paths.chats
        do {
            return try renderer.page(
                "onboarding", title: renderer.strings["feature_locked_title"], status: .forbidden,
                [
                    "featureTitle": renderer.strings["feature_locked_title"], "featureText": renderer.strings["feature_locked_text"],
                    "upgradeURL": Paths.upgradeEntry(from: "app", returnTo: target), "addHint": renderer.strings["feature_add_hint"],
                ])
        } catch {
            return respond(to: error, request: request, context: context)
        }
    }

    func respond(to error: any Error, request: Request, context: Context) -> Response {
        // A homeserver's failure, met by a chat page on the member's device, is the chat's error.
        let error = (error as? MatrixError).map { ChatError($0) as any Error } ?? error
        let status: HTTPResponse.Status
        let reason: String
        let key: String
        var arguments: [String: String] = [:]
        switch error {
        case let presentable as any PresentableError:
            (status, reason, key, arguments) = (presentable.status, presentable.reason, presentable.messageKey, presentable.messageArguments)
        case let http as any HTTPResponseError where http.status == .notFound:
            (status, reason, key) = (.notFound, "not_found", "error_not_found")
        case let http as any HTTPResponseError where http.status == .contentTooLarge:
            // A body over a route's limit (a form, say): what the member sent is too large, not an internal error.
            (status, reason, key) = (.contentTooLarge, "request_body_too_large", "error_too_large")
        case let http as any HTTPResponseError where (400..<500).contains(http.status.code):
            (status, reason, key) = (http.status, "http_\(http.status.code)", "error_bad_request")
        default:
            (status, reason, key) = (.internalServerError, "internal", "error_internal")
        }
        let level: Logger.Level = status.code >= 500 ? .error : .info
        context.logger.log(level: level, "request failed", metadata: ["reason": .string(reason), "error": .string("\(error)")])

        var response = page(
            status: status, reason: reason, key: key, arguments: arguments, toast: (error as? ProxyError)?.toastKey, request: request,
            context: context)
        if let http = error as? HTTPError, let allow = http.headers[.allow] {
            response.headers[.allow] = allow  // a 405 names the methods that would do
        }
        if let limited = error as? RateLimited {
            response = limited.answering(response)
        } else if status == .serviceUnavailable {
            // Unavailable for a moment (the database): clients and balancers may come back shortly.
            response.headers[.retryAfter] = Self.retryAfterSeconds
        }
        return response
    }

    /// What a `503` tells clients and balancers to wait before trying again (the error pages and `/readyz`).
    static var retryAfterSeconds: String { "5" }

    func page(
        status: HTTPResponse.Status, reason: String, key: String, arguments: [String: String] = [:], toast: String? = nil, request: Request,
        context: Context
    ) -> Response {
        ErrorAnswer.make(
            renderer: renderer, status: status, reason: reason, key: key, arguments: arguments, toast: toast, wantsJSON: Self.wantsJSON(request),
            requestID: context.id, retryURL: request.method == .get ? request.uri.description : Paths.portal, logger: context.logger
        ).response
    }

    func json(status: HTTPResponse.Status, reason: String, message: String, requestID: String?) -> Response {
        ErrorAnswer.json(status: status, reason: reason, message: message, requestID: requestID).response
    }

    /// API callers ask for JSON and not for HTML; browsers always accept `text/html`.
    static func wantsJSON(_ request: Request) -> Bool {
        ErrorAnswer.wantsJSON(accept: request.headers[.accept])
    }
}
