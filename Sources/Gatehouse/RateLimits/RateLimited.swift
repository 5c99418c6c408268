import HTTPTypes
import Hummingbird

/// A request refused by a rate limit: `429` with `Retry-After`, as a page or JSON.
public struct RateLimited: PresentableError, Equatable {
    public let limit: RateLimiter.Limit
    /// Whole seconds, at least one.
    public let retryAfterSeconds: Int

    public var status: HTTPResponse.Status { .tooManyRequests }
    public var reason: String { "rate_limited:\(limit.rawValue)" }
    public var messageKey: String { "error_rate_limited" }
    public var isRefusal: Bool { true }
    public var messageArguments: [String: String] { ["seconds": "\(retryAfterSeconds)"] }

    /// `response` as this refusal's answer: `429` and when to come back.
    func answering(_ response: Response) -> Response {
        var response = response
        response.status = status
        response.headers[.retryAfter] = "\(retryAfterSeconds)"
        return response
    }
}
