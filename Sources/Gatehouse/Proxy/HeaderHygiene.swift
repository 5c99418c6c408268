import Foundation
import GatehouseCore
import HTTPTypes

/// Which headers cross the gateway, in either direction.
///
/// Towards an app the rule is an allowlist: what browsers legitimately send (content negotiation, caching,
/// conditional and range requests, fetch metadata, client hints), plus what the app's configuration passes, plus the
/// gateway's own forwarding and identity headers. Anything else a client sends (`X-Webauth-User`, `X-Original-URL`,
/// `CF-Connecting-IP`, whatever an app might trust next) never reaches the app.
public enum HeaderHygiene {
    /// RFC 9110 §7.6.1 connection-specific fields, plus those HTTP/1.1 proxies conventionally drop.
    static let hopByHop: Set = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade",
    ]

    /// Request headers browsers send on their own account, passed to every app.
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

    /// Names the gateway sets itself on every forwarded request; they can never be passed from the browser.
    static let forwardingNames: Set = ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-prefix", "x-forwarded-port"]
    /// Names no configuration can pass from the browser: the gateway decides them (the jar, the upstream's host,
    /// framing) or they belong to the hop.
    static let neverPassed: Set = ["cookie", "host", "content-length", "accept-encoding", "authorization", "forwarded"]

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

    /// Why an app's `pass_headers` entry cannot be honoured, or `nil` when it can (reported by configuration validation).
    public static func problem(passing name: String, identityNames: some Sequence<String>) -> String? {
        let lowered = canonical(name)
        guard HTTPField.Name(name) != nil else { return "is not a header name" }
        if lowered == "authorization" { return "use pass_authorization for the Authorization header" }
        if hopByHop.contains(lowered) || neverPassed.contains(lowered) || forwardingNames.contains(lowered) {
            return "is set by the gateway itself and cannot be passed from the browser"
        }
        if identityNames.contains(where: { canonical($0) == lowered }) { return "is an identity header the gateway sets for this app" }
        return nil
    }

    /// An app's header configuration as the request path reads it, worked out once per app: the canonical names it
    /// passes and the identity headers it gets (in name order), and the gateway's public scheme and host.
    struct Rules: Sendable {
        let passed: Set<String>
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

        init(_ rules: AppHeaderConfiguration, publicURL: URL, pageHost: String? = nil, prefix: String? = nil) {
            passed = Set(rules.passHeaders.map(canonical))
            // The assertion's name counts as an identity header: nobody but the gateway sets it.
            identityNames = Set((Array(rules.identity.keys) + (rules.assertion.map { [$0] } ?? [])).map(canonical))
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

    /// The browser's headers as `app` may see them: the browser's ordinary headers and what the app passes, minus
    /// hop-by-hop and `Connection`-listed fields. Cookies come from the jar, `Host` from the upstream URL, identity
    /// from `addIdentityHeaders`.
    static func requestHeaders(from fields: HTTPFields, for rules: Rules) -> HTTPFields {
        let listed = fields.contains { $0.name == .connection } ? connectionListed(fields) : []
        var result = HTTPFields()
        result.reserveCapacity(fields.count + rules.identity.count + 4)
        for field in fields {
            // The spelling as sent, not with `_` read as `-`: a browser never sends `_`, so such a name is dropped.
            let name = field.name.canonicalName
            if droppedFromRequests.contains(name) || (!listed.isEmpty && listed.contains(name)) || rules.identityNames.contains(canonical(name)) {
                continue
            }
            let ordinary = browserRequestHeaders.contains(name) || name.hasPrefix(browserRequestPrefix)
            if ordinary || rules.passed.contains(name) || (name == "authorization" && rules.passAuthorization) {
                result.append(field)
            }
        }
        return result
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

    /// Hop-by-hop and forwarding names in one set: one look-up per field of a request.
    static let droppedFromRequests = hopByHop.union(forwardingNames)

    /// What never goes from an answer to the browser as the app sent it, in one set: one look-up per field.
    static let droppedFromAnswers = hopByHop.union(handledByTheCaller)

    /// The encodings the gateway can decode, out of what the browser accepts: never advertise more than that.
    static func acceptEncoding(browser: AcceptEncoding) -> String? {
        let accepted = browser.codings.filter { ["gzip", "deflate"].contains($0) }
        return accepted.isEmpty ? nil : accepted.joined(separator: ", ")
    }
}
