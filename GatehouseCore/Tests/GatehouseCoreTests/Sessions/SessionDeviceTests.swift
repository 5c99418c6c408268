import Testing

@testable import GatehouseCore

@Suite struct SessionDeviceTests {
    @Test(arguments: [
        ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Chrome", "Linux"),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "Edge",
            "Windows"
        ),
        ("Mozilla/5.0 (Android 14; Mobile; rv:128.0) Gecko/128.0 Firefox/128.0", "Firefox", "Android"),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
            "Safari", "iOS"
        ),
        ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", "Safari", "macOS"),
        (
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", "Chrome",
            "Android"
        ),
    ])
    func theBrowserAndSystemAreReadFromTheUserAgent(agent: String, browser: String, system: String) {
        let summary = SessionDevice(userAgent: agent, address: nil).summary
        #expect(summary.browser == browser && summary.system == system)
    }

    @Test func anUnknownOrMissingAgentIsSaidSoAndALongOneIsCut() {
        #expect(SessionDevice(userAgent: "curl/8.5.0", address: nil).summary == (nil, nil))
        #expect(SessionDevice(userAgent: nil, address: "203.0.113.7").summary == (nil, nil))
        #expect(SessionDevice(userAgent: String(repeating: "x", count: 5000), address: nil).userAgent?.count == 256)
        #expect(SessionHandle.of("a") != SessionHandle.of("b") && SessionHandle.of("a").count == 20)
    }
}
