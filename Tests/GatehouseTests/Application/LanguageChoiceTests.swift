import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The language a member reads: the browser's `Accept-Language` until the member chooses one in the account menu,
/// then that one on every page (the gateway's own, error pages, JSON messages, the bar in apps and the data plane's
/// failure pages), whatever the browser says; the choice is a form like the others, refused without its token.
@Suite(.serialized) struct LanguageChoiceTests {
    static let german = [("Accept-Language", "de-DE,de;q=0.9,en;q=0.5")]

    @Test func pagesSpeakTheBrowsersLanguageUntilTheMemberChoosesOne() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let signIn = try await gateway.get("/signin", cookies: [:], headers: [("Accept-Language", "ar, en;q=0.5")])
            #expect(signIn.body.contains(#"<html lang="ar" dir="rtl">"#) && signIn.body.contains("تسجيل الدخول عبر SSO"))
            let missing = try await gateway.get("/nowhere", cookies: [:], headers: Self.german)
            #expect(missing.status == 404 && missing.body.contains("Seite nicht gefunden") && missing.body.contains(#"lang="de" dir="ltr""#))
            #expect(
                try await gateway.get("/signin", cookies: [:], headers: [("Accept-Language", "fr")]).body.contains(#"<html lang="en" dir="ltr">"#))

            let alice = try await SignInFlowTests.signIn(gateway, as: "alice", deepLink: "/").cookies.values
            let portal = try await gateway.get("/", cookies: alice, headers: Self.german)
            #expect(portal.body.contains(#"<html lang="de" dir="ltr">"#) && portal.body.contains("Kontomenü"))
            // The menu names each language in itself, marks the current one, and comes back to the same tab.
            #expect(portal.body.contains(#"id="language-de" class="language" aria-current="true">Deutsch</button>"#))
            #expect(portal.body.contains(#"value="ar" lang="ar" dir="rtl" id="language-ar" class="language">العربية</button>"#))
            let csrf = try SessionsPageTests.csrf(portal.body)

            // Hostile or broken choices change nothing.
            #expect(try await gateway.post(Paths.language, form: [("language", "ar")], cookies: alice).status == 403)
            let crossSite = try await gateway.post(
                Paths.language, form: [("csrf", csrf), ("language", "ar")], cookies: alice, headers: [("Origin", "https://evil.example")])
            #expect(crossSite.status == 403)
            for language in ["fr", "", "../en", "ar\r\nX: 1", "EN"] {
                let refused = try await gateway.post(
                    Paths.language, form: [("csrf", csrf), ("language", language)], cookies: alice, headers: Self.german)
                #expect(refused.status == 400 && refused.body.contains("Ungültige Anfrage"), "\(language)")
            }
            let offSite = try await gateway.post(
                Paths.language, form: [("csrf", csrf), ("language", "de"), ("return_to", "https://evil.example/")], cookies: alice)
            #expect(offSite.status == 303 && offSite.location == Paths.portal)

            let chosen = try await gateway.post(Paths.language, form: [("csrf", csrf), ("language", "ar"), ("return_to", "/chats")], cookies: alice)
            #expect(chosen.status == 303 && chosen.location == "/chats")
            // From now on Arabic, whatever the browser asks for: the gateway's pages, the bar in an app's page (both
            // times: the application's path, then the data plane's), an app's failure page, a JSON message.
            let chats = try await gateway.get("/chats", cookies: alice, headers: Self.german)
            #expect(chats.body.contains(#"<html lang="ar" dir="rtl">"#) && chats.body.contains(">أضف الميزات<"))
            for _ in 0..<2 {
                let page = try await gateway.get("/apps/echo/html", cookies: alice, headers: Self.german + GatewayBarTests.document)
                #expect(page.body.contains(#"<nav class="bar" id="bar" lang="ar" dir="rtl" aria-label="Gatehouse""#))
                #expect(page.body.contains("تطبيقات الويب") && !page.body.contains("Web Apps"))
                let down = try await gateway.get("/apps/down/", cookies: alice, headers: Self.german + GatewayBarTests.document)
                #expect(down.status == 502 && down.body.contains("تعذّر الوصول إلى التطبيق") && down.body.contains(#"dir="rtl""#))
            }
            let json = try await gateway.get("/apps/down/", cookies: alice, headers: Self.german + [("Accept", "application/json")])
            #expect(json.status == 502 && json.body.contains("لم يستجب تطبيق الويب"))
            // Another member's browser keeps its own language.
            let bob = try await SignInFlowTests.signIn(gateway, as: "bob", deepLink: "/").cookies.values
            #expect(try await gateway.get("/", cookies: bob, headers: Self.german).body.contains(#"<html lang="de" dir="ltr">"#))
            // Back to German by choice.
            _ = try await gateway.post(Paths.language, form: [("csrf", csrf), ("language", "de")], cookies: alice)
            let german = try await gateway.get("/apps/echo/html", cookies: alice, headers: [("Accept-Language", "ar")] + GatewayBarTests.document)
            #expect(german.body.contains(#"lang="de" dir="ltr""#) && german.body.contains("Web-Apps"))
        }
    }

    @Test func theDefaultLanguageIsConfigurable() async throws {
        try await ProxyTests.withProxy(configure: { $0.brand.defaultLanguage = "de" }) { gateway, _ async throws in
            #expect(try await gateway.get("/signin", cookies: [:], headers: [("Accept-Language", "fr")]).body.contains(#"<html lang="de""#))
            #expect(try await gateway.get("/signin", cookies: [:]).body.contains(#"<html lang="de""#))
            #expect(try await gateway.get("/signin", cookies: [:], headers: [("Accept-Language", "en")]).body.contains(#"<html lang="en""#))
        }
    }
}
