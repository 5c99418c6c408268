import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// A session used from a second network within minutes of the first: flagged in the operator console, and ended with
/// `session.bind_to_network`; a member who moves later, or within their own network, is left alone. The client's
/// address is the one the trusted proxy reports.
@Suite struct SessionNetworkTests {
    static func from(_ address: String) -> [(String, String)] { [("X-Forwarded-For", address), ("Accept", "text/html")] }

    static func signedIn(_ gateway: LiveGateway, as member: String, from address: String) async throws -> [String: String] {
        let flow = try await SignInFlowTests.signIn(gateway, as: member, deepLink: "/", headers: [("X-Forwarded-For", address)])
        #expect(try await gateway.get("/", cookies: flow.cookies.values, headers: Self.from(address)).status == 200)
        return flow.cookies.values
    }

    @Test func aSecondNetworkWithinMinutesIsFlaggedForTheOperator() async throws {
        try await LiveGateway.run(configure: { $0.listen.trustedProxies = ["127.0.0.1"] }) { gateway in
            let alice = try await Self.signedIn(gateway, as: "alice", from: "198.51.100.7")
            // Within the same /24: the same network.
            #expect(try await gateway.get("/", cookies: alice, headers: Self.from("198.51.100.200")).status == 200)
            let olive = try await Self.signedIn(gateway, as: "olive", from: "198.51.100.9")
            #expect(try await gateway.get(Paths.operatorPrefix, cookies: olive, headers: Self.from("198.51.100.9")).body.contains("No session has been used"))

            // The same cookie from another network a moment later: flagged, the session goes on.
            #expect(try await gateway.get("/", cookies: alice, headers: Self.from("203.0.113.5")).status == 200)
            let console = try await gateway.get(Paths.operatorPrefix, cookies: olive, headers: Self.from("198.51.100.9"))
            let sub = try #require(DevelopmentAccounts.account(username: "alice")?.sub)
            #expect(console.body.contains("id=\"network-table\"") && console.body.contains(sub) && console.body.contains("flagged"))
            let twin = try await gateway.get(Paths.operatorPrefix + "/network-changes", cookies: olive, headers: [("X-Forwarded-For", "198.51.100.9")])
            #expect(twin.body.contains(#""outcome":"flagged""#) && twin.body.contains(sub))
            // Not for members.
            #expect(try await gateway.get(Paths.operatorPrefix + "/network-changes", cookies: alice, headers: Self.from("203.0.113.5")).status == 403)

            // A member who comes back from elsewhere after a while is no second place at once.
            try await StepUpTests.age(gateway, cookies: alice, by: 601)
            #expect(try await gateway.get("/", cookies: alice, headers: Self.from("192.0.2.77")).status == 200)
            let after = try await gateway.get(Paths.operatorPrefix + "/network-changes", cookies: olive, headers: [("X-Forwarded-For", "198.51.100.9")])
            #expect(after.body.components(separatedBy: "flagged").count == 2)
        }
    }

    @Test func boundToItsNetworkASessionEndsWhenUsedFromAnother() async throws {
        try await LiveGateway.run(configure: {
            $0.listen.trustedProxies = ["127.0.0.1"]
            $0.session.bindToNetwork = true
        }) { gateway in
            let alice = try await Self.signedIn(gateway, as: "alice", from: "198.51.100.7")
            let elsewhere = try await gateway.get("/", cookies: alice, headers: Self.from("203.0.113.5"))
            #expect(elsewhere.status == 303 && elsewhere.location?.contains("expired=1") == true)
            // Ended for the first place too.
            #expect(try await gateway.get("/", cookies: alice, headers: Self.from("198.51.100.7")).status == 303)
            let events = try await gateway.built.stores.events.latest(.sessionNetworkChanged, limit: 5)
            #expect(events.map(\.detail) == ["ended"])
        }
    }
}
