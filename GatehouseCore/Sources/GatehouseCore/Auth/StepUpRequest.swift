import Foundation

/// What a sign-in again asks the provider for (OpenID Connect Core §3.1.2.1): an authentication no older than `maxAge`
/// seconds (sent with `prompt=login` too, for providers that ignore `max_age`), of one of the `acr` classes.
public struct StepUpRequest: Sendable, Codable, Equatable {
    public var maxAge: Int?
    public var acr: [String]

    public init(maxAge: Int?, acr: [String] = []) {
        self.maxAge = maxAge
        self.acr = acr
    }

    /// The request's parameters as the gateway's own sign-in link carries them (`max_age`, `acr`), read back with
    /// `init(parsing:acr:)`.
    public var queryPairs: [(String, String)] {
        (maxAge.map { [("max_age", String($0))] } ?? []) + (acr.isEmpty ? [] : [("acr", acr.joined(separator: " "))])
    }

    /// From a sign-in link: `max_age` a number of seconds up to a day, `acr` up to eight space-separated class names;
    /// `nil` when the link asks for neither, or for something unreadable.
    public init?(parsing maxAge: String?, acr: String?) {
        var seconds: Int?
        if let maxAge {
            guard let value = Int(maxAge), (0...86_400).contains(value) else { return nil }
            seconds = value
        }
        let classes = (acr ?? "").split(separator: " ").map(String.init)
        guard classes.count <= 8, classes.allSatisfy(Self.isClassName) else { return nil }
        guard seconds != nil || !classes.isEmpty else { return nil }
        self.init(maxAge: seconds, acr: classes)
    }

    /// An `acr` value as providers write them: a name or a URI of at most 128 visible ASCII characters.
    static func isClassName(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count) && text.utf8.allSatisfy { (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\"") }
    }
}
