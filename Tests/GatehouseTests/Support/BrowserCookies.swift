/// A tiny cookie store for the flows: name → value, honouring `Max-Age=0` deletions.
struct BrowserCookies {
    var values: [String: String] = [:]

    mutating func absorb(_ reply: LiveGateway.Reply) {
        for header in reply.setCookies {
            let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(pair[0])
            let value = pair.count > 1 ? String(pair[1]) : ""
            if header.contains("Max-Age=0") || value.isEmpty { values[name] = nil } else { values[name] = value }
        }
    }
}
