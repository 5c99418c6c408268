import Testing

@testable import Gatehouse

@Suite struct SessionCookieTests {
    @Test func httpsCookiesAreSecureHttpOnlyLax() {
        let header = SessionCookie(name: "gh", isSecure: true).setting("v")
        #expect(header == "gh=v; Path=/; HttpOnly; SameSite=Lax; Secure")
    }

    @Test func plainHTTPDevelopmentCookiesAreNotSecure() {
        let header = SessionCookie(name: "gh", isSecure: false).setting("v")
        #expect(!header.contains("Secure"))
        #expect(header.contains("HttpOnly") && header.contains("SameSite=Lax"))
    }

    @Test func clearingExpiresAtOnce() {
        #expect(SessionCookie(name: "gh", isSecure: true).clearing() == "gh=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Secure")
    }

    /// With `cookie.domain`, the session cookie (set and cleared alike) reaches external apps' hosts; the sign-in's
    /// browser binding stays on the gateway's host.
    @Test func aParentDomainReachesExternalAppsAndOnlyTheSessionCookieTakesIt() {
        let cookie = SessionCookie(name: "gh", isSecure: true, domain: "example.org")
        #expect(cookie.setting("v") == "gh=v; Path=/; HttpOnly; SameSite=Lax; Domain=example.org; Secure")
        #expect(cookie.clearing() == "gh=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Domain=example.org; Secure")
        #expect(!cookie.loginCookie.setting("b").contains("Domain"))
    }

    @Test func configurationDecidesSecureFromThePublicURL() throws {
        let https = try ConfigurationLoader(
            environment: [
                "GATEHOUSE_PUBLIC_URL": "https://gate.example.org", "GATEHOUSE_OIDC_ISSUER": "https://idp.example.org/realms/r",
                "GATEHOUSE_OIDC_CLIENT_ID": "c", "GATEHOUSE_REGISTRATION_CODE_SENDER_KIND": "http",
                "GATEHOUSE_REGISTRATION_CODE_SENDER_URL": "https://sms.example.org/send",
            ].merging(ConfigurationLoaderTests.storageKey) { given, _ in given }, developmentDefaults: .standard
        ).load(path: nil)
        #expect(https.cookieIsSecure)
        let forcedOff = try ConfigurationLoader(
            environment: [
                "GATEHOUSE_PUBLIC_URL": "https://gate.example.org", "GATEHOUSE_OIDC_ISSUER": "https://idp.example.org",
                "GATEHOUSE_OIDC_CLIENT_ID": "c",
                "GATEHOUSE_COOKIE_SECURE": "false", "GATEHOUSE_REGISTRATION_CODE_SENDER_KIND": "http",
                "GATEHOUSE_REGISTRATION_CODE_SENDER_URL": "https://sms.example.org/send",
            ].merging(ConfigurationLoaderTests.storageKey) { given, _ in given }, developmentDefaults: .standard
        ).load(path: nil)
        #expect(!forcedOff.cookieIsSecure)
        let development = try ConfigurationLoader(environment: [:], developmentDefaults: .standard).load(path: nil, development: true)
        #expect(!development.cookieIsSecure)
    }

    @Test func sessionIDsAreHashesOfTheCookie() {
        let id = SessionResolver.sessionID(forCookie: "abc")
        #expect(id == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
