import Foundation

/// An app's rules per path (`apps[].rules`): an ordered list, the first rule whose paths and methods match decides,
/// then the app's own requirements still apply. Paths are compared normalized, as an app might read them (see
/// `normalize`), so that no spelling of a path slips past a rule written for another.
public struct PathRules: Sendable, Equatable {
    public struct Rule: Sendable, Equatable {
        public enum Action: String, Sendable, CaseIterable {
            case allow, deny
        }

        /// Normalized patterns: `/admin` (that path), `/admin/*` (it and everything under it), `/*` (everything).
        public var paths: [String]
        /// Upper-case methods; empty: any.
        public var methods: [String]
        public var require: Requirement
        public var action: Action

        public init(paths: [String], methods: [String] = [], require: Requirement = .init(), action: Action = .allow) {
            self.paths = paths
            self.methods = methods.map { $0.uppercased() }
            self.require = require
            self.action = action
        }
    }

    /// What a member needs for an `allow` rule: at least `level`, every role, one of the groups, for each claim one of
    /// its values, an address in one of `networks`; and, proved recently enough, a sign-in at the provider
    /// (`authAgeSeconds`, with one of the `acr` classes) and the upgrade PIN (`pinAgeSeconds`).
    public struct Requirement: Sendable, Equatable {
        public var level: AuthLevel?
        public var roles: [String]
        public var groups: [String]
        public var claims: [String: [String]]
        /// The client's address as the trusted proxies report it must be in one of these (none: anywhere).
        public var networks: [IPNetwork]
        /// The member's last authentication at the provider no older than this.
        public var authAgeSeconds: Int?
        /// One of these authentication context classes (Keycloak's levels of authentication), as the provider
        /// reported it.
        public var acr: [String]
        /// The upgrade PIN entered at the gateway no longer ago than this; a member without one (at `sso`) signs in
        /// at the provider again instead.
        public var pinAgeSeconds: Int?

        /// The claims a rule may name: those the gateway keeps of the member.
        public static let claimNames: Set = ["sub", "email", "preferred_username", "name"]

        public init(
            level: AuthLevel? = nil, roles: [String] = [], groups: [String] = [], claims: [String: [String]] = [:], networks: [IPNetwork] = [],
            authAgeSeconds: Int? = nil, acr: [String] = [], pinAgeSeconds: Int? = nil
        ) {
            self.level = level
            self.roles = roles
            self.groups = groups
            self.claims = claims
            self.networks = networks
            self.authAgeSeconds = authAgeSeconds
            self.acr = acr
            self.pinAgeSeconds = pinAgeSeconds
        }

        /// What the member of `session` lacks at `moment`, or `nil` when they meet it all. What no sign-in can change
        /// (roles, groups, claims, the network) comes before what a step-up would (a recent sign-in, then the PIN).
        public func lacking(_ session: Session, at moment: AccessMoment) -> Lack? {
            let identity = session.identity
            if let level, session.level < level { return .level(level) }
            if let role = roles.first(where: { !identity.roles.contains($0) }) { return .role(role) }
            if !groups.isEmpty && !groups.contains(where: { Self.isMember(identity.groups, of: $0) }) { return .group(groups) }
            for (claim, accepted) in claims.sorted(by: { $0.key < $1.key }) {
                let value: String? =
                    switch claim {
                    case "sub": identity.sub
                    case "email": identity.email
                    case "preferred_username": identity.preferredUsername
                    case "name": identity.name
                    default: nil
                    }
                if !accepted.contains(where: { $0 == value }) { return .claim(claim) }
            }
            if !networks.isEmpty {
                guard let client = moment.client, networks.contains(where: { $0.contains(client) }) else { return .network }
            }
            guard moment.checksFreshness else { return nil }
            let assurance = session.assurance ?? Assurance()
            // A member without a PIN proves themselves at the provider instead, as recently.
            let pinIsTheirs = session.level >= .registered
            let maxAge = [authAgeSeconds, pinIsTheirs ? nil : pinAgeSeconds].compactMap { $0 }.min()
            let ageMet = maxAge.map { Assurance.isRecent(assurance.authenticatedAt, within: $0, now: moment.now) } ?? true
            let acrMet = acr.isEmpty || assurance.acr.map(acr.contains) == true
            if !ageMet || !acrMet { return .recentSignIn(StepUpRequest(maxAge: ageMet ? nil : maxAge, acr: acrMet ? [] : acr)) }
            if pinIsTheirs, let pinAgeSeconds, !Assurance.isRecent(assurance.pinVerifiedAt, within: pinAgeSeconds, now: moment.now) {
                return .pin(pinAgeSeconds)
            }
            return nil
        }

        /// Keycloak writes groups as paths (`/team`); a configuration may name them either way.
        public static func isMember(_ groups: [String], of required: String) -> Bool {
            groups.contains { $0 == required || $0 == "/" + required || ($0.hasPrefix("/") && required == String($0.dropFirst())) }
        }

        /// Every required role, and at least one required group if any are required: what an app, the upgrade and a
        /// chat feature ask of a member.
        public static func meets(requiredRoles: [String], requiredGroups: [String], roles: [String], groups: [String]) -> Bool {
            requiredRoles.allSatisfy(roles.contains) && (requiredGroups.isEmpty || requiredGroups.contains { isMember(groups, of: $0) })
        }
    }

    public enum Lack: Sendable, Equatable {
        case level(AuthLevel)
        case role(String)
        case group([String])
        case claim(String)
        /// The client's address is in none of the rule's networks.
        case network
        /// A sign-in at the provider, recent enough or of the right class: what to ask it for.
        case recentSignIn(StepUpRequest)
        /// The upgrade PIN, entered within this many seconds.
        case pin(Int)

        /// What the member can prove again (a sign-in, the PIN), as against what they are or are not.
        public var isProof: Bool {
            switch self {
            case .recentSignIn, .pin: true
            default: false
            }
        }
    }

    public enum Verdict: Sendable, Equatable {
        /// No rule matched: the app's own requirements decide.
        case noRule
        case allowed
        /// A `deny` rule matched.
        case denied
        /// An `allow` rule matched, and the member lacks what it requires.
        case lacking(Lack)
        /// The path cannot be read as any app would read it (a bad escape, a NUL): refused.
        case unreadable
    }

    public var rules: [Rule]
    /// The app reads paths without regard to case (`/Admin` is `/admin`).
    public var caseInsensitive: Bool

    public init(_ rules: [Rule] = [], caseInsensitive: Bool = false) {
        self.rules = rules
        self.caseInsensitive = caseInsensitive
    }

    public var isEmpty: Bool { rules.isEmpty }

    /// Whether a rule names networks: only then does a decision need the client's address.
    public var namesNetworks: Bool { rules.contains { !$0.require.networks.isEmpty } }

    public func decide(path: String, method: String, session: Session, at moment: AccessMoment) -> Verdict {
        guard !rules.isEmpty else { return .noRule }
        guard let normalized = Self.normalize(path, caseInsensitive: caseInsensitive) else { return .unreadable }
        let method = method.uppercased()
        guard
            let rule = rules.first(where: { rule in
                (rule.methods.isEmpty || rule.methods.contains(method)) && rule.paths.contains { Self.matches(normalized, pattern: $0) }
            })
        else { return .noRule }
        switch rule.action {
        case .deny: return .denied
        case .allow: return rule.require.lacking(session, at: moment).map { .lacking($0) } ?? .allowed
        }
    }

    /// A pattern as rules compare it: normalized like a path, `/*` kept as the mark of a subtree; `nil` when it is
    /// not a path.
    public static func normalizePattern(_ pattern: String, caseInsensitive: Bool) -> String? {
        guard pattern.hasPrefix("/") else { return nil }
        if pattern == "/*" { return "/*" }
        let subtree = pattern.hasSuffix("/*")
        guard let base = normalize(subtree ? String(pattern.dropLast(2)) : pattern, caseInsensitive: caseInsensitive), !base.contains("*") else {
            return nil
        }
        return subtree ? (base == "/" ? "/*" : base + "/*") : base
    }

    static func matches(_ path: String, pattern: String) -> Bool {
        if pattern == "/*" { return true }
        if pattern.hasSuffix("/*") {
            let base = pattern.dropLast(2)
            return path == base || path.hasPrefix(base + "/")
        }
        return path == pattern
    }

    /// The path as the most lenient app would read it: the query dropped, each segment's `;` parameters dropped,
    /// percent escapes decoded (again while any remain, against double encoding), `\` and decoded `/` read as
    /// separators, empty and `.` segments dropped, `..` taking one back, the case folded where the app ignores it;
    /// no trailing slash. `nil` for a bad escape, a NUL or a path that is not UTF-8.
    public static func normalize(_ path: String, caseInsensitive: Bool) -> String? {
        var raw = Substring(path)
        if let end = raw.firstIndex(where: { $0 == "?" || $0 == "#" }) { raw = raw[..<end] }
        var decoded = String(raw)
        for _ in 0..<3 where decoded.containsBytes(of: "%") {
            // Parameters go before decoding: an encoded `;` is part of the segment's name.
            decoded = decoded.split(separator: "/", omittingEmptySubsequences: false).map {
                $0.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            }
            .joined(separator: "/")
            guard let once = decoded.removingPercentEncoding else { return nil }
            decoded = once
        }
        guard !decoded.containsBytes(of: "\0") else { return nil }
        var segments: [Substring] = []
        for segment in decoded.split(whereSeparator: { $0 == "/" || $0 == "\\" }) {
            let name = segment.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            switch name {
            case "", ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(name)
            }
        }
        let joined = "/" + segments.joined(separator: "/")
        return caseInsensitive ? joined.lowercased() : joined
    }
}

/// What an access decision knows besides the member: the time, the client's address as the trusted proxies report it,
/// and how long the member had been away before this request. A held WebSocket is judged again without
/// `checksFreshness`: time passing never cuts what a recent sign-in opened.
public struct AccessMoment: Sendable {
    public var now: Date
    public var client: IPAddress?
    public var idle: TimeInterval
    public var checksFreshness: Bool

    public init(now: Date = Date(), client: IPAddress?, idle: TimeInterval = 0, checksFreshness: Bool = true) {
        self.now = now
        self.client = client
        self.idle = idle
        self.checksFreshness = checksFreshness
    }
}
