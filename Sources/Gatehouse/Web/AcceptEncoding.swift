import Foundation

/// What a browser's `Accept-Encoding` says it takes.
enum AcceptEncoding {
    /// Whether it takes a gzipped answer (`gzip`, `x-gzip` or `*`, not refused with `q=0`).
    static func takesGzip(_ value: String?) -> Bool {
        codings(value).contains { $0 == "gzip" || $0 == "x-gzip" || $0 == "*" }
    }

    /// The codings it names, lowercased, without those it refuses (`q=0`).
    static func codings(_ value: String?) -> [String] {
        guard let value else { return [] }
        return value.lowercased().split(separator: ",").compactMap { part -> String? in
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let coding = pieces.first, !coding.isEmpty else { return nil }
            let refused = pieces.dropFirst().contains { piece in
                let parameter = piece.replacingOccurrences(of: " ", with: "")
                return parameter.hasPrefix("q=") && Double(parameter.dropFirst(2)) == 0
            }
            return refused ? nil : coding
        }
    }
}
