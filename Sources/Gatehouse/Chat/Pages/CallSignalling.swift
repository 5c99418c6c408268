import Foundation
import GatehouseCore
import GatehouseMatrix

/// What a call's page may send and receive as Matrix VoIP signalling, checked by the gateway: the page names a
/// signal and its parts, the gateway writes the event (`version`, `party_id`, `lifetime` are its own), and every ICE
/// candidate, in an SDP or on its own, must be for an address the operator allows (`chat.calls.candidate_networks`),
/// both ways: a page never sends one outside them (its signal is refused), and never receives one (every SDP and
/// candidate a page is given, in an offer, an answer or a renegotiation, live or on the call's page, passes through
/// `forPage`, which leaves such candidates out).
struct CallSignalling: Sendable {
    /// The networks candidates may be in; empty: any address but the ones no call needs (`neverAllowed`), and the
    /// browsers' own `.local` names; never a host name to resolve.
    let networks: [IPNetwork]

    /// What no candidate names even when any address is allowed: this host and the link (the cloud's metadata
    /// service at 169.254.169.254), nowhere, and multicast.
    static let neverAllowed = ["127.0.0.0/8", "::1/128", "169.254.0.0/16", "fe80::/10", "0.0.0.0/8", "::/128", "224.0.0.0/4", "ff00::/8"]
        .compactMap(IPNetwork.init)

    /// A signal as the page sent it, ready for the room.
    struct Outgoing: Sendable, Equatable {
        var room: String
        var kind: CallSignal.Kind
        var callID: String
        var content: JSONValue

        var eventType: String { "m.call." + kind.rawValue }
    }

    /// The reasons a hang-up may give (the spec's).
    static let hangupReasons: Set = ["user_hangup", "ice_failed", "invite_timeout", "user_media_failed", "user_busy", "unknown_error"]
    /// The most an SDP may be: far above what a browser makes for one audio and one video stream.
    static let sdpLimit = 64 * 1024
    static let candidatesLimit = 50

    /// The page's JSON (`{"type": "invite", "room": "!…", "call_id": "…", "sdp": "…"}`) as the event to send as
    /// `party`, or why not.
    func outgoing(_ json: JSONValue, party: String) throws(ChatError) -> Outgoing {
        guard let type = json["type"]?.string, let kind = CallSignal.Kind(rawValue: type), kind != .negotiate else {
            throw .invalidMessage("type: one of invite, answer, candidates, select_answer, hangup, reject")
        }
        guard let room = json["room"]?.string, (try? ChatFeature.roomID(room)) != nil else { throw .invalidMessage("room: a room id") }
        guard let callID = json["call_id"]?.string, Self.isCallID(callID) else { throw .invalidMessage("call_id: 1 to 64 letters, digits, . _ -") }
        var content: [String: JSONValue] = [:]
        switch kind {
        case .invite:
            content["offer"] = .object(["type": .string("offer"), "sdp": .string(try sdp(json["sdp"]))])
            content["lifetime"] = .number(Double(Call.longestRing))
        case .answer:
            content["answer"] = .object(["type": .string("answer"), "sdp": .string(try sdp(json["sdp"]))])
        case .candidates:
            guard let list = json["candidates"]?.array, (1...Self.candidatesLimit).contains(list.count) else {
                throw .invalidMessage("candidates: 1 to \(Self.candidatesLimit)")
            }
            var checked: [JSONValue] = []
            for item in list { checked.append(try candidate(item)) }
            content["candidates"] = .array(checked)
        case .selectAnswer:
            guard let selected = json["selected_party_id"]?.string, Self.isCallID(selected) else { throw .invalidMessage("selected_party_id") }
            content["selected_party_id"] = .string(selected)
        case .hangup:
            let reason = json["reason"]?.string ?? "user_hangup"
            guard Self.hangupReasons.contains(reason) else { throw .invalidMessage("reason: one of \(Self.hangupReasons.sorted().joined(separator: ", "))") }
            content["reason"] = .string(reason)
        case .reject, .negotiate:
            break
        }
        return Outgoing(room: room, kind: kind, callID: callID, content: CallSignal.content(call: callID, party: party, content))
    }

    /// A signal from the room as the page gets it: its kind, party and parts; candidates outside the allowed
    /// networks left out (`nil`: nothing left to tell).
    func incoming(_ signal: CallSignal) -> [String: Any]? {
        var values: [String: Any] = ["type": signal.kind.rawValue, "call_id": signal.callID, "sender": signal.sender, "at": signal.timestamp]
        values["party"] = signal.party
        switch signal.kind {
        case .invite, .answer, .negotiate:
            let key = signal.kind == .answer ? "answer" : signal.kind == .invite ? "offer" : "description"
            guard let checked = forPage(sdp: signal.content[key]?["sdp"]?.string) else { return nil }
            values["sdp"] = checked
        case .candidates:
            let allowed = allowedCandidates(signal.content["candidates"]?.array ?? [])
            guard !allowed.isEmpty else { return nil }
            values["candidates"] = allowed
        case .selectAnswer:
            values["selected_party_id"] = signal.content["selected_party_id"]?.string
        case .hangup:
            values["reason"] = signal.content["reason"]?.string ?? "user_hangup"
        case .reject:
            break
        }
        return values
    }

    /// Candidates a page may be given, as plain values (a call's page that opens late gets those sent before).
    func allowedCandidates(_ list: [JSONValue]) -> [[String: Any]] {
        list.compactMap { item -> [String: Any]? in
            guard case .object(let checked)? = try? candidate(item) else { return nil }
            var values: [String: Any] = [:]
            for (key, value) in checked {
                if let text = value.string { values[key] = text } else if let number = value.int { values[key] = number }
            }
            return values
        }
    }

    /// An SDP from the room as a page may be given it: the candidates it may not name left out, the rest as it came;
    /// `nil` for what is no session description.
    func forPage(sdp text: String?) -> String? {
        guard let text, text.hasPrefix("v=0"), text.utf8.count <= Self.sdpLimit, !text.contains("\0") else { return nil }
        // Lines end with CRLF (RFC 8866), which Swift reads as one character: split on the line feed's scalar.
        let lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { String(String.UnicodeScalarView($0)) }.filter { line in
            let bare = line.hasSuffix("\r") ? line.dropLast() : Substring(line)
            return !bare.hasPrefix("a=candidate:") || allows(candidateLine: bare.dropFirst(2))
        }
        return lines.joined(separator: "\n")
    }

    func sdp(_ value: JSONValue?) throws(ChatError) -> String {
        guard let text = value?.string, text.hasPrefix("v=0"), text.utf8.count <= Self.sdpLimit, !text.contains("\0") else {
            throw .invalidMessage("sdp: a session description (v=0…), at most \(Self.sdpLimit) bytes")
        }
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("a=candidate:") {
            guard allows(candidateLine: line.dropFirst(2)) else { throw .invalidMessage("sdp: a candidate outside the allowed networks") }
        }
        return text
    }

    /// One candidate (`{"candidate": "candidate:…", "sdpMid": "0", "sdpMLineIndex": 0}`), checked; an empty
    /// `candidate` is the end of candidates.
    func candidate(_ value: JSONValue) throws(ChatError) -> JSONValue {
        guard let line = value["candidate"]?.string, line.utf8.count <= 1024 else { throw .invalidMessage("candidates: each with a candidate line") }
        guard line.isEmpty || allows(candidateLine: Substring(line)) else { throw .invalidMessage("candidates: an address outside the allowed networks") }
        var checked: [String: JSONValue] = ["candidate": .string(line)]
        if let mid = value["sdpMid"]?.string, mid.utf8.count <= 32 { checked["sdpMid"] = .string(mid) }
        if let index = value["sdpMLineIndex"]?.int, (0...64).contains(index) { checked["sdpMLineIndex"] = .number(Double(index)) }
        return .object(checked)
    }

    /// `candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type> …`: whether its address
    /// is in the allowed networks (any well-formed one when none are set).
    func allows(candidateLine line: Substring) -> Bool {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 8, fields[0].hasPrefix("candidate:"), fields[6] == "typ", let port = Int(fields[5]), (0...65535).contains(port) else {
            return false
        }
        let address = fields[4]
        guard let ip = IPAddress(address) else {
            // A name: only a browser's own mDNS name for its host (`<uuid>.local`), and only where any address may be.
            return networks.isEmpty && Self.isBrowsersLocalName(address)
        }
        guard !networks.isEmpty else { return !Self.neverAllowed.contains { $0.contains(ip) } }
        return networks.contains { $0.contains(ip) }
    }

    /// `3f1c…-….local`: the name a browser gives its own host address instead of the address (RFC 8445's mDNS draft).
    static func isBrowsersLocalName(_ name: Substring) -> Bool {
        guard name.lowercased().hasSuffix(".local") else { return false }
        let label = name.dropLast(".local".count)
        return label.count == 36 && UUID(uuidString: String(label)) != nil
    }

    /// Call and party ids: what the spec's clients make (letters, digits, `.`, `_`, `-`), not too long.
    static func isCallID(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) }
    }
}
