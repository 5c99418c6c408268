import Foundation
import GatehouseCore
import HTTPTypes
import HummingbirdTesting
import Logging
import Testing

@testable import Gatehouse

/// Routing, headers and error pages through the real application, without sockets.
@Suite struct RouterTests {
    func withApplication(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        try await withOwnRoutes { _, client in try await body(client) }
    }

    /// The application, and its own routes before their `405` answers were added.
    func withOwnRoutes(
        _ body: @escaping @Sendable ([(path: String, methods: [HTTPRequest.Method])], any TestClientProtocol) async throws -> Void
    ) async throws {
        let configuration = try LiveGateway.developmentConfiguration(port: 8080)
        var logger = Logger(label: "router-test")
        logger.logLevel = .warning
        let built = try await GatehouseApplication.build(configuration: configuration, logger: logger)
        let own = GatehouseApplication.ownRoutes(of: GatehouseApplication.ownRouter(built.running.gateway))
        try await built.application.test(.router) { client in try await body(own, client) }
    }

    @Test func signedInPagesSendSignedOutBrowsersToSignIn() async throws {
        try await withApplication { client in
            for path in ["/", "/chats", "/calls", "/stories"] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .seeOther)
                    let expected = path == "/" ? "/signin" : "/signin?return_to=" + FormEncoding.escape(path)
                    #expect(response.headers[.location] == expected)
                }
            }
            // A POST is never remembered as a return target: the address takes GET only.
            try await client.execute(uri: "/chats", method: .post) { response in
                #expect(response.status == .methodNotAllowed && response.headers[.allow] == "GET, HEAD")
            }
        }
    }

    /// Every address of the gateway's own answers its methods, and any other with `405` and what it takes; an address
    /// that is not the gateway's stays `404`.
    @Test func anotherMethodAtTheGatewaysOwnAddressesIs405() async throws {
        try await withOwnRoutes { own, client in
            let all: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete, .options]
            // The table is the routes': the pages of every controller are in it.
            for path in [Paths.signIn, Paths.callback, Paths.account, Paths.operatorCatalogSave, Paths.pinCheck, Paths.upgrade(.phone), Paths.keptForm, Paths.sessionRenewed] {
                #expect(own.contains { $0.path == path }, "\(path) is not in the 405 table")
            }
            for (path, methods) in own {
                for method in all {
                    try await client.execute(uri: path, method: method, headers: [.accept: "application/json"]) { response in
                        if methods.contains(method) {
                            #expect(response.status != .methodNotAllowed && response.status != .notFound, "\(method) \(path)")
                        } else {
                            #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                            #expect(
                                response.headers[.allow] == GatehouseApplication.allowed(methods).map(\.rawValue).joined(separator: ", "))
                            #expect(String(buffer: response.body).contains("\"error\":\"http_405\""), "\(method) \(path)")
                        }
                    }
                }
            }
            try await client.execute(uri: "/signin/start", method: .post) { response in
                #expect(response.status == .methodNotAllowed && response.headers[.allow] == "GET, HEAD")
            }
            try await client.execute(uri: "/no/such/page", method: .post) { response in #expect(response.status == .notFound) }
        }
    }

    @Test func aForgedSessionCookieIsJustSignedOut() async throws {
        try await withApplication { client in
            let hostile = ["", "x", String(repeating: "A", count: 4096), "../../etc/passwd", "'; DROP TABLE sessions; --"]
            for value in hostile {
                try await client.execute(uri: "/", method: .get, headers: [.cookie: "gatehouse_session=\(value)"]) { response in
                    #expect(response.status == .seeOther)
                    #expect(response.headers[.location] == "/signin")
                }
            }
        }
    }

    @Test func pagesCarryStrictSecurityHeaders() async throws {
        try await withApplication { client in
            try await client.execute(uri: "/signin", method: .get) { response in
                #expect(response.status == .ok)
                let csp = try #require(response.headers[.contentSecurityPolicy])
                #expect(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'") && csp.contains("object-src 'none'"))
                #expect(!csp.contains("unsafe-inline"))
                #expect(response.headers[.xContentTypeOptions] == "nosniff")
                #expect(response.headers[.cacheControl] == "no-store")
                let body = String(buffer: response.body)
                #expect(body.contains("<h1 id=\"signin-title\">Sign In</h1>"))
                #expect(body.contains("Use your organization credentials to access web apps"))
                #expect(body.contains("Sign in with SSO"))
            }
        }
    }

    @Test func signInPageEscapesWhatItEchoes() async throws {
        try await withApplication { client in
            try await client.execute(uri: "/signin?return_to=/x%22%3E%3Cscript%3Ealert(1)%3C/script%3E&error=%3Cscript%3E", method: .get) {
                response in
                let body = String(buffer: response.body)
                #expect(!body.contains("<script>alert"))
                #expect(!body.contains("value=\"/x\""))
                #expect(body.contains("Something went wrong while signing in"))
            }
        }
    }

    @Test func sessionExpiredMessage() async throws {
        try await withApplication { client in
            try await client.execute(uri: "/signin?expired=1&return_to=%2Fcalls", method: .get) { response in
                #expect(String(buffer: response.body).contains("Your session has expired. Please sign in again."))
            }
        }
    }

    @Test func staticFilesHealthAndReadiness() async throws {
        try await withApplication { client in
            try await client.execute(uri: "/static/gatehouse.css", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("prefers-color-scheme: dark"))
            }
            try await client.execute(uri: "/static/../Package.swift", method: .get) { response in
                #expect(response.status != .ok)
            }
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/readyz", method: .get) { #expect($0.status == .ok) }
        }
    }

    @Test func signOutWithoutASessionGoesToSignIn() async throws {
        try await withApplication { client in
            try await client.execute(uri: "/signout", method: .post, body: .init(string: "csrf=x")) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location] == "/signin")
            }
        }
    }

    @Test func developmentProviderRefusesForeignClientsAndRedirects() async throws {
        try await withApplication { client in
            let query = "response_type=code&scope=openid&state=s&code_challenge=c&code_challenge_method=S256"
            for bad in [
                "client_id=evil&redirect_uri=http%3A%2F%2F127.0.0.1%3A8080%2Fauth%2Fcallback",
                "client_id=gatehouse-dev&redirect_uri=https%3A%2F%2Fevil.example%2Fcb",
            ] {
                try await client.execute(uri: "/dev-idp/authorize?\(query)&\(bad)", method: .get) { response in
                    #expect(response.status == .badRequest)
                    #expect(response.headers[.location] == nil)
                    #expect(String(buffer: response.body).contains("for local development only"))
                }
            }
            let good = "client_id=gatehouse-dev&redirect_uri=http%3A%2F%2F127.0.0.1%3A8080%2Fauth%2Fcallback"
            try await client.execute(uri: "/dev-idp/authorize?\(query)&\(good)", method: .get) { response in
                #expect(response.status == .ok)
                let body = String(buffer: response.body)
                #expect(body.contains("for local development only") && body.contains(#"id="account-alice""#))
                #expect(!body.contains(#"id="dev-error""#))  // no empty alert before anything went wrong
            }
            try await client.execute(uri: "/dev-idp/logout?post_logout_redirect_uri=https%3A%2F%2Fevil.example", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(response.headers[.location] == nil)
            }
            try await client.execute(
                uri: "/dev-idp/token", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: .init(string: "grant_type=authorization_code&code=guess&client_id=gatehouse-dev")
            ) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains("invalid_grant"))
            }
        }
    }

    @Test func theDevelopmentProviderDoesNotExistOutsideDevelopmentMode() async throws {
        var configuration = try LiveGateway.developmentConfiguration(port: 8080)
        configuration.developmentMode = false
        await #expect(throws: DevelopmentProviderError.self) {
            _ = try await DevelopmentIdentityProvider(
                configuration: configuration, renderer: try await PageRenderer.load(configuration: configuration))
        }
    }
}
