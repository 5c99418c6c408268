import HummingbirdBcrypt
import NIOPosix

/// The PIN of the upgrade flow: 4 to 12 digits, not one digit repeated and not a straight run (`1234`, `9876`).
public enum PINRules {
    public enum Problem: String, Error, Sendable, CaseIterable {
        case notDigits
        case tooShort
        case tooLong
        case tooSimple
        case mismatch
    }

    public static let lengths = 4...12

    public static func problem(pin: String, confirmation: String) -> Problem? {
        guard pin.allSatisfy(\.isASCIIDigit) else { return .notDigits }
        if pin.count < lengths.lowerBound { return .tooShort }
        if pin.count > lengths.upperBound { return .tooLong }
        let digits = pin.compactMap(\.wholeNumberValue)
        let steps = Set(zip(digits, digits.dropFirst()).map { $1 - $0 })
        if steps.count == 1, let step = steps.first, abs(step) <= 1 { return .tooSimple }
        if pin != confirmation { return .mismatch }
        return nil
    }
}

/// bcrypt (hummingbird-auth) on the thread pool: a slow hash must not hold an event loop.
public struct PINHasher: Sendable {
    public let cost: UInt8

    public init(cost: UInt8 = 12) { self.cost = cost }

    public func hash(_ pin: String) async throws -> String {
        let cost = cost
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(pin, cost: cost) }
    }

    public func verify(_ pin: String, hash: String) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(pin, hash: hash) }
    }
}
