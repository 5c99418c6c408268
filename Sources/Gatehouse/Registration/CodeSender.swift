import AsyncHTTPClient
import Foundation
import GatehouseCore
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// A verification code on its way to a member.
public struct VerificationMessage: Sendable, Equatable {
    public var sub: String
    public var phoneNumber: PhoneNumber
    public var code: String
    /// The text for an SMS or e-mail, from the strings table.
    public var text: String
    public var expiresAt: Date
}

/// Why a code did not leave; the member sees one clear message, the log sees this.
public enum CodeSendError: Error, Equatable, CustomStringConvertible {
    case unreachable(String)
    case rejected(status: Int)

    public var description: String {
        switch self {
        case .unreachable(let detail): "code sender unreachable: \(detail)"
        case .rejected(let status): "code sender answered HTTP \(status)"
        }
    }
}

/// Delivers verification codes; chosen by `registration.code_sender.kind`.
public protocol CodeSender: Sendable {
    func send(_ message: VerificationMessage) async throws(CodeSendError)
}

/// Development: the code goes to the log and, in development mode, to the development inbox page.
public struct LogCodeSender: CodeSender {
    let inbox: DevelopmentInbox?
    let logger: Logger

    public init(inbox: DevelopmentInbox?, logger: Logger) {
        self.inbox = inbox
        self.logger = logger
    }

    public func send(_ message: VerificationMessage) async throws(CodeSendError) {
        // The code itself is never logged: it is read from the development inbox page.
        logger.notice("verification code issued (development inbox)", metadata: ["sub": .string(message.sub)])
        inbox?.deliver(message)
    }
}

/// The last messages of the development sender, per member, in memory: a page to read codes from in development.
public final class DevelopmentInbox: Sendable {
    private let messages = NIOLockedValueBox<[VerificationMessage]>([])
    static let capacity = 100

    public init() {}

    func deliver(_ message: VerificationMessage) {
        messages.withLockedValue { list in
            list.append(message)
            if list.count > Self.capacity { list.removeFirst(list.count - Self.capacity) }
        }
    }

    /// Newest first.
    public func messages(for sub: String) -> [VerificationMessage] {
        messages.withLockedValue { $0.filter { $0.sub == sub }.reversed() }
    }
}

/// Production: POSTs `{"to", "code", "message", "expires_at"}` as JSON to an SMS or e-mail API.
public struct HTTPCodeSender: CodeSender {
    let http: HTTPClient
    let configuration: HTTPEndpointConfiguration

    public init(http: HTTPClient, configuration: HTTPEndpointConfiguration) {
        self.http = http
        self.configuration = configuration
    }

    public func send(_ message: VerificationMessage) async throws(CodeSendError) {
        let body: [String: Any] = [
            "to": message.phoneNumber.e164, "code": message.code, "message": message.text,
            "expires_at": ISO8601DateFormatter().string(from: message.expiresAt),
        ]
        let status: Int
        do {
            status = try await configuration.post(json: body, using: http)
        } catch {
            throw .unreachable(String(describing: error))
        }
        guard (200..<300).contains(status) else { throw .rejected(status: status) }
    }
}

extension HTTPEndpointConfiguration {
    /// POSTs a JSON object with the configured authorization header and timeout; the answer's status.
    func post(json object: [String: Any], using http: HTTPClient) async throws -> Int {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Gatehouse")
        if let authorization { request.headers.add(name: authorizationHeader, value: authorization) }
        request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        let response = try await http.execute(request, timeout: .seconds(Int64(timeoutSeconds)))
        // The answer is not needed; read a little of it so the connection goes back to the pool.
        _ = try? await response.body.collect(upTo: 64 * 1024)
        return Int(response.status.code)
    }
}
