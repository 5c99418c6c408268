import Crypto
import Foundation
import GatehouseCore
import Hummingbird

/// The apps a member opened last on this browser, newest first, in a cookie of the gateway's (`gatehouse_recent`):
/// the portal lists them first. The cookie carries a tag of the member's subject, so that on a shared browser the
/// next member starts with no history instead of another's; it holds slugs only (never names, never URLs), and is
/// read back only as slugs of the catalog the member may see.
struct RecentApps: Equatable {
    static let cookieName = "gatehouse_recent"
    /// How many the portal lists first.
    static let limit = 4
    /// A year: the order of a member's apps outlives any one session.
    static let lifetime = 365 * 24 * 3600

    private(set) var slugs: [String]

    init(slugs: [String] = []) { self.slugs = slugs }

    /// The history in `cookie` if it is this member's; empty otherwise (another member's, or made up).
    init(cookie: String?, member: MemberIdentity) {
        let parts = cookie?.split(separator: ".", omittingEmptySubsequences: false) ?? []
        guard let tag = parts.first, tag == Self.tag(member) else {
            self.init()
            return
        }
        var slugs: [String] = []
        for slug in parts.dropFirst().prefix(Self.limit) where Self.isSlug(slug) && !slugs.contains(String(slug)) {
            slugs.append(String(slug))
        }
        self.init(slugs: slugs)
    }

    /// The history the request's cookie holds for `member`.
    init(_ request: Request, member: MemberIdentity) {
        self.init(cookie: request.cookies[Self.cookieName]?.value, member: member)
    }

    /// The history with `slug` in front.
    func opening(_ slug: String) -> RecentApps {
        RecentApps(slugs: Array(([slug] + slugs.filter { $0 != slug }).prefix(Self.limit)))
    }

    func cookieValue(member: MemberIdentity) -> String {
        ([Self.tag(member)] + slugs).joined(separator: ".")
    }

    /// 12 hex digits of the subject's SHA-256: enough to tell members of one browser apart, too few to look anyone up.
    static func tag(_ member: MemberIdentity) -> String {
        SHA256.hash(data: Data(("gatehouse-recent:" + member.sub).utf8)).withUnsafeBytes { String(lowerHex: UnsafeRawBufferPointer(rebasing: $0.prefix(6))) }
    }

    static func isSlug(_ text: Substring) -> Bool {
        (1...40).contains(text.utf8.count) && text.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
    }
}
