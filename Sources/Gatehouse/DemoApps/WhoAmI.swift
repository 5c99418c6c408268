import AsyncHTTPClient
import Crypto
import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird

extension DemoApps {
    /// The demo app that shows an app author what an app behind Gatehouse learns: the identity headers it received,
    /// and the signed assertion checked as an app checks it (the gateway's published keys fetched, the signature,
    /// the audience and the expiry verified).
    static let whoAmISlug = "whoami"

    struct WhoAmI: Sendable {
        /// The gateway's published keys (`/.well-known/jwks.json` on its public URL).
        let keysURL: String
        /// This app's own origin: the `aud` its assertions must carry.
        let audience: String
        let http: HTTPClient

        func page(_ request: Request) async -> Response {
            let received = request.headers.filter { field in
                let name = field.name.canonicalName
                return name.hasPrefix("x-forwarded-") || name == "x-gatehouse-assertion" || name == "authorization" || name == "traceparent"
            }
            let rows = received.map { field in
                let value = field.name == .authorization ? "Bearer …" : field.value
                return "<tr><th scope=\"row\">\(escape(field.name.rawName))</th><td><code>\(escape(value))</code></td></tr>"
            }
            var body = """
                <p>These are the headers that say who you are, as this app received them from the gateway.</p>
                <table id="identity-headers"><caption>Identity headers</caption><tbody>\(rows.joined())</tbody></table>
                <h2>The signed assertion</h2>
                """
            if let token = request.headers[HTTPField.Name("X-Gatehouse-Assertion")!] {
                body += await verification(token)
            } else {
                body += "<p id=\"assertion-result\">No <code>X-Gatehouse-Assertion</code> arrived: this app's <code>assertion</code> is off.</p>"
            }
            return DemoApps.page("Who Am I", body, mobile: true)
        }

        /// The assertion checked with the keys fetched from the gateway, as any app can (here with the gateway's own
        /// code; an app uses its JWT library with the same three checks).
        func verification(_ token: String) async -> String {
            let keys: [String: P256.Signing.PublicKey]
            do {
                let response = try await http.execute(HTTPClientRequest(url: keysURL), timeout: .seconds(5))
                keys = IdentityAssertion.publicKeys(jwkSet: Data(buffer: try await response.body.collect(upTo: 1 << 20)))
            } catch {
                return "<p id=\"assertion-result\">The keys could not be fetched from <code>\(escape(keysURL))</code>: \(escape("\(error)"))</p>"
            }
            do {
                let claims = try IdentityAssertion.verify(token, keys: keys, audience: audience, now: Date())
                let list: [(String, String)] = [
                    ("iss", claims.iss), ("aud", claims.aud), ("sub", claims.sub), ("preferred_username", claims.preferredUsername ?? ""),
                    ("name", claims.name ?? ""), ("email", claims.email ?? ""), ("groups", claims.groups.joined(separator: ", ")),
                    ("roles", claims.roles.joined(separator: ", ")), ("level", claims.level), ("sid", claims.sid),
                ]
                let seconds = claims.exp - Int(Date().timeIntervalSince1970)
                return """
                    <p id="assertion-result">Verified: signed with a key published at <code>\(escape(keysURL))</code>, addressed \
                    to this app (<code>\(escape(audience))</code>), valid for \(seconds) more seconds.</p>
                    <dl id="assertion-claims">\(list.map { "<dt>\($0.0)</dt><dd id=\"claim-\($0.0)\">\(escape($0.1))</dd>" }.joined())</dl>
                    <p>Check it in your app with any JWT library: algorithm <code>ES256</code>, the keys from the URL above,
                    audience your app's origin, issuer the gateway's public URL.</p>
                    """
            } catch {
                return "<p id=\"assertion-result\">Not verified: \(escape("\(error)"))</p>"
            }
        }
    }
}
