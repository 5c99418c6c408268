import Foundation

/// Counts JWKS fetches and serves whatever the test put there.
actor JWKSSource {
    var document: Data
    private(set) var fetches = 0
    init(_ document: Data) { self.document = document }
    func fetch() -> Data {
        fetches += 1
        return document
    }
    func replace(_ document: Data) { self.document = document }
}
