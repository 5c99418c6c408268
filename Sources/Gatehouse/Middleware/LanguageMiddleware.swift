import Hummingbird

/// Binds the request's language for everything below it (`RequestLanguage`): the browser's `Accept-Language` (read
/// only if something renders), the member's choice once `SessionMiddleware` knows the session. Above the error
/// pages, so that they speak it too.
public struct LanguageMiddleware<Context: RequestContext>: RouterMiddleware {
    let languages: Languages

    public init(languages: Languages) {
        self.languages = languages
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let language = RequestLanguage(acceptLanguage: request.headers[.acceptLanguage], languages: languages)
        return try await RequestLanguage.$current.withValue(language) { try await next(request, context) }
    }
}
