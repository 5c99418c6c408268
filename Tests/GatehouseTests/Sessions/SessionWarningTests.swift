import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The warning before a session ends: how long is left (asking is no activity), "Stay signed in" before the idle
/// limit, and before the absolute one through a refresh at the provider or, when it will not, a sign-in.
@Suite struct SessionWarningTests {
    static let bar = [("X-Gatehouse-Frame", "1"), ("Accept", "application/json")]

    static func left(_ reply: LiveGateway.Reply) throws -> (idle: Int, absolute: Int, signIn: String?) {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any])
        let session = try #require(object["session"] as? [String: Int])
        #expect(session["warnBefore"] == 120)
        return (try #require(session["idleEndsIn"]), try #require(session["endsIn"]), object["signIn"] as? String)
    }

    static func stay(_ gateway: LiveGateway, _ cookies: [String: String]) async throws -> LiveGateway.Reply {
        try await gateway.post("/__gatehouse/frame", form: [("stay", "1")], cookies: cookies, headers: Self.bar + [("Sec-Fetch-Site", "same-origin")])
    }

    static func setExpiry(_ gateway: LiveGateway, _ cookies: [String: String], in seconds: TimeInterval, refreshToken: String?? = .none) async throws {
        let id = SessionResolver.sessionID(forCookie: try #require(cookies["gatehouse_session"]))
        var session = try #require(try await gateway.built.stores.sessions.find(id: id))
        session.expiresAt = Date().addingTimeInterval(seconds)
        if case .some(let token) = refreshToken { session.tokens.refreshToken = token }
        try await gateway.built.stores.sessions.update(session)
    }

    @Test func askingIsNoActivityAndStayingIs() async throws {
        try await LiveGateway.run { gateway in
            let cookies = try await ProxyTests.signedIn(gateway)
            let state = try await gateway.get("/__gatehouse/frame", cookies: cookies, headers: Self.bar + [("Accept-Language", "de")])
            let fresh = try Self.left(state)
            #expect((1790...1800).contains(fresh.idle) && (43_190...43_200).contains(fresh.absolute))
            // The notice's texts come with the state, in the member's language, not with every page.
            #expect(state.body.contains(#""stay":"Angemeldet bleiben""#) && state.body.contains("{time}"))
            try await StepUpTests.age(gateway, cookies: cookies, by: 1700)
            // Asked twice: still 100 s left, the asking touched nothing.
            for _ in 0..<2 {
                #expect((90...100).contains(try Self.left(try await gateway.get("/__gatehouse/frame", cookies: cookies, headers: Self.bar)).idle))
            }
            // The page's script only: no form, no other site.
            #expect(try await gateway.post("/__gatehouse/frame", form: [("stay", "1")], cookies: cookies).status == 403)
            let stayed = try Self.left(try await Self.stay(gateway, cookies))
            #expect((1790...1800).contains(stayed.idle) && stayed.signIn == nil)
            #expect((1790...1800).contains(try Self.left(try await gateway.get("/__gatehouse/frame", cookies: cookies, headers: Self.bar)).idle))
            // A signed-in page carries the warning's settings; the sign-in page does not.
            let portal = try await gateway.get("/", cookies: cookies)
            #expect(portal.body.contains(#"<meta name="gatehouse-session" data-idle="1800" data-warn="120""#))
            #expect(!(try await gateway.get("/signin", cookies: [:])).body.contains("gatehouse-session"))
        }
    }

    @Test func nearTheAbsoluteLimitTheProvidersSessionCarriesItOrASignInDoes() async throws {
        try await LiveGateway.run { gateway in
            var cookies = BrowserCookies()
            cookies.values = try await ProxyTests.signedIn(gateway)
            // The provider refreshes: a whole lifetime more.
            try await Self.setExpiry(gateway, cookies.values, in: 60)
            #expect(try Self.left(try await gateway.get("/__gatehouse/frame", cookies: cookies.values, headers: Self.bar)).absolute <= 60)
            let refreshed = try Self.left(try await Self.stay(gateway, cookies.values))
            #expect(refreshed.signIn == nil && (43_190...43_200).contains(refreshed.absolute))

            // Without a refresh the provider allows, the answer names a sign-in, which restarts the limit.
            try await Self.setExpiry(gateway, cookies.values, in: 60, refreshToken: .some(nil))
            let asked = try Self.left(try await Self.stay(gateway, cookies.values))
            let signIn = try #require(asked.signIn)
            #expect(signIn == gateway.origin + "/signin/start?return_to=%2Fsession%2Frenewed&max_age=0" && asked.absolute <= 60)
            let back = try await StepUpTests.signInAgain(gateway, from: signIn, cookies: &cookies)
            #expect(back.location == "/session/renewed")
            let renewed = try await gateway.get("/session/renewed", cookies: cookies.values)
            #expect(renewed.status == 200 && renewed.body.contains("You are signed in again") && renewed.body.contains("gatehouse-session-renewed"))
            #expect((43_190...43_200).contains(try Self.left(try await gateway.get("/__gatehouse/frame", cookies: cookies.values, headers: Self.bar)).absolute))
        }
    }
}
