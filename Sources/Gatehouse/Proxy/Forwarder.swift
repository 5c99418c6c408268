import AsyncAlgorithms
import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Sends one request upstream on the shared, pooled HTTP client and hands back the response head with its body
/// still streaming. Never follows redirects, never decompresses on its own.
public struct Forwarder: Sendable {
    let clients: UpstreamClients
    let configuration: ProxyConfiguration

    public init(clients: UpstreamClients, configuration: ProxyConfiguration) {
        self.clients = clients
        self.configuration = configuration
    }

    /// Methods that change nothing: one whose kept-alive connection the app closed as it was reused is sent again.
    static func safe(_ method: HTTPRequest.Method) -> Bool {
        method == .get || method == .head || method == .options
    }

    /// A request without a body. A pooled connection the app closed just as it was taken (its idle timeout, its
    /// request limit) fails before any answer; a safe request is then sent once more on another connection, as the
    /// data plane does and nginx's `proxy_next_upstream error` would.
    static func execute(_ request: HTTPClientRequest, on http: HTTPClient, timeout: TimeAmount, safe: Bool) async -> Result<
        HTTPClientResponse, any Error
    > {
        do {
            return .success(try await http.execute(request, timeout: timeout))
        } catch  where safe && closedUnderfoot(error) {
            do {
                return .success(try await http.execute(request, timeout: timeout))
            } catch {
                return .failure(error)
            }
        } catch {
            return .failure(error)
        }
    }

    /// The ways a connection closed by the app as it was reused fails, as the soak saw them: closed before the
    /// answer, reset, or already closed when the request was written.
    static func closedUnderfoot(_ error: any Error) -> Bool {
        switch error {
        case let error as HTTPClientError: error == .remoteConnectionClosed
        case let error as IOError: error.errnoCode == ECONNRESET || error.errnoCode == EPIPE
        case let error as ChannelError: error == .ioOnClosedChannel || error == .alreadyClosed
        default: false
        }
    }

    public struct Upstream: Sendable {
        public var status: HTTPResponse.Status
        public var headers: HTTPFields
        public var body: HTTPClientResponse.Body
    }

    /// Sends `method` to the checked `target` with `headers` and the browser's `body`, copied through a channel this
    /// call owns: handing `request.body` to the client directly crashes Hummingbird when the upstream answers before
    /// reading it all. A request with a body contacts the upstream only once the body's first bytes (or its end)
    /// arrived intact, so a malformed body is refused before any request head goes upstream.
    public func send(method: HTTPRequest.Method, target: UpstreamTarget, headers: HTTPFields, body: RequestBody?, contentLength: Int?)
        async throws(ProxyError) -> Upstream
    {
        if let contentLength, contentLength > configuration.maximumRequestBodyBytes {
            throw .requestBodyTooLarge(configuration.maximumRequestBodyBytes)
        }
        var request = HTTPClientRequest(url: target.url.absoluteString)
        request.method = HTTPMethod(rawValue: method.rawValue)
        for field in headers { request.headers.add(name: field.name.rawName, value: field.value) }

        /// Copies the upload; it ends when the upload is over, which is when the app's time to answer starts.
        var pump: Task<Void, Never>?
        if let body, method != .get, method != .head {
            let channel = AsyncThrowingChannel<ByteBuffer, any Error>()
            let (started, startedContinuation) = AsyncStream<(any Error)?>.makeStream()
            let limit = configuration.maximumRequestBodyBytes
            pump = Task {
                do {
                    var total = 0
                    var isFirst = true
                    for try await chunk in body {
                        total += chunk.readableBytes
                        if total > limit { throw ProxyError.requestBodyTooLarge(limit) }
                        if isFirst {
                            startedContinuation.yield(nil)
                            isFirst = false
                        }
                        await channel.send(chunk)
                    }
                    startedContinuation.yield(nil)
                    channel.finish()
                } catch {
                    startedContinuation.yield(error)
                    // Stopped because the app answered before reading it all: an upload of no stated length ends here
                    // (the app has its answer out and did not wait for the rest). Failing it would fail the answer with
                    // it: the client fails the whole exchange when its request's body fails.
                    if Task.isCancelled, contentLength == nil { channel.finish() } else { channel.fail(error) }
                }
                startedContinuation.finish()
            }
            var first = started.makeAsyncIterator()
            if case .some(.some(let error)) = await first.next() {
                await pump?.value
                throw error as? ProxyError ?? .requestBodyInvalid("\(error)")
            }
            request.body = .stream(channel, length: contentLength.map { .known(Int64($0)) } ?? .unknown)
        }
        let http = await clients.client(for: target)
        let outcome: Result<HTTPClientResponse, any Error>
        if let pump {
            outcome = await Self.execute(request, on: http, answerWithin: .seconds(configuration.readTimeoutSeconds), afterUpload: pump)
        } else {
            outcome = await Self.execute(request, on: http, timeout: .seconds(Int64(configuration.readTimeoutSeconds)), safe: Self.safe(method))
        }
        // The upstream has answered (or failed): what it did not read of the upload is not read from the browser
        // either, and the copy is over before Hummingbird drains the rest of the request itself.
        pump?.cancel()
        await pump?.value
        switch outcome {
        case .success(let response):
            var fields = HTTPFields()
            for header in response.headers {
                if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
            }
            return Upstream(status: HTTPResponse.Status(code: Int(response.status.code)), headers: fields, body: response.body)
        case .failure(let error as ProxyError):
            throw error
        case .failure(let error as HTTPClientError) where error == .deadlineExceeded || error == .readTimeout:
            // The app took the connection but not its time: slow, which is not the same as down.
            throw .upstreamTimeout("\(target.host): \(error)")
        case .failure(let error as HTTPClientError) where error == .remoteConnectionClosed:
            throw .upstreamReset("\(target.host): \(error)")
        case .failure(let error as IOError) where error.errnoCode == ECONNRESET || error.errnoCode == EPIPE:
            throw .upstreamReset("\(target.host): \(error)")
        case .failure(let error):
            throw .upstreamUnreachable("\(target.host): \(error)")
        }
    }

    /// Runs an exchange whose request has a body, giving the app `answerWithin` to answer from the moment the upload
    /// is over: while the member's browser is still sending (slowly, on a bad line), the app cannot answer yet and is
    /// not to blame. A stalled upload is the listener's business (its body deadline). Past the limit the exchange is
    /// cancelled and reported as `deadlineExceeded`, as a request without a body would be.
    static func execute(
        _ request: HTTPClientRequest, on http: HTTPClient, answerWithin limit: Duration, afterUpload upload: Task<Void, Never>
    ) async -> Result<HTTPClientResponse, any Error> {
        let timedOut = NIOLockedValueBox(false)
        let exchange = Task { try await http.execute(request, deadline: .distantFuture) }
        let watchdog = Task {
            await upload.value
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            timedOut.withLockedValue { $0 = true }
            exchange.cancel()
        }
        defer { watchdog.cancel() }
        let result: Result<HTTPClientResponse, any Error> = await withTaskCancellationHandler {
            do {
                return .success(try await exchange.value)
            } catch {
                return .failure(error)
            }
        } onCancel: {
            exchange.cancel()
        }
        if case .failure = result, timedOut.withLockedValue({ $0 }) { return .failure(HTTPClientError.deadlineExceeded) }
        return result
    }
}
