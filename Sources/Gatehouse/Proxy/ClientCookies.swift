import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird

/// Cookies of an app's that its own scripts read (`apps[].client_cookies`, by default the double-submit CSRF tokens of
/// Tornado and Jupyter (`_xsrf`), Django (`csrftoken`), Angular and Laravel (`XSRF-TOKEN`), Syncthing
/// (`CSRF-Token-<id>`)). The jar keeps every cookie on the
/// server, so a script reading `document.cookie` finds nothing and its first write is refused. For the names an
/// operator lists, the browser gets a copy: host-only, on the app's mount path (its host for an app host), never one
/// the app marked `HttpOnly`. The jar stays the truth: the copy goes back with each answer that finds it different
/// (set, changed or gone), and the browser's copy never reaches the app (its `Cookie` comes from the jar only).
struct ClientCookies: Sendable {
    let names: NamePatterns
    /// Where the copies live in the browser: the mount's path on the gateway's host, `/` on an app host.
    let path: String
    let isSecure: Bool

    init?(app: AppConfiguration, onAppHost: Bool, isSecure: Bool) {
        guard !app.clientCookies.isEmpty else { return nil }
        names = NamePatterns(app.clientCookies, ignoresCase: false)
        path = onAppHost ? "/" : Paths.app(app.slug) + "/"
        self.isSecure = isSecure
    }

    /// The `Set-Cookie` fields that bring the browser's copies in line with `jar` for a request to `origin`, given the
    /// `Cookie` fields the browser sent.
    func settings(jar: CookieJar, origin: CookieOrigin, browserCookies: [String]) -> [String] {
        // Most answers: no such cookie in the jar nor in the browser, found without a copy or a dictionary.
        guard jar.cookies.contains(where: { !$0.httpOnly && names.matches($0.name) }) || Self.holdsAny(browserCookies, of: names) else {
            return []
        }
        var jar = jar
        var truth: [String: String] = [:]
        // Longest path first: the value the app's own page would read first.
        for cookie in jar.cookies(for: origin) where names.matches(cookie.name) && !cookie.httpOnly && truth[cookie.name] == nil {
            truth[cookie.name] = cookie.value
        }
        let held = Self.values(browserCookies).filter { names.matches($0.key) }
        var settings: [String] = []
        for name in Set(truth.keys).union(held.keys).sorted() {
            switch (truth[name], held[name]) {
            case (let value?, let copy) where copy != value: settings.append(setting(name, value, maxAge: nil))
            case (nil, _?): settings.append(setting(name, "", maxAge: 0))
            default: break
            }
        }
        return settings
    }

    /// Whether the browser's `Cookie` fields name any of `names`, read in place.
    static func holdsAny(_ cookieFields: [String], of names: NamePatterns) -> Bool {
        var found = false
        forEachPair(cookieFields) { name, _ in
            found = names.matches(name)
            return !found
        }
        return found
    }

    /// The browser's cookies by name (the first of a name, as the app's page reads it first).
    static func values(_ cookieFields: [String]) -> [String: String] {
        var values: [String: String] = [:]
        forEachPair(cookieFields) { name, value in
            if values[String(name)] == nil { values[String(name)] = String(value) }
            return true
        }
        return values
    }

    /// Each `name=value` pair of the browser's `Cookie` fields, in place, until `body` says stop (`false`).
    private static func forEachPair(_ cookieFields: [String], _ body: (Substring, Substring) -> Bool) {
        for field in cookieFields {
            var rest = Substring(field)
            while !rest.isEmpty {
                let pair = rest.prefix { $0 != ";" }.drop { $0 == " " || $0 == "\t" }
                rest = rest.dropFirst(rest.prefix { $0 != ";" }.count + 1)
                guard let equals = pair.firstIndex(of: "=") else { continue }
                if !body(pair[..<equals], pair[pair.index(after: equals)...]) { return }
            }
        }
    }

    private func setting(_ name: String, _ value: String, maxAge: Int?) -> String {
        var parts = ["\(name)=\(value)", "Path=\(path)", "SameSite=Lax"]
        if let maxAge { parts.append("Max-Age=\(maxAge)") }
        if isSecure { parts.append("Secure") }
        return parts.joined(separator: "; ")
    }

}
