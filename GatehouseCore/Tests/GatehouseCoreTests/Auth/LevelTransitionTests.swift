import Testing

@testable import GatehouseCore

@Suite struct LevelTransitionTests {
    @Test(arguments: [
        (LevelChange.signIn, AuthLevel.none, false, AuthLevel?.some(.sso)),
        (.signIn, .none, true, .registered),
        (.upgradeCompleted, .sso, false, .registered),
        (.signOut, .sso, false, AuthLevel.none),
        (.signOut, .registered, true, AuthLevel.none),
        (.ssoSessionEnded, .sso, false, AuthLevel.none),
        (.ssoSessionEnded, .registered, true, AuthLevel.none),
        // Refused: everything else.
        (.signIn, .sso, false, nil),
        (.signIn, .registered, true, nil),
        (.upgradeCompleted, .none, false, nil),
        (.upgradeCompleted, .registered, true, nil),
        (.signOut, .none, false, nil),
        (.ssoSessionEnded, .none, false, nil),
    ])
    func transitions(change: LevelChange, from: AuthLevel, registered: Bool, expected: AuthLevel?) {
        #expect(LevelTransition.apply(change, from: from, isRegistered: registered) == expected)
    }

    @Test func levelsAreOrdered() {
        #expect(AuthLevel.none < .sso && AuthLevel.sso < .registered)
    }
}
