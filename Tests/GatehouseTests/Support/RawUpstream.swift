import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#endif

/// An app on plain blocking sockets, each connection on a thread of its own: every request (a head, no body) gets the
/// same answer. Nothing of it runs on an event loop, so what the gateway's loops do for a request can be told apart
/// from what the app does (the allocation test counts the loops' allocations only).
final class RawUpstream: Sendable {
    let port: Int
    private let listener: Int32
    private let answer: [UInt8]
    private let connections = NIOLockedValueBox<[Int32]>([])

    var origin: String { "http://127.0.0.1:\(port)" }

    /// `answer` is sent, whole, for each request read.
    init(answer: [UInt8]) throws {
        self.answer = answer
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound, listen(listener, 64) == 0 else {
            Glibc.close(listener)
            throw POSIXError(.EADDRINUSE)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Stops listening and closes every connection (their threads end on the next read).
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        for connection in connections.withLockedValue({ $0 }) { shutdown(connection, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            connections.withLockedValue { $0.append(connection) }
            Thread.detachNewThread { [self] in serve(connection) }
        }
    }

    private func serve(_ connection: Int32) {
        defer { Glibc.close(connection) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        let endOfHead: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            pending += buffer[..<count]
            while let end = pending.firstRange(of: endOfHead) {
                pending.removeSubrange(..<end.upperBound)
                var sent = 0
                while sent < answer.count {
                    let written = answer[sent...].withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    guard written > 0 else { return }
                    sent += written
                }
            }
        }
    }
}
