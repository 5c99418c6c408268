import HTTPTypes
import Hummingbird

/// `SecurityHeaders` on every answer of the application.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    let headers: SecurityHeaders

    init(headers: SecurityHeaders) {
        self.headers = headers
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        headers.apply(to: &response.headers)
        return response
    }
}
