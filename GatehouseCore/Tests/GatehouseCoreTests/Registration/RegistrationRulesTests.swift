import Foundation
import Testing

@testable import GatehouseCore

/// The pure rules of the upgrade flow: phone numbers, usernames, PINs, codes and the step machine.
@Suite struct RegistrationRulesTests {
    @Test(arguments: [
        ("+15550100001", "+15550100001"), (" +1 555-010-0001 ", "+15550100001"), ("+44 (20) 7946.0958", "+442079460958"),
        ("+2901234", "+2901234"), ("+123456789012345", "+123456789012345"),
    ])
    func phoneNumbersAreNormalisedToE164(_ input: String, _ expected: String) throws {
        #expect(try PhoneNumber.parse(input).get().e164 == expected)
    }

    @Test(arguments: [
        ("", PhoneNumber.Problem.empty), ("   ", .empty), ("5550100001", .missingCountryCode), ("0044 20 7946 0958", .missingCountryCode),
        ("+1 555 CALL", .invalidCharacters), ("+1555010000１", .invalidCharacters), ("tel:+15550100001", .invalidCharacters),
        ("+1+5550100001", .invalidCharacters), ("+123456", .wrongLength), ("+1234567890123456", .wrongLength), ("+05550100001", .wrongLength),
        ("+", .wrongLength), ("+1\n5550100001", .invalidCharacters),
    ])
    func badPhoneNumbersSayWhatIsWrong(_ input: String, _ problem: PhoneNumber.Problem) {
        #expect(PhoneNumber.parse(input) == .failure(problem))
    }

    @Test(arguments: [
        ("+15550100123", "+1 555 010 0123"), ("+447700900123", "+44 7700900123"), ("+49301234567", "+49 301234567"),
        ("+79161234567", "+7 9161234567"), ("+2901234", "+290 1234"), ("+35312345", "+353 12345"), ("+123456789012345", "+1 23456789012345"),
        ("+8613800138000", "+86 13800138000"),
    ])
    func phoneNumbersAreShownByTheirCountrysPlanWithEveryDigit(_ e164: String, _ shown: String) throws {
        let number = try PhoneNumber.parse(e164).get()
        #expect(number.display == shown)
        #expect(number.display.filter { $0 != " " } == number.e164)
        #expect(PhoneNumber.stored(e164) == number && PhoneNumber.stored("+1 555 010 0123") == nil && PhoneNumber.stored("x") == nil)
    }

    @Test(arguments: ["ada", "Ada.Lovelace", "a_b.c9", String(repeating: "a", count: 32)])
    func usernamesWithinTheRules(_ name: String) {
        #expect(UsernameRules.problem(with: name, productName: "Signal") == nil)
    }

    @Test(arguments: [
        ("ab", UsernameRules.Problem.tooShort), (String(repeating: "a", count: 33), .tooLong), ("ada lovelace", .invalidCharacters),
        ("adé", .invalidCharacters), ("ada-l", .invalidCharacters), ("ada@x", .invalidCharacters), ("<script>", .invalidCharacters),
        ("1ada", .mustStartWithLetter), ("_ada", .mustStartWithLetter), (".ada", .mustStartWithLetter), ("ada.", .misplacedDot),
        ("ad..a", .misplacedDot), ("Admin", .reserved), ("SUPPORT", .reserved), ("signal", .reserved), ("chatter", .reserved),
    ])
    func usernamesOutsideTheRules(_ name: String, _ problem: UsernameRules.Problem) {
        #expect(UsernameRules.problem(with: name, productName: "Chatter") == problem)
    }

    @Test(arguments: [
        ("2580", "2580", nil), ("758302", "758302", nil), ("123", "123", PINRules.Problem.tooShort), ("1234567890123", "1234567890123", .tooLong),
        ("12a4", "12a4", .notDigits), ("", "", .tooShort), ("1111", "1111", .tooSimple), ("1234", "1234", .tooSimple), ("9876", "9876", .tooSimple),
        ("2580", "2581", .mismatch), ("2468", "2468", nil),
    ])
    func pinRules(_ pin: String, _ confirmation: String, _ problem: PINRules.Problem?) {
        #expect(PINRules.problem(pin: pin, confirmation: confirmation) == problem)
    }

    static let rules = VerificationRules()
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func codesAreSixRandomDigitsStoredOnlyHashed() {
        var seen: Set<String> = []
        for _ in 0..<200 {
            let (code, pending) = PendingCode.issue(now: Self.start, rules: Self.rules)
            #expect(code.count == 6 && code.allSatisfy(\.isASCIIDigit))
            // Only a 64-digit hex hash and the salt are kept (six digits may turn up in a hex string by chance, so
            // the check is that the code is neither, and that the hash is a hash of it with the salt).
            #expect(pending.hash != code && pending.salt != code && pending.hash.count == 64)
            #expect(pending.hash.allSatisfy { $0.isHexDigit })
            seen.insert(code)
        }
        #expect(seen.count > 190)
    }

    /// The store's count of tries for one code, kept in memory for the pure tests.
    final class Tries: @unchecked Sendable {
        var spent = 0
        let maximum: Int
        init(maximum: Int = 5) { self.maximum = maximum }
        func claim() -> Int? {
            guard spent < maximum else { return nil }
            spent += 1
            return spent
        }
    }

    @Test func aCodeExpiresAfterTenMinutes() async {
        let pending = PendingCode.issue(code: "123456", now: Self.start, rules: Self.rules)
        let tries = Tries()
        #expect(await pending.check("123456", now: Self.start.addingTimeInterval(600), rules: Self.rules, claimAttempt: tries.claim) == .expired)
        #expect(tries.spent == 0)  // an expired code costs no try
        #expect(await pending.check("123456", now: Self.start.addingTimeInterval(599), rules: Self.rules, claimAttempt: tries.claim) == .accepted)
    }

    @Test func fiveWrongTriesBurnTheCode() async {
        let pending = PendingCode.issue(code: "123456", now: Self.start, rules: Self.rules)
        let later = Self.start.addingTimeInterval(5)
        let tries = Tries()
        #expect(await pending.check("12345", now: later, rules: Self.rules, claimAttempt: tries.claim) == .malformed)
        #expect(await pending.check("abcdef", now: later, rules: Self.rules, claimAttempt: tries.claim) == .malformed)
        #expect(tries.spent == 0)  // malformed entries cost no try
        for remaining in [4, 3, 2, 1] {
            #expect(await pending.check("654321", now: later, rules: Self.rules, claimAttempt: tries.claim) == .wrong(remainingTries: remaining))
        }
        #expect(await pending.check("654321", now: later, rules: Self.rules, claimAttempt: tries.claim) == .burned)
        // After the fifth wrong try even the right code is refused: the store has no try left to give.
        #expect(await pending.check("123456", now: later, rules: Self.rules, claimAttempt: tries.claim) == .burned)
    }

    @Test func theRightCodeCountsAsATryToo() async {
        let pending = PendingCode.issue(code: "123456", now: Self.start, rules: Self.rules)
        let tries = Tries()
        for _ in 0..<4 { _ = await pending.check("000000", now: Self.start, rules: Self.rules, claimAttempt: tries.claim) }
        #expect(await pending.check("123456", now: Self.start, rules: Self.rules, claimAttempt: tries.claim) == .accepted)
        #expect(tries.spent == 5)
    }

    @Test func theGuessBudgetPerHourIsSmall() {
        #expect(Self.rules.guessesPerPhoneNumberPerWindow == 15 && Self.rules.guessesPerMemberPerWindow == 15)
    }

    @Test func theResendWindowIsSixtySeconds() {
        let pending = PendingCode.issue(code: "123456", now: Self.start, rules: Self.rules)
        #expect(pending.resendAvailableAt(rules: Self.rules) == Self.start.addingTimeInterval(60))
    }

    static func flowAtCode(_ code: String = "123456") throws -> RegistrationFlow {
        var flow = RegistrationFlow(sub: "s", returnTo: "/chats", now: start)
        try flow.codeSent(to: PhoneNumber.parse("+15550100001").get(), code: PendingCode.issue(code: code, now: start, rules: rules), now: start)
        return flow
    }

    @Test func aUsedCodeNeverWorksTwice() async throws {
        var flow = try Self.flowAtCode()
        let tries = Tries()
        #expect(try await flow.verify("123456", now: Self.start, rules: Self.rules) { _ in tries.claim() } == .accepted)
        #expect(flow.step == .username && flow.code == nil)
        await #expect(throws: WrongStep(current: .username)) {
            try await flow.verify("123456", now: Self.start, rules: Self.rules) { _ in tries.claim() }
        }
    }

    @Test func aBurnedCodeIsForgotten() async throws {
        var flow = try Self.flowAtCode()
        let tries = Tries()
        for _ in 0..<4 { _ = try await flow.verify("000000", now: Self.start, rules: Self.rules) { _ in tries.claim() } }
        #expect(flow.code != nil)  // wrong tries change nothing in the flow: the count lives in the store
        #expect(try await flow.verify("000000", now: Self.start, rules: Self.rules) { _ in tries.claim() } == .burned)
        #expect(flow.code == nil && flow.step == .code)
        #expect(try await flow.verify("123456", now: Self.start, rules: Self.rules) { _ in tries.claim() } == .expired)
    }

    @Test func theFlowMovesOneStepAtATime() async throws {
        var flow = RegistrationFlow(sub: "s", returnTo: "/chats", now: Self.start)
        #expect(flow.step == .phone)
        #expect(throws: WrongStep(current: .phone)) { try flow.chooseUsername("ada", now: Self.start) }
        #expect(throws: WrongStep(current: .phone)) { try flow.setPIN(hash: "h", now: Self.start) }
        var atPhone = flow
        do {
            _ = try await atPhone.verify("123456", now: Self.start, rules: Self.rules) { _ in 1 }
            Issue.record("a code was checked at the phone step")
        } catch let error as WrongStep {
            #expect(error == WrongStep(current: .phone))
        }
        #expect(throws: WrongStep(current: .phone)) {
            try flow.registration(displayName: "A", discoverability: .nobody, now: Self.start)
        }

        flow = try Self.flowAtCode()
        #expect(flow.allows(.phone) && flow.allows(.code) && !flow.allows(.username))
        _ = try await flow.verify("123456", now: Self.start, rules: Self.rules) { _ in 1 }
        #expect(!flow.allows(.phone))
        #expect(throws: WrongStep(current: .username)) {
            try flow.codeSent(
                to: PhoneNumber.parse("+15550100002").get(), code: PendingCode.issue(code: "1", now: Self.start, rules: Self.rules), now: Self.start)
        }
        try flow.chooseUsername("ada", now: Self.start)
        try flow.setPIN(hash: "$2b$hash", now: Self.start)
        #expect(flow.step == .profile)
        let registration = try flow.registration(displayName: "Ada", discoverability: .everybody, now: Self.start)
        #expect(registration.username == "ada" && registration.phoneNumber.e164 == "+15550100001" && registration.pinHash == "$2b$hash")

        flow.usernameTaken(now: Self.start)
        #expect(flow.step == .username && flow.username == nil && flow.pinHash == "$2b$hash")
    }

    @Test func aFlowResumesWithinThirtyMinutesOnly() {
        let flow = RegistrationFlow(sub: "s", returnTo: "/chats", now: Self.start)
        #expect(!flow.isStale(now: Self.start.addingTimeInterval(30 * 60)))
        #expect(flow.isStale(now: Self.start.addingTimeInterval(30 * 60 + 1)))
    }
}
