import Foundation

/// The apps a member opened last, newest first: the portal lists them first. They are kept with the member at the
/// gateway (`MemberStore`), not in the browser, so that they outlast every sign-out (which clears the browser's
/// cookies and storage for the next person at a shared computer) and follow the member to another browser; they are
/// read back only as slugs of the catalog the member may see.
struct RecentApps: Equatable {
    /// How many the portal lists first.
    static let limit = 4
    /// A year after the member was last seen, what is remembered of them is forgotten.
    static let lifetime: TimeInterval = 365 * 24 * 3600

    private(set) var slugs: [String]

    init(slugs: [String] = []) {
        var kept: [String] = []
        for slug in slugs where AppConfiguration.isSlug(slug) && !kept.contains(slug) && kept.count < Self.limit { kept.append(slug) }
        self.slugs = kept
    }

    /// The history with `slug` in front.
    func opening(_ slug: String) -> RecentApps {
        RecentApps(slugs: [slug] + slugs.filter { $0 != slug })
    }
}
