import Foundation
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP client for framing tests: sends bytes exactly as given and reads whatever comes back until the
/// server closes or `timeout` passes, so a hang shows as "not closed".
struct RawSocket {
    struct Outcome {
        var bytes: [UInt8]
        var closed: Bool
        var elapsed: Duration
        var text: String { String(decoding: bytes, as: UTF8.self) }
        var status: Int? {
            guard text.hasPrefix("HTTP/1.1 ") || text.hasPrefix("HTTP/1.0 ") else { return nil }
            return Int(text.dropFirst(9).prefix(3))
        }
    }

    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            Glibc.close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Sends all of `bytes`; a server that closed early makes the rest fail quietly (it answered already).
    func send(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            sent += count
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads until the peer closes or `timeout` passes, on NIO's blocking pool: blocking one of the two Swift worker
    /// threads would slow the gateway under test (in the same process) and make its time bounds fail.
    func readUntilClosed(timeout: Duration) async -> Outcome {
        let socket = self
        return (try? await BlockingWork.run { socket.blockingReadUntilClosed(timeout: timeout) })
            ?? Outcome(bytes: [], closed: false, elapsed: .zero)
    }

    func blockingReadUntilClosed(timeout: Duration) -> Outcome {
        let started = ContinuousClock.now
        var received: [UInt8] = []
        var closed = false
        var buffer = [UInt8](repeating: 0, count: 65536)
        while ContinuousClock.now - started < timeout {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = timeout - (ContinuousClock.now - started)
            let milliseconds = Int32(max(1, remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000))
            guard poll(&poller, 1, milliseconds) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 {
                closed = true  // orderly close, or a reset after the answer
                break
            }
            received += buffer[..<count]
        }
        return Outcome(bytes: received, closed: closed, elapsed: ContinuousClock.now - started)
    }

    func close() { Glibc.close(fd) }

    /// One connection: send, read to the end, close.
    static func exchange(port: Int, _ bytes: [UInt8], timeout: Duration = .seconds(3)) async throws -> Outcome {
        let socket = try RawSocket(port: port)
        defer { socket.close() }
        socket.send(bytes)
        return await socket.readUntilClosed(timeout: timeout)
    }
}
