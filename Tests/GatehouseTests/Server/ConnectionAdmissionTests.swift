import Testing

@testable import Gatehouse

/// The listener's connection limits, per address and in all (the listener itself: `Tests/e2e/test_connections.py`).
@Suite struct ConnectionAdmissionTests {
    func admission(total: Int = 10, perAddress: Int = 2, trusted: [String] = []) -> ConnectionAdmission {
        ConnectionAdmission(maximum: total, maximumPerAddress: perAddress, trustedProxies: ClientAddressResolver(trustedProxies: trusted))
    }

    @Test func oneAddressStopsAtItsLimitAndOthersGoOn() throws {
        let admission = admission()
        let first = try admission.admit(peer: "192.0.2.7").get()
        _ = try admission.admit(peer: "192.0.2.7").get()
        #expect(admission.admit(peer: "192.0.2.7") == .failure(.address))
        #expect((try? admission.admit(peer: "192.0.2.8").get()) != nil)
        #expect(admission.refused(.address) == 1 && admission.open == 3)
        admission.release(first)
        #expect((try? admission.admit(peer: "192.0.2.7").get()) != nil)
    }

    @Test func anIPv6ClientCountsByItsSlash64AndMappedIPv4AsIPv4() {
        let admission = admission()
        #expect((try? admission.admit(peer: "2001:db8:1:2::1").get()) != nil)
        #expect((try? admission.admit(peer: "2001:db8:1:2:ffff::9").get()) != nil)
        #expect(admission.admit(peer: "2001:db8:1:2:abcd::1") == .failure(.address))
        #expect((try? admission.admit(peer: "2001:db8:1:3::1").get()) != nil)
        #expect((try? admission.admit(peer: "192.0.2.1").get()) != nil)
        #expect((try? admission.admit(peer: "::ffff:192.0.2.1").get()) != nil)
        #expect(admission.admit(peer: "192.0.2.1") == .failure(.address))
    }

    @Test func aTrustedProxyCountsOnlyInTheTotal() throws {
        let admission = admission(total: 4, trusted: ["10.0.0.0/8"])
        for _ in 0..<4 { #expect(try admission.admit(peer: "10.1.2.3").get() == nil) }
        #expect(admission.admit(peer: "10.1.2.3") == .failure(.total))
        #expect(admission.admit(peer: "192.0.2.1") == .failure(.total))
        #expect(admission.refused(.total) == 2)
        admission.release(nil)
        #expect(admission.open == 3)
        #expect((try? admission.admit(peer: "192.0.2.1").get()) != nil)
    }

    @Test func withoutAConfiguredTotalTheOpenFileLimitSetsIt() {
        let admission = ConnectionAdmission(ListenConfiguration())
        #expect(admission.maximum >= 16 && admission.maximumPerAddress == 256)
        #expect(ConnectionAdmission(ListenConfiguration(maximumConnections: 500)).maximum == 500)
    }
}
