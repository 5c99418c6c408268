import AsyncHTTPClient
import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// Two identity providers on one gateway: the development provider (the first: its subjects are the accounts as they
/// are) and a second realm (`partner`, whose accounts are `partner:<sub>`). A button each; a session records its
/// provider; the same subject at both is two accounts; a logout token of one ends its own members' sessions only.
@Suite struct IdentityProvidersTests {
    static let partnerClient = "gatehouse-partner"

    static func twoProviders(_ issuer: String) -> (inout GatehouseConfiguration) -> Void {
        { configuration in
            configuration.oidc.id = "staff"
            configuration.oidc.name = "Staff"
            configuration.otherProviders = [
                OIDCConfiguration(id: "partner", name: "Partner Realm", issuer: issuer, clientID: partnerClient)
            ]
        }
    }

    /// Signed in at the partner realm (the lax provider answers at once, as `subject`).
    static func signInAtPartner(_ gateway: LiveGateway) async throws -> BrowserCookies {
        var cookies = BrowserCookies()
        let start = try await gateway.get("/signin/start?provider=partner", cookies: [:])
        cookies.absorb(start)
        let authorize = try #require(start.location)
        #expect(authorize.contains("client_id=\(partnerClient)"))
        let code = try await gateway.get(authorize, cookies: [:])
        let signedIn = try await gateway.get(try #require(code.location), cookies: cookies.values)
        cookies.absorb(signedIn)
        #expect(signedIn.status == 303 && signedIn.location == "/")
        return cookies
    }

    @Test func membersSignInAtEitherProviderAndTheAccountIsThePair() async throws {
        let provider = try await TestProvider()
        // The partner's member has the subject of a development account: a different person.
        let alice = try #require(DevelopmentAccounts.account(username: "alice")).sub
        let lax = LaxProvider(provider: provider, authTime: Date(), acr: nil, subject: alice)
        try await lax.run { issuer in
            try await ProxyTests.withProxy(configure: Self.twoProviders(issuer)) { gateway, _ in
                let page = try await gateway.get("/signin", cookies: [:])
                #expect(page.body.contains(#"name="provider" value="staff" id="sign-in-staff">Sign in with Staff<"#))
                #expect(page.body.contains(#"name="provider" value="partner" id="sign-in-partner">Sign in with Partner Realm<"#))
                // The form-action of the gateway's pages lets the sign-in form's redirect reach either provider.
                #expect(page.headers.first(name: "Content-Security-Policy")?.contains(issuer) == true)
                // A provider the gateway does not have is refused, and nothing is started.
                #expect(try await gateway.get("/signin/start?provider=evil", cookies: [:]).status == 400)

                let partner = try await Self.signInAtPartner(gateway)
                let staff = try await ProxyTests.signedIn(gateway, as: "alice")
                let sessions = try await gateway.built.stores.sessions.sessions(subject: "partner:" + alice, now: Date(), idleCutoff: .distantPast)
                #expect(sessions.count == 1 && sessions.first?.provider == "partner" && sessions.first?.identity.name == "Lax Member")
                let own = try await gateway.built.stores.sessions.sessions(subject: alice, now: Date(), idleCutoff: .distantPast)
                #expect(own.count == 1 && own.first?.provider == nil)
                // Each member is who they are to the apps.
                let seen = try ProxyTests.report(try await gateway.get("/apps/echo/echo/x", cookies: partner.values))
                #expect(seen.headers["x-forwarded-user"] == ["partner:" + alice])
                let seenStaff = try ProxyTests.report(try await gateway.get("/apps/echo/echo/x", cookies: staff))
                #expect(seenStaff.headers["x-forwarded-user"] == [alice])

                // A logout token of the partner's ends the partner's member, not the staff member of the same subject.
                var claims = LogoutClaims()
                claims.iss = issuer
                claims.aud = Self.partnerClient
                claims.sub = alice
                claims.sid = nil
                let token = try await provider.sign(logout: claims)
                #expect(try await gateway.post(Paths.backChannelLogout, form: [("logout_token", token)], cookies: [:]).status == 200)
                #expect(try await gateway.built.stores.sessions.sessions(subject: "partner:" + alice, now: Date(), idleCutoff: .distantPast).isEmpty)
                #expect(try await gateway.built.stores.sessions.sessions(subject: alice, now: Date(), idleCutoff: .distantPast).count == 1)
                // One from an issuer the gateway does not have changes nothing.
                claims.iss = "https://evil.example"
                claims.jti = UUID().uuidString
                let forged = try await provider.sign(logout: claims)
                #expect(try await gateway.post(Paths.backChannelLogout, form: [("logout_token", forged)], cookies: [:]).status == 400)
                #expect(try await gateway.built.stores.sessions.sessions(subject: alice, now: Date(), idleCutoff: .distantPast).count == 1)
            }
        }
    }

    @Test func aSubjectOfTheFirstProviderCannotPassForAnotherProvidersAccount() throws {
        let http = HTTPClient.shared
        let providers = IdentityProviders(
            [OIDCConfiguration(issuer: "https://staff.example", clientID: "c"), OIDCConfiguration(id: "partner", issuer: "https://partner.example", clientID: "c")]
        ) { _ in http }
        #expect(throws: OIDCError.self) { try providers.primary.account("partner:alice") }
        #expect(try providers.primary.account("alice") == "alice")
        #expect(try providers.all[1].account("partner:alice") == "partner:partner:alice")
        #expect(providers.all[1].subject(of: "partner:alice") == "alice")
    }

    @Test func aListOfProvidersIsReadWithEachProblemAtItsPlace() throws {
        func load(_ providers: String) throws(ConfigurationError) -> GatehouseConfiguration {
            let file = #"{"public_url": "http://127.0.0.1:8080", "development": {"enabled": true}, "oidc": ["# + providers + "]}"
            return try ConfigurationLoader(environment: ["GATEHOUSE_OIDC_PARTNER_CLIENT_SECRET": "s3cret"], developmentDefaults: .standard) { _ in
                file
            }.load(path: "gatehouse.json")
        }
        let staff = #"{"id": "staff", "name": "Staff"}"#
        let partner = #"{"id": "partner", "name": "Partner", "issuer": "https://partner.example/realms/p", "client_id": "gatehouse"}"#
        var problems: [ConfigurationProblem] = []
        do throws(ConfigurationError) {
            _ = try load([staff, partner.replacingOccurrences(of: "}", with: #", "colour": "red"}"#), #"{"id": "Bad Id", "issuer": "http://partner.example"}"#].joined(separator: ","))
        } catch { problems = error.problems }
        #expect(problems.contains(ConfigurationProblem("oidc[1].colour", "unknown key")))
        for key in ["id", "name", "issuer", "client_id"] { #expect(problems.contains { $0.keyPath == "oidc[2].\(key)" }, "\(key)") }
        #expect(!problems.contains { $0.keyPath.hasPrefix("oidc[0]") || $0.keyPath.hasPrefix("oidc.") }, "\(problems)")
        problems = []
        do throws(ConfigurationError) { _ = try load([staff, staff.replacingOccurrences(of: "Staff", with: "Twice")].joined(separator: ",")) } catch {
            problems = error.problems
        }
        #expect(problems.contains { $0.keyPath == "oidc[1].id" } && problems.contains { $0.keyPath == "oidc[1].issuer" })

        let configuration = try load([staff, partner].joined(separator: ","))
        #expect(configuration.providers.map(\.id) == ["staff", "partner"])
        #expect(configuration.otherProviders.first?.clientSecret == "s3cret")
        // The first is development mode's own provider, which the file need not name.
        #expect(configuration.oidc.issuer == "http://127.0.0.1:8080" + DevelopmentDefaults.standard.issuerPath)
    }
}
