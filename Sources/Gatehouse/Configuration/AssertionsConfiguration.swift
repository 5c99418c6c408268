import Foundation

/// How identity assertions are signed (`assertions.*`).
public struct AssertionsConfiguration: Sendable, Equatable {
    /// A P-256 private key (PEM) that signs every assertion; without it, keys are made and kept in the store (every
    /// replica signs with the same ones) and rotated every `rotationDays`.
    public var signingKeyFile: String?
    public var rotationDays: Int

    public init(signingKeyFile: String? = nil, rotationDays: Int = 30) {
        self.signingKeyFile = signingKeyFile
        self.rotationDays = rotationDays
    }

    /// The header an app gets its assertion in, unless its configuration names another or turns it off.
    public static let defaultHeader = "X-Gatehouse-Assertion"
}
