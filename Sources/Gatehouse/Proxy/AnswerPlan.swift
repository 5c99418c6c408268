import Foundation
import GatehouseCore
import HTTPTypes
import Logging
import NIOCore

/// The member's answer to an app's answer, made the same way by both paths that proxy (the data plane's
/// `ProxiedRequest` and the application's `ProxyController`): the app's head mapped (`AnswerMapping.map`, with the
/// client cookies copied in), and the body's transform when it goes through one. Each path takes the app's cookies
/// into the jar its own way first (the state cache on an event loop, the store through the jar's queue).
struct AnswerPlan {
    let head: AnswerMapping.Head
    /// `nil` while the body goes out as it came.
    private var transform: HTMLResponseTransform?
    /// Records the banner shown, when the bar goes into the page.
    private let shown: (() -> Void)?

    fileprivate init(head: AnswerMapping.Head, transform: HTMLResponseTransform?, shown: (() -> Void)?) {
        self.head = head
        self.transform = transform
        self.shown = shown
    }

    /// The member's head, when it goes out before the body's first bytes (the body passes through as it came);
    /// `nil` when those bytes decide it (`start`).
    var headersNow: HTTPFields? { head.encoding == nil ? head.untransformedHeaders : nil }

    /// The body's first bytes (`nil`: the body is empty) decide the member's head (`AnswerMapping.Head.start`):
    /// the head, and those bytes as they go out.
    mutating func start(_ chunk: ByteBuffer?) throws -> (headers: HTTPFields, first: ByteBuffer?) {
        let (headers, first) = try head.start(chunk, transform: &transform)
        if transform != nil, head.nonce != nil { shown?() }
        return (headers, first)
    }

    /// A chunk of the app's body as the member gets it.
    mutating func body(_ chunk: ByteBuffer) throws -> ByteBuffer {
        guard transform != nil else { return chunk }
        return try transform!.process(chunk)
    }

    /// What the transform still holds when the app's body ends.
    mutating func end() -> ByteBuffer? {
        transform?.finish()
    }
}

extension AnswerMapping {
    /// The plan for the app's answer (`status`, `upstream` fields) to a request for `memberURI` of `app`, reached at
    /// `url` and rewritten by `urls`; `clientCookies`: the `Set-Cookie` copies for the browser.
    func plan(
        app: AppConfiguration, status: HTTPResponse.Status, upstream: HTTPFields, isHEAD: Bool, isNavigation: Bool, acceptsGzip: Bool,
        url: URL, urls: URLRewriter, clientCookies: [String], session: Session, memberURI: String, gatewayBase: String, bar: GatewayBar,
        logger: @autoclosure () -> Logger
    ) throws -> AnswerPlan {
        var mapped = try map(
            app: app, status: status, upstream: upstream, isHEAD: isHEAD, isNavigation: isNavigation, acceptsGzip: acceptsGzip, url: url,
            urls: urls, logger: logger())
        // In the mapped head, so that the head of a transformed body has them too.
        for copy in clientCookies { mapped.headers.append(HTTPField(name: .setCookie, value: copy)) }
        guard let encoding = mapped.encoding else { return AnswerPlan(head: mapped, transform: nil, shown: nil) }
        let transform = try self.transform(
            mapped, encoding: encoding, bar: bar, session: session, app: app, memberURI: memberURI, gatewayBase: gatewayBase, urls: urls)
        return AnswerPlan(head: mapped, transform: transform) { bar.recordShown(session: session) }
    }
}
