import AsyncHTTPClient
import Foundation
import NIOCore

/// One `GET` of an app's upstream address before an operator saves it in the console, through the same policy
/// (allowlist, addresses) and clients as members' requests: an upstream that does not answer, or answers its own
/// address with `404` or a server error, is worth a warning before members meet it.
struct UpstreamProbe: Sendable {
    let policy: UpstreamPolicy
    let clients: UpstreamClients
    var timeout: TimeAmount = .seconds(5)

    enum Outcome: Sendable, Equatable {
        /// The upstream answered with this status.
        case answered(Int)
        /// No answer: refused by the policy, unresolved, refused, timed out (what happened, for the operator).
        case failed(String)

        /// Whether members would find a page there (an answer that is not `404` nor a server error; a sign-in the
        /// app asks for, or a redirect, is a page).
        var isServed: Bool {
            guard case .answered(let status) = self else { return false }
            return status != 404 && status < 500
        }
    }

    func probe(_ url: URL) async -> Outcome {
        let target: UpstreamTarget
        do {
            target = try await policy.check(url)
        } catch {
            return .failed(String(describing: error))
        }
        var request = HTTPClientRequest(url: target.url.absoluteString)
        request.headers.add(name: "User-Agent", value: "Gatehouse upstream check")
        request.headers.add(name: "Accept", value: "text/html")
        switch await Forwarder.execute(request, on: clients.client(for: target), timeout: timeout, safe: true) {
        case .success(let response):
            // The body is not read: the answer's status is what counts.
            return .answered(Int(response.status.code))
        case .failure(let error):
            return .failed(String(describing: error))
        }
    }
}
