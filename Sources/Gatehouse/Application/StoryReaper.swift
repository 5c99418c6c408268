import Foundation
import GatehouseMatrix
import Logging
import ServiceLifecycle

/// Redacts every story older than its lifetime, on the homeserver, whoever posted it and whether or not they are
/// signed in: every `interval` it asks the admin API for the story rooms and their stories past their time, and
/// redacts those as the author (a device of theirs through the gateway's JWT login, logged out at once). A story is
/// gone for its viewers as soon as its time is up (Stories shows only live ones); this makes it gone from the
/// homeserver too.
struct StoryReaper: Service {
    let admin: SynapseChatBackend
    let chats: ChatSessions
    let lifetime: TimeInterval
    let logger: Logger
    var interval: Duration = .seconds(600)
    /// The clock stories age by (a test's own).
    var now: @Sendable () -> Date = { Date() }

    func run() async throws {
        await repeatUntilShutdown(every: interval, startingNow: true) {
            do {
                let redacted = try await sweep()
                if redacted > 0 { logger.info("stories: expired stories redacted", metadata: ["stories": "\(redacted)"]) }
            } catch {
                logger.warning("stories: the sweep failed; tried again later", metadata: ["error": .string("\(error)")])
            }
        }
    }

    /// One pass: how many stories it redacted.
    func sweep() async throws -> Int {
        let cutoff = Int((now().timeIntervalSince1970 - lifetime) * 1000)
        var redacted = 0
        for (room, creator) in try await admin.storyRooms() {
            let expired = try await admin.expiredStories(in: room, by: creator, cutoff: cutoff)
            guard !expired.isEmpty else { continue }
            redacted += try await chats.asMember(creator, deviceName: "Gatehouse stories") { client, credentials in
                var done = 0
                for event in expired {
                    try await client.redact(credentials, room: room, event: event, reason: "story expired", transactionID: UUID().uuidString)
                    done += 1
                }
                return done
            }
        }
        return redacted
    }
}
