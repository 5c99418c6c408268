import Foundation

/// What a browser's `Accept-Encoding` says it takes, read once per request.
struct AcceptEncoding {
    /// The codings it names, lowercased, without those it refuses (`q=0`).
    let codings: [String]

    init(_ value: String?) {
        guard let value else {
            codings = []
            return
        }
        codings = value.lowercased().split(separator: ",").compactMap { part -> String? in
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let coding = pieces.first, !coding.isEmpty else { return nil }
            let refused = pieces.dropFirst().contains { piece in
                let parameter = piece.replacingOccurrences(of: " ", with: "")
                return parameter.hasPrefix("q=") && Double(parameter.dropFirst(2)) == 0
            }
            return refused ? nil : coding
        }
    }

    /// Whether it takes a gzipped answer (`gzip`, `x-gzip` or `*`).
    var takesGzip: Bool { codings.contains { $0 == "gzip" || $0 == "x-gzip" || $0 == "*" } }
}
