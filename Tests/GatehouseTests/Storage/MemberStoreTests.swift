import Foundation
@testable import GatehouseStorage
import Testing

@testable import Gatehouse

/// What is remembered of a member between sessions, on both backends: the name of the last sign-in (sealed) and the
/// apps opened last, read back by account with the username of a registration beside the name; forgotten a year
/// after the member was last seen.
@Suite struct MemberStoreTests {
    @Test(arguments: StoreBackend.allCases) func namesRecentAppsAndForgetting(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let members = stores.members
            let now = Date()
            #expect(try await members.recentApps(account: "alice-sub") == [])
            #expect(try await members.names(accounts: []) == [:])
            try await members.signedIn(account: "alice-sub", name: "Alice Archer", at: now)
            try await members.setRecentApps(["wiki", "files"], account: "alice-sub", at: now)
            #expect(try await members.recentApps(account: "alice-sub") == ["wiki", "files"])
            // A later sign-in without a name keeps the one known; the history stays.
            try await members.signedIn(account: "alice-sub", name: nil, at: now)
            #expect(try await members.recentApps(account: "alice-sub") == ["wiki", "files"])
            // A member who only opened apps, and one only registered (found on the homeserver), are named as known.
            try await members.setRecentApps(["mail"], account: "bob-sub", at: now)
            #expect(try await stores.registrations.registerExisting(sub: "kim-sub", username: "kim", chatUserID: "@kim:chat.test", at: now) == .registered)
            let names = try await members.names(accounts: ["alice-sub", "bob-sub", "kim-sub", "nobody", "x' OR '1'='1"])
            #expect(names["alice-sub"] == MemberName(name: "Alice Archer", username: nil))
            #expect(names["bob-sub"] == MemberName(name: nil, username: nil))
            #expect(names["kim-sub"] == MemberName(name: nil, username: "kim"))
            #expect(names.count == 3)
            // Forgotten a year after last seen; the others stay.
            try await members.signedIn(account: "old-sub", name: "Old", at: now.addingTimeInterval(-400 * 86_400))
            #expect(try await members.forgetUnseen(before: now.addingTimeInterval(-RecentApps.lifetime)) == 1)
            #expect(try await members.names(accounts: ["old-sub", "alice-sub"]).keys.sorted() == ["alice-sub"])
        }
    }

    @Test func theNameIsSealedAtRest() async throws {
        let database = try await SQLiteDatabase.open(path: ":memory:", logger: StoreBackend.logger)
        let stores = Stores.sqlite(database, keyring: .forTests)
        try await stores.whileRunning { stores in
            try await stores.members.signedIn(account: "alice-sub", name: "Alice Archer", at: Date())
            let stored = try #require(try await database.query("SELECT name FROM members").first?.column("name")?.string)
            #expect(stored.hasPrefix("gh1:") && !stored.contains("Alice"))
        }
    }
}
