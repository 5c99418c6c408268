import HTTPTypes

/// An error the member can be told about: a status, a stable reason for logs, and the strings-table keys of the page.
public protocol PresentableError: Error {
    var status: HTTPResponse.Status { get }
    var reason: String { get }
    /// Prefix of `<key>_title` and `<key>_text` in the strings table.
    var messageKey: String { get }
    /// What fills the `{name}`s of `<key>_text` (a wait in seconds, say).
    var messageArguments: [String: String] { get }
    /// Whether the gateway refused the request on purpose (an app's rules, the allowlist, a rate limit, a proof asked):
    /// the audit trail records these; the rest are failures (an app down, a bad request).
    var isRefusal: Bool { get }
}

extension PresentableError {
    public var messageArguments: [String: String] { [:] }
    public var isRefusal: Bool { false }
}
