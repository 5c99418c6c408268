import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Logs out the Matrix devices whose gateway session ended, whatever ended it (sign-out elsewhere, expiry,
/// back-channel logout, an operator's reset), every `interval`; every tenth pass also those whose member may no
/// longer chat (a role lost). A device the homeserver cannot be told about now stays and is tried again.
struct MatrixDeviceReaper: Service {
    let chats: ChatSessions
    let logger: Logger
    var interval: Duration = .seconds(10)

    func run() async throws {
        let passes = NIOLockedValueBox(0)
        await repeatUntilShutdown(every: interval, startingNow: false) {
            let pass = passes.withLockedValue { count in
                count += 1
                return count
            }
            do {
                let ended = try await chats.reap(full: pass % 10 == 0)
                if ended > 0 { logger.info("chat: devices of ended sessions logged out", metadata: ["devices": "\(ended)"]) }
            } catch {
                logger.error("chat: the device reaper failed", metadata: ["error": .string("\(error)")])
            }
        }
    }
}
