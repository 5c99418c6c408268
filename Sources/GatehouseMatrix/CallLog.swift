import Foundation

/// One signalling event of a one-to-one call (Matrix VoIP, `m.call.*`), as a member's device received it.
public struct CallSignal: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case invite, answer, candidates, hangup, reject
        case selectAnswer = "select_answer"
        case negotiate
    }

    public var kind: Kind
    public var room: String
    public var callID: String
    public var sender: String
    /// The sending device's `party_id` (version 1 calls; `nil` from version 0 clients).
    public var party: String?
    public var timestamp: Int
    public var content: JSONValue

    /// A version 1 signal's content from device `party`: the call, the party, and `extra`.
    public static func content(call: String, party: String, _ extra: [String: JSONValue] = [:]) -> JSONValue {
        .object(extra.merging(["call_id": .string(call), "party_id": .string(party), "version": .string("1")]) { _, own in own })
    }

    /// The signal `event` carries, or `nil` for any other event (or a call event without a call id).
    public init?(_ event: MatrixEvent, room: String) {
        guard event.type.hasPrefix("m.call."), let kind = Kind(rawValue: String(event.type.dropFirst("m.call.".count))),
            let callID = event.content["call_id"]?.string, !callID.isEmpty, callID.utf8.count <= 255
        else { return nil }
        self.kind = kind
        self.room = room
        self.callID = callID
        self.sender = event.sender
        self.party = event.content["party_id"]?.string
        self.timestamp = event.timestamp ?? 0
        self.content = event.content
    }
}

/// A one-to-one call as the member's list of calls shows it: who called whom in which direct chat, audio or video,
/// whether it was answered, and how it ended. Made from the room's `m.call.*` events, never from what a page says.
public struct Call: Sendable, Equatable, Identifiable {
    public enum Media: String, Sendable { case audio, video }

    /// Where the call is at `now`.
    public enum Phase: String, Sendable {
        /// Invited, not answered, within the invite's lifetime.
        case ringing
        /// Answered and not hung up.
        case connected
        /// Hung up after it was answered.
        case ended
        /// Never answered: the caller gave up, the invite's lifetime ran out, or the callee declined.
        case missed
        case declined
    }

    public let id: String
    public let room: String
    public var caller: String
    public var callerParty: String?
    public var media: Media
    public var invitedAt: Int
    /// How long the invite rings, in milliseconds (the invite's `lifetime`, at most `Call.longestRing`).
    public var lifetime: Int
    /// The offer's session description, which the callee's page answers.
    public var offer: String?
    public var answeredAt: Int?
    /// The party that answered (the one the caller selected).
    public var answerer: String?
    public var answererParty: String?
    public var endedAt: Int?
    public var endReason: String?
    /// The candidates each party sent so far (by party id, or the sender for version 0), for a page that opens after
    /// they came.
    public var candidates: [String: [JSONValue]] = [:]

    /// Sixty seconds: what the product rings for, and the most an invite from any client rings here.
    public static let longestRing = 60_000

    init(invite signal: CallSignal) {
        id = signal.callID
        room = signal.room
        caller = signal.sender
        callerParty = signal.party
        invitedAt = signal.timestamp
        lifetime = min(max(signal.content["lifetime"]?.int ?? Self.longestRing, 1000), Self.longestRing)
        offer = signal.content["offer"]?["sdp"]?.string
        media = offer.map { $0.contains("\nm=video") || $0.hasPrefix("m=video") } == true ? .video : .audio
    }

    public func phase(at now: Int) -> Phase {
        if answeredAt != nil { return endedAt == nil ? .connected : .ended }
        if endReason == "reject" { return .declined }
        if endedAt != nil || now >= invitedAt + lifetime { return .missed }
        return .ringing
    }

    /// How long the call lasted, in milliseconds, once answered.
    public func duration(at now: Int) -> Int? {
        guard let answeredAt else { return nil }
        return max(0, (endedAt ?? now) - answeredAt)
    }

    /// Whether `party` (a device of the member) takes part: it placed the call or answered it.
    public func involves(party: String) -> Bool { callerParty == party || answererParty == party }

    mutating func apply(_ signal: CallSignal) {
        switch signal.kind {
        case .invite, .negotiate:
            break
        case .answer:
            // The first answer counts (the caller selects it); a second from another device of the callee is ignored.
            guard answeredAt == nil, endedAt == nil, signal.sender != caller else { return }
            answeredAt = signal.timestamp
            answerer = signal.sender
            answererParty = signal.party
        case .selectAnswer:
            if let selected = signal.content["selected_party_id"]?.string, signal.sender == caller { answererParty = selected }
        case .candidates:
            let key = signal.party ?? signal.sender
            let added = signal.content["candidates"]?.array ?? []
            candidates[key, default: []].append(contentsOf: added.prefix(max(0, 200 - (candidates[key]?.count ?? 0))))
        case .hangup, .reject:
            guard endedAt == nil else { return }
            endedAt = signal.timestamp
            endReason = signal.kind == .reject ? "reject" : signal.content["reason"]?.string ?? "user_hangup"
        }
    }
}

/// The member's calls, newest first: what Calls lists and what a call's page starts from. A value fed one signal
/// at a time (`RoomList.apply` does), tested without a homeserver.
public struct CallLog: Sendable, Equatable {
    public private(set) var calls: [String: Call] = [:]
    /// The most calls kept: the oldest go first.
    public static let kept = 100

    public init() {}

    /// Applies one signal; `false` when it belongs to no call this log knows (a signal before its invite, which the
    /// sync's window may cut off).
    @discardableResult
    public mutating func apply(_ signal: CallSignal) -> Bool {
        if signal.kind == .invite {
            guard calls[signal.callID] == nil else { return true }
            calls[signal.callID] = Call(invite: signal)
            if calls.count > Self.kept, let oldest = calls.values.min(by: { $0.invitedAt < $1.invitedAt }) {
                calls.removeValue(forKey: oldest.id)
            }
            return true
        }
        guard var call = calls[signal.callID], call.room == signal.room else { return false }
        call.apply(signal)
        calls[signal.callID] = call
        return true
    }

    /// Newest first.
    public var ordered: [Call] { calls.values.sorted { $0.invitedAt != $1.invitedAt ? $0.invitedAt > $1.invitedAt : $0.id < $1.id } }

    /// The calls ringing for `me` at `now`: invited by another member and not answered, declined or given up.
    public func ringing(for me: String, at now: Int) -> [Call] {
        ordered.filter { $0.caller != me && $0.phase(at: now) == .ringing }
    }

    /// The call `party` (one device of the member's) is in now, if any: connected, or placed by it and still ringing.
    public func current(of party: String, at now: Int) -> Call? {
        ordered.first { call in
            let phase = call.phase(at: now)
            return call.involves(party: party) && (phase == .connected || (phase == .ringing && call.callerParty == party))
        }
    }
}
