import Crypto
import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Logging

/// Turns a session cookie into a live session: expiry, idle timeout, token refresh and last-seen bookkeeping.
public struct SessionResolver: Sendable {
    public enum Resolution: Sendable, Equatable {
        /// A live session, and how long its member had been away before this request (their last activity as it
        /// was recorded, at most `touchInterval` behind).
        case active(Session, idle: TimeInterval)
        /// There was a session and it has ended (expired, idle too long, refresh refused, ended elsewhere);
        /// `timedOutFor` names its member when it ran out of time (idle or absolute), which a form they were posting
        /// may outlive (`KeptForms`).
        case expired(timedOutFor: String?)
        case none
    }

    let store: any SessionStore
    let refresher: TokenRefresher
    let events: EventRecorder
    let configuration: SessionConfiguration
    let logger: Logger

    /// How stale last-seen may get before a request writes it: writing it on every request would turn every read into
    /// a write; a minute is precise enough for an idle timeout measured in minutes, a quarter of the shortest one an
    /// app sets (`apps[].session.idle_seconds`) for that.
    let touchInterval: TimeInterval
    /// A use from a second network within this long of the last use from the first is flagged.
    static let networkChangeWindow: TimeInterval = 600

    public init(
        store: any SessionStore, refresher: TokenRefresher, events: EventRecorder, configuration: SessionConfiguration, logger: Logger,
        shortestAppIdleSeconds: Int? = nil
    ) {
        touchInterval = min(60, max(1, TimeInterval(shortestAppIdleSeconds ?? 240) / 4))
        self.store = store
        self.refresher = refresher
        self.events = events
        self.configuration = configuration
        self.logger = logger
    }

    /// The store key for a cookie value: its SHA-256, so that the store never holds a usable cookie.
    public static func sessionID(forCookie value: String) -> String { TokenHash.hex(value) }

    /// Whether a request is the member's activity: not the bar's or a tab's own asking (how long the session has left,
    /// the unread count), on the gateway's host or an app host alike.
    public static func touches(method: HTTPRequest.Method, path: String) -> Bool {
        !(method == .get && (path == Paths.frame || path == Paths.chatUnread))
    }

    /// `touch: false` for a request that is no activity of the member's (`touches`): its last-seen is left as it is.
    /// `client`: the request's address as the trusted proxies report it, for the network the session is used from.
    public func resolve(cookie value: String?, client: IPAddress? = nil, now: Date = Date(), touch: Bool = true) async throws -> Resolution {
        guard let value, !value.isEmpty, value.utf8.count <= 128 else { return .none }
        return try await resolve(sessionID: Self.sessionID(forCookie: value), client: client, now: now, touch: touch)
    }

    /// The same for a session found another way (an app host's grant).
    public func resolve(sessionID: String, client: IPAddress? = nil, now: Date = Date(), touch: Bool = true) async throws -> Resolution {
        guard var session = try await store.find(id: sessionID) else {
            // Ended from another of the member's browsers: they are told the session ended.
            return try await store.ended(id: sessionID, now: now).map { .expired(timedOutFor: $0.timedOutMember) } ?? .none
        }
        let idleLimit = session.lastSeenAt.addingTimeInterval(TimeInterval(configuration.idleTimeoutSeconds))
        if now >= session.expiresAt || now >= idleLimit {
            // Remembered a while as ran out of time: the member's next requests (a form they send, a page asking how long
            // is left, whichever comes first) are told so.
            await end(session, reason: now >= session.expiresAt ? "absolute_timeout" : "idle_timeout", rememberUntil: now.addingTimeInterval(3600))
            return .expired(timedOutFor: session.identity.sub)
        }
        if refresher.needsRefresh(session, now: now) {
            do {
                session = try await refresher.refreshed(session)
            } catch let error as OIDCError where error.isProviderDown {
                // The provider did not refuse anything: it could not be asked. The member goes on with the tokens
                // they have until the session's own end, and the refresh is tried again on a later request.
                logger.warning(
                    "token refresh postponed: provider down", metadata: ["sub": .string(session.identity.sub), "error": .string("\(error)")])
            } catch {
                logger.notice("token refresh failed; ending session", metadata: ["sub": .string(session.identity.sub), "error": .string("\(error)")])
                await end(session, reason: "refresh_failed")
                return .expired(timedOutFor: nil)
            }
        }
        let idle = max(0, now.timeIntervalSince(session.lastSeenAt))
        var changed = touch && idle >= touchInterval
        if let client, !(session.network?.contains(client) ?? false) {
            let network = IPNetwork.of(client)
            // Used from the last network a moment ago, and now from another: one cookie in two places, or a member
            // moving between networks (a phone leaving the office Wi-Fi); flagged, and ended where the operator says.
            if let last = session.network, idle < Self.networkChangeWindow {
                let ends = configuration.bindToNetwork
                events.record(.sessionNetworkChanged, sub: session.identity.sub, detail: ends ? "ended" : "flagged")
                logger.warning(
                    "session used from a second network",
                    metadata: ["sub": .string(session.identity.sub), "from": "\(last)", "to": "\(network)", "ended": "\(ends)"])
                if ends {
                    await end(session, reason: "network_changed")
                    return .expired(timedOutFor: nil)
                }
            }
            session.network = network
            changed = true
        }
        if changed {
            if touch { session.lastSeenAt = now }
            try await store.update(session)
        }
        return .active(session, idle: idle)
    }

    /// Whether a session, as cached, can be used as it is at `now` from `client`: alive, not idle too long, no refresh
    /// due, no last-seen to write, and used from the network it was last used from. The data plane serves only such a session on an event loop; any other goes through
    /// `resolve`, which does what is due.
    public func isSettled(_ session: Session, client: IPAddress?, now: Date = Date()) -> Bool {
        now < session.expiresAt && now < session.lastSeenAt.addingTimeInterval(TimeInterval(configuration.idleTimeoutSeconds))
            && now.timeIntervalSince(session.lastSeenAt) < touchInterval && !refresher.needsRefresh(session, now: now)
            && (client.map { session.network?.contains($0) ?? false } ?? true)
    }

    /// Ends a session the member did not sign out of (product §1: `→ none` because the SSO session ended); one that
    /// ran out of time is remembered until `rememberUntil` with its member.
    func end(_ session: Session, reason: String, rememberUntil: Date? = nil) async {
        _ = events.transition(.ssoSessionEnded, from: session.level, sub: session.identity.sub)
        do {
            if let rememberUntil {
                try await store.end(id: session.id, until: rememberUntil, timedOutMember: session.identity.sub)
            } else {
                try await store.delete(id: session.id)
            }
        } catch {
            logger.error("could not delete ended session", metadata: ["error": .string("\(error)")])
        }
        events.record(.ssoLogout, sub: session.identity.sub, detail: reason)
    }
}
