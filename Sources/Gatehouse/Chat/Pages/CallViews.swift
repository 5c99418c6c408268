import Foundation
import GatehouseCore
import GatehouseMatrix

/// Calls as the pages and streams show them: plain values, every name set as text by the template or the script.
enum CallViews {
    /// One line of the recent calls: who, which way, audio or video, and how it went.
    static func recent(_ call: Call, in list: RoomList, now: Int, strings: StringsTable) -> [String: Any]? {
        guard let room = list.rooms[call.room], let peer = list.peer(in: room) else { return nil }
        let name = room.name(of: peer)
        let phase = call.phase(at: now)
        var values: [String: Any] = [
            "id": call.id, "room": room.id, "name": name, "initials": AppIcon.monogram(name), "tone": AppIcon.tone(of: room.id),
            "media": call.media.rawValue, "outgoing": call.caller == list.me, "phase": phase.rawValue,
            "missed": phase == .missed && call.caller != list.me, "what": phaseText(call, me: list.me, now: now, strings: strings),
            "at": ChatViews.iso(call.invitedAt), "shownAt": ChatViews.shownTime(call.invitedAt),
        ]
        if phase == .ringing && call.caller != list.me { values["answer"] = FormEncoding.url(Paths.callPage, adding: [("id", call.id)]) }
        return values
    }

    /// "Missed video call", "Outgoing audio call · 1:05", "Declined"…
    static func phaseText(_ call: Call, me: String, now: Int, strings: StringsTable) -> String {
        let direction = call.caller == me ? "out" : "in"
        let phase = call.phase(at: now)
        let text = strings["call_\(phase.rawValue)_\(direction)_\(call.media.rawValue)"]
        guard let duration = call.duration(at: now), phase == .ended || phase == .connected else { return text }
        return "\(text) · \(clock(duration))"
    }

    /// `1:05`, `1:02:03`.
    static func clock(_ milliseconds: Int) -> String {
        let seconds = milliseconds / 1000
        let (hours, minutes, rest) = (seconds / 3600, seconds / 60 % 60, seconds % 60)
        return hours > 0 ? String(format: "%d:%02d:%02d", hours, minutes, rest) : String(format: "%d:%02d", minutes, rest)
    }

    /// The `ringing` event: every call ringing for the member now, newest first, with when it stops; and the call this
    /// session's device (`party`) is in, which the bar on every other page shows with the way back to it.
    static func ringing(_ list: RoomList, party: String, base: String, strings: StringsTable) -> String {
        let now = CallController.now()
        let calls = list.calls.ringing(for: list.me, at: now).compactMap { call -> [String: Any]? in
            guard let room = list.rooms[call.room] else { return nil }
            let name = room.name(of: call.caller)
            return [
                "id": call.id, "name": name, "media": call.media.rawValue, "ends": call.invitedAt + call.lifetime,
                "text": strings.text("ring_\(call.media.rawValue)", ["name": name]),
                "answer": base + FormEncoding.url(Paths.callPage, adding: [("id", call.id)]),
            ]
        }
        var event: [String: Any] = ["calls": calls]
        if let call = list.calls.current(of: party, at: now), let room = list.rooms[call.room], let peer = list.peer(in: room) {
            let name = room.name(of: peer)
            event["current"] = ["id": call.id, "text": strings.text("ring_in_call", ["name": name]), "calls": base + Paths.calls]
        }
        return LiveStream.event("ringing", event)
    }

    /// The words a call's page shows as the call goes, by key.
    static func words(_ strings: StringsTable) -> String {
        let keys = [
            "call_permission_video", "call_permission_audio", "call_permission_denied", "call_calling", "call_connecting", "call_connected", "call_reconnecting",
            "call_ended_hangup", "call_ended_declined", "call_ended_missed", "call_ended_failed", "call_ended_session", "call_ended_other",
            "call_mute", "call_unmute", "call_camera_off", "call_camera_on", "call_no_answer", "call_media_failed", "call_answered_elsewhere",
        ]
        return json(Dictionary(uniqueKeysWithValues: keys.map { ($0, strings[$0]) }))
    }

    /// A value as JSON text for a `data-` attribute (the template escapes it; the script parses it).
    static func json(_ value: Any) -> String {
        (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}
