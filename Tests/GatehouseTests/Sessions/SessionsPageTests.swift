import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// "Your sessions": a member sees every browser they are signed in from and ends the others; an ended session's
/// cookie is refused at once and its jar is gone; nobody ends another member's session or one without the form.
@Suite(.serialized) struct SessionsPageTests {
    static let firefoxOnAndroid = "Mozilla/5.0 (Android 14; Mobile; rv:128.0) Gecko/128.0 Firefox/128.0"
    static let chromeOnLinux = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

    static func handles(_ page: String) -> [String] {
        page.matches(of: /data-handle="([0-9a-f]+)"/).map { String($0.1) }
    }

    static func csrf(_ page: String) throws -> String {
        String(try #require(page.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1))
    }

    @Test func aMemberSeesTheirBrowsersAndEndsTheOthers() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let laptop = try await SignInFlowTests.signIn(gateway, as: "alice", deepLink: "/", userAgent: Self.chromeOnLinux).cookies.values
            let phone = try await SignInFlowTests.signIn(gateway, as: "alice", deepLink: "/", userAgent: Self.firefoxOnAndroid).cookies.values
            let tablet = try await SignInFlowTests.signIn(gateway, as: "alice", deepLink: "/").cookies.values
            let bob = try await SignInFlowTests.signIn(gateway, as: "bob", deepLink: "/").cookies.values

            let portal = try await gateway.get("/", cookies: laptop)
            #expect(portal.body.contains(#"href="/account/sessions""#))
            let page = try await gateway.get(Paths.sessions, cookies: laptop)
            #expect(page.status == 200 && Self.handles(page.body).count == 3)  // alice's three, not bob's
            #expect(
                page.body.contains("Chrome on Linux") && page.body.contains("Firefox on Android")
                    && page.body.contains("A browser on an unknown system"))
            #expect(page.body.contains("127.0.0.1") && page.body.components(separatedBy: "id=\"this-browser\"").count == 2)
            #expect(page.body.contains(#"aria-label="Sign out Firefox on Android""#))
            let current = try #require(page.body.firstMatch(of: /data-handle="([0-9a-f]+)" data-current="true"/)?.1)
            let csrf = try Self.csrf(page.body)

            // No form token, another site's form, or another member's session: nothing ends.
            let bobsHandle = try #require(Self.handles(try await gateway.get(Paths.sessions, cookies: bob).body).first)
            #expect(try await gateway.post(Paths.sessions + "/end", form: [("session", bobsHandle)], cookies: laptop).status == 403)
            let crossSite = try await gateway.post(
                Paths.sessions + "/end", form: [("csrf", csrf), ("session", bobsHandle)], cookies: laptop,
                headers: [("Origin", "https://evil.example")])
            #expect(crossSite.status == 403)
            let notHers = try await gateway.post(Paths.sessions + "/end", form: [("csrf", csrf), ("session", bobsHandle)], cookies: laptop)
            #expect(notHers.status == 303 && notHers.location == Paths.sessions + "?ended=gone")
            #expect(try await gateway.get("/", cookies: bob).status == 200)

            // The phone's session ends: its cookie is refused at once, its jar is gone.
            let phoneHandle = try #require(
                page.body.firstMatch(of: /data-handle="([0-9a-f]+)">\s*<h2 class="session-name">Firefox on Android/)?.1)
            let phoneSession = SessionResolver.sessionID(forCookie: try #require(phone["gatehouse_session"]))
            #expect(SessionHandle.of(phoneSession) == phoneHandle)
            _ = try await gateway.get("/apps/echo/set-cookie?c=app%3D1%3B%20Path%3D%2F", cookies: phone)
            #expect(try await gateway.built.stores.jars.load(sessionID: phoneSession) != nil)
            let ended = try await gateway.post(Paths.sessions + "/end", form: [("csrf", csrf), ("session", String(phoneHandle))], cookies: laptop)
            #expect(ended.status == 303 && ended.location == Paths.sessions + "?ended=one")
            let refused = try await gateway.get("/", cookies: phone)
            #expect(refused.status == 303 && refused.location?.hasPrefix("/signin") == true && refused.location?.contains("expired=1") == true)
            #expect(try await gateway.built.stores.jars.load(sessionID: phoneSession) == nil)
            let after = try await gateway.get(Paths.sessions + "?ended=one", cookies: laptop)
            #expect(Self.handles(after.body).count == 2 && after.body.contains("That session has ended"))

            // Everywhere else: only this browser stays.
            let others = try await gateway.post(Paths.sessions + "/end-others", form: [("csrf", csrf)], cookies: laptop)
            #expect(others.location == Paths.sessions + "?ended=others")
            #expect(try await gateway.get("/", cookies: tablet).status == 303)
            let alone = try await gateway.get(Paths.sessions, cookies: laptop)
            #expect(Self.handles(alone.body) == [String(current)] && !alone.body.contains("end-other-sessions"))
        }
    }
}
