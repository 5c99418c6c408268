import Foundation
import GatehouseCore

/// Where a member may be sent after signing in: a path of the gateway's own (`ReturnTarget`), or a URL on an external
/// app's origin (forward-auth sends members signed out at the app's host here, and back to where they were). Any
/// other URL is refused: the gateway is no open redirector.
struct SignInReturns: Sendable {
    /// The external apps' origins (`AppCatalog.externalOrigins`).
    let externalOrigins: [String]

    /// `candidate` when it is one of those, else `nil`. An external URL must be exactly an app's origin followed by a
    /// path a `ReturnTarget` accepts: `https://wiki.example.org.evil.example/`, `https://wiki.example.org@evil/` and
    /// `https://wiki.example.org//evil` are refused.
    func accept(_ candidate: String?) -> String? {
        guard let candidate else { return nil }
        if let path = ReturnTarget(candidate) { return path.path }
        for origin in externalOrigins where candidate.hasPrefix(origin + "/") {
            if ReturnTarget.isAcceptable(String(candidate.dropFirst(origin.count))) { return candidate }
        }
        return nil
    }
}
