import HTTPTypes

/// Which headers cross the gateway, in either direction.
public enum HeaderHygiene {
    /// RFC 9110 §7.6.1 connection-specific fields, plus those HTTP/1.1 proxies conventionally drop.
    static let hopByHop: Set = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade",
    ]

    /// Identity a client could claim for itself; the gateway removes them all and adds its own.
    static let identityPrefixes = ["x-forwarded-", "x-auth-request-", "x-remote-", "x-real-", "x-gatehouse-"]
    static let identityNames: Set = ["forwarded", "remote-user", "x-user", "x-email", "x-client-ip", "true-client-ip", "client-ip"]

    /// Lower-case with `_` read as `-`: `X_Forwarded_User` is `x-forwarded-user` to many upstream frameworks.
    static func canonical(_ name: HTTPField.Name) -> String {
        name.canonicalName.replacingOccurrences(of: "_", with: "-")
    }

    static func connectionListed(_ fields: HTTPFields) -> Set<String> {
        Set(fields[values: .connection].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
    }

    static func isIdentityHeader(_ name: String) -> Bool {
        identityNames.contains(name) || identityPrefixes.contains { name.hasPrefix($0) }
    }

    /// The browser's headers as the upstream may see them: no hop-by-hop or `Connection`-listed fields, no
    /// identity claims, no cookies (the jar supplies those), no `Host` (the upstream's own is set).
    public static func requestHeaders(from fields: HTTPFields) -> HTTPFields {
        let listed = connectionListed(fields)
        var result = HTTPFields()
        for field in fields {
            let name = canonical(field.name)
            if hopByHop.contains(name) || listed.contains(name) || isIdentityHeader(name) { continue }
            if name == "cookie" || name == "host" || name == "accept-encoding" || name == "content-length" { continue }
            result.append(field)
        }
        return result
    }

    /// The upstream's headers as the browser may see them: no hop-by-hop or `Connection`-listed fields; cookies,
    /// CSP and lengths are handled by the caller.
    public static func responseHeaders(from fields: HTTPFields) -> HTTPFields {
        let listed = connectionListed(fields)
        var result = HTTPFields()
        for field in fields {
            let name = canonical(field.name)
            if hopByHop.contains(name) || listed.contains(name) { continue }
            if name == "set-cookie" || name == "content-security-policy" || name == "content-length" { continue }
            result.append(field)
        }
        return result
    }

    /// The encodings the gateway can decode, out of what the browser accepts: never advertise more than that.
    public static func acceptEncoding(browser value: String?) -> String? {
        guard let value else { return nil }
        let accepted = value.lowercased().split(separator: ",").compactMap { part -> String? in
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let coding = pieces.first, ["gzip", "deflate"].contains(coding) else { return nil }
            if pieces.dropFirst().contains(where: { $0.replacingOccurrences(of: " ", with: "") == "q=0" }) { return nil }
            return coding
        }
        return accepted.isEmpty ? nil : accepted.joined(separator: ", ")
    }
}
