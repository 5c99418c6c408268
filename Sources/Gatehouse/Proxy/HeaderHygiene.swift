import Foundation
import GatehouseCore
import HTTPTypes

/// Which headers cross the gateway, in either direction.
///
/// Towards an app the rule is a reverse proxy's: every end-to-end header the browser sends passes (an app's own CSRF
/// header, `kbn-xsrf`, `X-Grafana-Org-Id`…), except those the gateway owns (hop-by-hop, `Cookie`, which comes from the
/// jar, `Host`, framing, `Authorization` unless the app takes it, tracing) and those that speak for identity or for the
/// client's address (`X-Forwarded-*`, `X-Real-IP`, `CF-*`, `Remote-User`, `X-Auth-*`, `X-Original-URL`, every app's
/// identity headers…), whatever their case, and with `_` read as `-`. `apps[].request_headers: "strict"` keeps an
/// allowlist instead, for an app that trusts a header the gateway cannot know: what browsers send on their own
/// account, plus the app's `pass_headers`.
public enum HeaderHygiene {
    /// RFC 9110 §7.6.1 connection-specific fields, plus those HTTP/1.1 proxies conventionally drop.
    static let hopByHop: Set = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade",
    ]

    /// Request headers browsers send on their own account: what a strict app gets (with its `pass_headers`), and what
    /// every app gets without a further look.
    static let browserRequestHeaders: Set = [
        "accept", "accept-language", "cache-control", "pragma", "content-type", "content-language", "content-encoding",
        "if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "if-range", "range", "origin", "referer",
        "user-agent", "dnt", "sec-gpc", "save-data", "upgrade-insecure-requests", "x-requested-with", "priority",
        "sec-fetch-dest", "sec-fetch-mode", "sec-fetch-site", "sec-fetch-user", "sec-purpose", "purpose",
        // What an app's own scripts send back of its CSRF cookie (Tornado and Jupyter, Django, Angular, Laravel, Rails).
        "x-xsrftoken", "x-csrftoken", "x-xsrf-token", "x-csrf-token",
    ]
    /// Client hints (`Sec-CH-UA`, …) are a family of their own.
    static let browserRequestPrefix = "sec-ch-"

    /// Names no configuration can pass from the browser: the gateway decides them (the jar, the upstream's host,
    /// framing, the accepted codings, the trace) or they belong to the hop.
    static let neverPassed: Set = [
        "cookie", "host", "content-length", "accept-encoding", "authorization", "forwarded", "expect", "traceparent", "tracestate",
    ]

    /// Names that speak for the client's address, its host or who it is, in the conventions of other proxies, balancers
    /// and single sign-on front ends: an app behind one of them may trust these, so no browser may send them. And the
    /// method overrides: the gateway's checks (the origin of a change, rules by method) judge the method it sees.
    static let speakingForIdentity: Set = [
        "x-real-ip", "true-client-ip", "x-client-ip", "x-cluster-client-ip", "fastly-client-ip", "x-originating-ip", "x-remote-ip",
        "x-remote-addr", "client-ip", "via", "x-host", "x-http-host-override", "x-rewrite-url", "x-proxy-user", "x-user", "x-username",
        "x-user-id", "x-userid", "x-user-name", "x-user-email", "x-user-groups", "x-user-roles", "x-email", "x-groups", "x-roles",
        "x-preferred-username", "x-userinfo", "x-id-token", "x-access-token", "x-arr-clientcert", "x-client-cert", "x-client-dn",
        "x-client-verify", "x-http-method-override", "x-http-method", "x-method-override",
    ]
    /// The families of those names, by their start (after reading `_` as `-`).
    static let speakingForIdentityPrefixes = [
        "x-forwarded-", "cf-", "x-remote-", "remote-", "x-auth-", "x-webauth-", "x-original-", "x-gatehouse-", "x-amzn-", "x-goog-",
        "x-ms-client-principal", "x-ssl-", "ssl-client-", "x-client-cert-", "x-pomerium-", "x-authentik-", "x-vouch-", "x-envoy-",
        "x-authenticated-", "x-consumer-", "x-credential-", "x-jwt-", "oidc-", "x-oidc-", "x-iap-", "sec-websocket-",
    ]

    /// Whether `name` (lower-case, `_` read as `-`) is the gateway's or speaks for identity: never passed from the
    /// browser to any app.
    static func isReserved(_ name: String) -> Bool {
        hopByHop.contains(name) || neverPassed.contains(name) || speakingForIdentity.contains(name)
            || speakingForIdentityPrefixes.contains { name.hasPrefix($0) }
    }

    /// Lower-case with `_` read as `-`: `X_Forwarded_User` is `x-forwarded-user` to many upstream frameworks.
    static func canonical(_ name: HTTPField.Name) -> String {
        canonical(name.canonicalName)
    }

    static func canonical(_ name: String) -> String {
        // Most names are lower-case already (`HTTPField.Name.canonicalName`): those are returned as they are.
        guard name.utf8.contains(where: { $0 == UInt8(ascii: "_") || $0.asciiLowercased != $0 }) else { return name }
        return String(
            decoding: name.utf8.map { byte in byte == UInt8(ascii: "_") ? UInt8(ascii: "-") : byte.asciiLowercased }, as: UTF8.self)
    }

    static func connectionListed(_ fields: HTTPFields) -> Set<String> {
        // Optional whitespace (RFC 9110 §5.6.3) around each token: spaces and tabs.
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var listed = Set<String>()
        for value in fields[values: .connection] {
            for token in value.utf8.split(separator: UInt8(ascii: ",")) {
                guard let first = token.firstIndex(where: { !isSpace($0) }), let last = token.lastIndex(where: { !isSpace($0) }) else { continue }
                let name = canonical(String(decoding: token[first...last], as: UTF8.self))
                // `keep-alive` and `close`, which most answers say, are dropped as hop-by-hop anyway: no set is made.
                if !hopByHop.contains(name) { listed.insert(name) }
            }
        }
        return listed
    }

    /// The forwarding headers the gateway sets on every request to an app.
    static let forwardingNames: Set = ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-prefix", "x-forwarded-port"]

    /// Why the gateway cannot set `name` as an app's identity or assertion header, or `nil` when it can: a name of the
    /// hop, or one the gateway sets for other reasons. (Names of the identity families, `X-Webauth-User`,
    /// `X-Pomerium-Jwt-Assertion`, are what these settings are for.)
    public static func problem(setting name: String) -> String? {
        let lowered = canonical(name)
        guard HTTPField.Name(name) != nil else { return "is not a header name" }
        if lowered == "authorization" { return "use pass_authorization for the Authorization header" }
        if hopByHop.contains(lowered) || neverPassed.contains(lowered) || forwardingNames.contains(lowered) {
            return "is set by the gateway itself and cannot be passed from the browser"
        }
        return nil
    }

    /// Why an app's `pass_headers` entry (a name, or a pattern with `*`) cannot be honoured, or `nil` when it can
    /// (reported by configuration validation): what the gateway sets, what speaks for identity, the app's own identity
    /// headers.
    public static func problem(passing name: String, identityNames: some Sequence<String>) -> String? {
        let literal = canonical(NamePatterns.literalPrefix(name))
        if let problem = problem(setting: name) { return problem }
        if isReserved(literal) && (!name.contains("*") || speakingForIdentityPrefixes.contains { literal.hasPrefix($0) }) {
            return "speaks for the member or their address, and is never passed from the browser"
        }
        if identityNames.contains(where: { canonical($0) == literal }) { return "is an identity header the gateway sets for this app" }
        return nil
    }

    /// An app's header configuration as the request path reads it, worked out once per app: the canonical names it
    /// passes and the identity headers it gets (in name order), and the gateway's public scheme and host.
    struct Rules: Sendable {
        /// `pass_headers`: what a strict app gets besides browsers' own headers, and the names with `_` any app gets.
        let passed: NamePatterns
        /// The app takes only browsers' own headers and `passed` (`request_headers: "strict"`).
        let isStrict: Bool
        /// Every app's identity headers and assertion header, canonical: set by the gateway, never by a browser.
        let identityNames: Set<String>
        let identity: [(name: HTTPField.Name, claim: AppHeaderConfiguration.Claim)]
        /// The header of the signed assertion, if the app gets one.
        let assertion: HTTPField.Name?
        let passAuthorization: Bool
        let passAccessToken: Bool
        let forwardedProto: String
        /// The host the member's browser names for the app: the gateway's, or the app host's.
        let forwardedHost: String
        /// The mount's path, for an app that gets its paths without it (`X-Forwarded-Prefix`).
        let forwardedPrefix: String?
        /// `Forwarded`'s `host` and `proto` (RFC 7239), the client's `for` added per request.
        let forwardedTail: String
        /// `X-Forwarded-Proto`, `-Host` and `-Prefix` as fields, made (and checked) once: the same on every request.
        let constantForwardingFields: [HTTPField]

        /// `everyAppsIdentityNames`: what the other apps name as identity (`identityNames(of:)`); an app's own are
        /// added.
        init(
            _ rules: AppHeaderConfiguration, publicURL: URL, pageHost: String? = nil, prefix: String? = nil,
            everyAppsIdentityNames: Set<String> = []
        ) {
            passed = NamePatterns(rules.passHeaders, ignoresCase: true)
            isStrict = rules.strictRequestHeaders
            identityNames = everyAppsIdentityNames.union(HeaderHygiene.identityNames(of: rules))
            identity = rules.identity.sorted { $0.key < $1.key }.compactMap { name, claim in HTTPField.Name(name).map { ($0, claim) } }
            assertion = rules.assertion.flatMap { HTTPField.Name($0) }
            passAuthorization = rules.passAuthorization
            passAccessToken = rules.passAccessToken
            forwardedProto = publicURL.scheme ?? "https"
            forwardedHost = pageHost ?? publicURL.host.map { host in publicURL.port.map { "\(host):\($0)" } ?? host } ?? ""
            forwardedPrefix = prefix
            forwardedTail = ";host=\"\(forwardedHost)\";proto=\(forwardedProto)"
            constantForwardingFields =
                [HTTPField(name: HeaderHygiene.forwardedProto, value: forwardedProto), HTTPField(name: HeaderHygiene.forwardedHost, value: forwardedHost)]
                + (prefix.map { [HTTPField(name: HeaderHygiene.forwardedPrefix, value: $0)] } ?? [])
        }
    }

    /// The names an app's configuration has the gateway set (its identity headers and the assertion's), canonical.
    static func identityNames(of rules: AppHeaderConfiguration) -> Set<String> {
        // The assertion's name counts as an identity header: nobody but the gateway sets it.
        Set((Array(rules.identity.keys) + (rules.assertion.map { [$0] } ?? [])).map(canonical))
    }

    /// The browser's headers as `app` may see them (`Rules`): hop-by-hop and `Connection`-listed fields out, then
    /// what the gateway owns or what speaks for identity, then, for a strict app, all but browsers' own headers and its
    /// `pass_headers`. Cookies come from the jar, `Host` from the upstream URL, identity from `addIdentityHeaders`.
    static func requestHeaders(from fields: HTTPFields, for rules: Rules) -> HTTPFields {
        let listed = fields.contains { $0.name == .connection } ? connectionListed(fields) : []
        var result = HTTPFields()
        result.reserveCapacity(fields.count + rules.identity.count + 4)
        for field in fields where passes(field.name.canonicalName, rules: rules, listed: listed) {
            result.append(field)
        }
        return result
    }

    /// Whether a field named `name` (as `HTTPField.Name.canonicalName` gives it: lower-case) goes to the app.
    private static func passes(_ name: String, rules: Rules, listed: Set<String>) -> Bool {
        // Browsers' own headers, by far the most: one look-up.
        if browserRequestHeaders.contains(name) { return true }
        if name == "authorization" { return rules.passAuthorization }
        let spelled = canonical(name)
        if isReserved(spelled) || rules.identityNames.contains(spelled) || listed.contains(name) { return false }
        // A browser never sends `_`: such a name passes only when the app names it (nginx drops them all).
        if spelled != name { return rules.passed.matches(name) }
        return !rules.isStrict || name.hasPrefix(browserRequestPrefix) || rules.passed.matches(name)
    }

    /// What every request to an app carries of the gateway's instead of the browser's: not worth naming as removed.
    static let replacedByTheGateway = hopByHop.union(["cookie", "host", "content-length", "accept-encoding", "traceparent"])

    /// The names of the browser's headers that did not reach the app, but for those the gateway always replaces
    /// (`Cookie`, `Host`, framing, hop-by-hop): what the debug log names when the app refuses a request.
    static func removedNames(from fields: HTTPFields, for rules: Rules) -> [String] {
        let listed = fields.contains { $0.name == .connection } ? connectionListed(fields) : []
        return fields.compactMap { field in
            let name = field.name.canonicalName
            return replacedByTheGateway.contains(name) || passes(name, rules: rules, listed: listed) ? nil : field.name.rawName
        }
    }

    /// Where a request to an app came from: the client, and the gateway's public scheme and host. `headers` holds none
    /// of these names (`requestHeaders` never passes them), so each is appended as one field.
    static func addForwardingHeaders(_ headers: inout HTTPFields, clientAddress: String?, rules: Rules) {
        headers.append(HTTPField(name: .xForwardedFor, value: clientAddress ?? "unknown"))
        headers.append(contentsOf: rules.constantForwardingFields)
        // `for` is a node: an IPv6 address in brackets and quotes (RFC 7239 §6).
        let node = clientAddress.map { $0.containsBytes(of: ":") ? "\"[\($0)]\"" : $0 } ?? "unknown"
        headers.append(HTTPField(name: forwarded, value: "for=" + node + rules.forwardedTail))
    }

    /// Who the member is, named as the app's configuration says, with the signed assertion and the access token where
    /// the app takes them: for a request to an app, and for an ingress to copy (forward-auth). Appended as one field
    /// each, like the forwarding headers.
    static func addIdentityHeaders(
        _ headers: inout HTTPFields, identity member: MemberIdentity, chatUserID: String? = nil, rules: Rules, assertion: String? = nil,
        accessToken: String? = nil
    ) {
        if let name = rules.assertion, let assertion { headers.append(HTTPField(name: name, value: assertion)) }
        if rules.passAccessToken, let accessToken { headers.append(HTTPField(name: .authorization, value: "Bearer " + accessToken)) }
        for (fieldName, claim) in rules.identity {
            let value: String? =
                switch claim {
                case .sub: member.sub
                case .email: member.email
                case .preferredUsername: member.preferredUsername
                case .name: member.name
                case .groups: member.groups.isEmpty ? nil : member.groups.joined(separator: ",")
                case .roles: member.roles.isEmpty ? nil : member.roles.joined(separator: ",")
                case .chatUserID: chatUserID
                }
            if let value { headers.append(HTTPField(name: fieldName, value: value)) }
        }
    }

    static let traceparent = HTTPField.Name("traceparent")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwardedHost = HTTPField.Name("X-Forwarded-Host")!
    static let forwardedPrefix = HTTPField.Name("X-Forwarded-Prefix")!
    static let forwarded = HTTPField.Name("Forwarded")!

    /// The upstream's headers as the browser may see them: no hop-by-hop or `Connection`-listed fields, no
    /// `Set-Cookie2` (obsolete, and a way around the jar); cookies, CSP, lengths, `Location`, `Refresh` and `Link`
    /// are handled by the caller.
    static let handledByTheCaller: Set = ["set-cookie", "set-cookie2", "content-security-policy", "content-length", "refresh", "link"]

    public static func responseHeaders(from fields: HTTPFields) -> HTTPFields {
        let listed = fields.contains { $0.name == .connection } ? connectionListed(fields) : []
        var result = HTTPFields()
        result.reserveCapacity(fields.count + 4)
        for field in fields {
            let name = canonical(field.name)
            if droppedFromAnswers.contains(name) || (!listed.isEmpty && listed.contains(name)) { continue }
            result.append(field)
        }
        return result
    }

    /// What never goes from an answer to the browser as the app sent it, in one set: one look-up per field.
    static let droppedFromAnswers = hopByHop.union(handledByTheCaller)

    /// The encodings the gateway can decode, out of what the browser accepts: never advertise more than that.
    static func acceptEncoding(browser: AcceptEncoding) -> String? {
        let accepted = browser.codings.filter { ["gzip", "deflate"].contains($0) }
        return accepted.isEmpty ? nil : accepted.joined(separator: ", ")
    }
}
