import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// A resent code is not a new budget: a flow's wrong entries count across every code it sent, so five wrong entries
/// end it however the member asks for new codes (by the resend button or by entering the number again); the hourly
/// send limits stay as they are, and a flow started again has tries of its own.
@Suite struct CodeTriesTests {
    @Test func wrongEntriesCountPerFlowAcrossResends() async throws {
        try await UpgradeFlowTests.live(configure: { configuration in
            configuration.registration.rules.resendAfter = 0
            (configuration.registration.rules.codesPerMember, configuration.registration.rules.codesPerPhoneNumber) = (10, 10)
        }) { gateway in
            let bob = try await UpgradeFlowTests.Member.signIn(gateway, as: "bob")
            _ = try await bob.get("/upgrade?from=portal")
            #expect(try await bob.post(Paths.upgrade(.phone), [("phone", "+442079460958")]).location == Paths.upgrade(.code))
            let wrong = { (code: String) in code == "000000" ? "111111" : "000000" }

            var code = try await bob.inboxCode()
            let first = try await bob.post(Paths.upgrade(.code), [("code", wrong(code))])
            #expect(first.status == 422 && first.body.contains("4 tries left"))
            _ = try await bob.post(Paths.upgrade(.code), [("code", wrong(code))])
            // A resend: a new code, and the tries go on from where they were.
            #expect(try await bob.post(Paths.upgradeResend, []).location?.hasPrefix(Paths.upgrade(.code)) == true)
            code = try await bob.inboxCode()
            #expect(try await bob.post(Paths.upgrade(.code), [("code", wrong(code))]).body.contains("2 tries left"))
            // The number entered again (the phone step is open while a code is awaited): still the same tries.
            #expect(try await bob.post(Paths.upgrade(.phone), [("phone", "+442079460958")]).location == Paths.upgrade(.code))
            code = try await bob.inboxCode()
            #expect(try await bob.post(Paths.upgrade(.code), [("code", wrong(code))]).body.contains("1 try left"))
            let failed = try await bob.post(Paths.upgrade(.code), [("code", wrong(code))])
            #expect(failed.location == "/?toast=registration_failed&reason=code_attempts_exhausted")
            // The right code of the failed flow does not work; a new flow has five tries of its own.
            #expect(try await bob.post(Paths.upgrade(.code), [("code", code)]).location == Paths.upgrade)
            _ = try await bob.get("/upgrade?from=portal")
            #expect(try await bob.post(Paths.upgrade(.phone), [("phone", "+442079460958")]).location == Paths.upgrade(.code))
            code = try await bob.inboxCode()
            #expect(try await bob.post(Paths.upgrade(.code), [("code", wrong(code))]).body.contains("4 tries left"))
            #expect(try await bob.post(Paths.upgrade(.code), [("code", code)]).location == Paths.upgrade(.username))
        }
    }

    @Test func everyFlowHasAKeyOfItsOwn() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let flow = RegistrationFlow(sub: "bob", returnTo: "/", now: now)
        #expect(flow.attemptsKey == RegistrationFlow(sub: "bob", returnTo: "/chats", now: now).attemptsKey)
        #expect(flow.attemptsKey != RegistrationFlow(sub: "bob", returnTo: "/", now: now.addingTimeInterval(1)).attemptsKey)
        #expect(flow.attemptsKey != RegistrationFlow(sub: "alice", returnTo: "/", now: now).attemptsKey)
    }
}
