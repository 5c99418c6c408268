import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The organization's look (`brand.accent_colour`, `brand.accent_colour_dark`, `brand.logo`): checked when the
/// configuration is read, then served among the gateway's files and named by its pages and by the bar on app pages.
@Suite struct BrandTests {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 0, count: 64)

    /// A file of `bytes` in a new folder; its path.
    static func file(_ bytes: [UInt8], named name: String = "logo") throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-brand-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func problems(_ brand: String) -> [String] {
        ConfigurationLoaderTests().problems(#"{"brand": \#(brand)}"#, development: true)
    }

    func messages(_ brand: String) -> String {
        let loader = ConfigurationLoaderTests().loader(["g.json": #"{"brand": \#(brand)}"#])
        do {
            _ = try loader.load(path: "g.json", development: true)
            return ""
        } catch {
            return error.problems.map(\.description).joined(separator: "\n")
        }
    }

    @Test func anAccentThatTheThemesCannotReadIsRefusedWithItsRatio() {
        #expect(problems(##"{"accent_colour": "#1f5fbf"}"##).isEmpty)
        #expect(problems(##"{"accent_colour": "#1f5fbf", "accent_colour_dark": "#a8c8ff"}"##).isEmpty)
        #expect(problems(##"{"accent_colour": "#7fb0ff"}"##) == ["brand.accent_colour"])
        #expect(messages(##"{"accent_colour": "#7fb0ff"}"##).contains("2.0:1 against the light theme's background"))
        // The dark one given too dark for the dark theme.
        #expect(problems(##"{"accent_colour": "#1f5fbf", "accent_colour_dark": "#1f5fbf"}"##) == ["brand.accent_colour_dark"])
        for hostile in ["blue", "#12345", "#1f5fbf80", "javascript:alert(1)", "#1f5fbf; background: url(x)", "}</style><script>"] {
            #expect(problems(#"{"accent_colour": "\#(hostile)"}"#) == ["brand.accent_colour"], "\(hostile)")
        }
        #expect(problems(##"{"accent_colour_dark": "#a8c8ff"}"##) == ["brand.accent_colour_dark"])
    }

    @Test func aLogoMustBeASmallPictureOnly() throws {
        #expect(problems(#"{"logo": "\#(try Self.file(Self.png))"}"#).isEmpty)
        let svg = ##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="10" height="10" fill="#1f5fbf"/></svg>"##
        #expect(problems(#"{"logo": "\#(try Self.file(Array(svg.utf8)))"}"#).isEmpty)
        let refused: [(String, [UInt8])] = [
            ("is empty", []),
            ("256 KiB", Self.png + Array(repeating: 0, count: BrandLogo.maximumBytes)),
            ("not an SVG, PNG", Array("GIF89a not supported".utf8)),
            ("active content", Array(#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#.utf8)),
            ("active content", Array(#"<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>"#.utf8)),
            ("active content", Array(#"<svg><a href="javascript:alert(1)"><text>x</text></a></svg>"#.utf8)),
            ("active content", Array(#"<svg><foreignObject><iframe src="https://evil.example"/></foreignObject></svg>"#.utf8)),
        ]
        for (reason, bytes) in refused {
            let said = messages(#"{"logo": "\#(try Self.file(bytes))"}"#)
            #expect(said.contains("brand.logo") && said.contains(reason), "\(reason): \(said)")
        }
        #expect(messages(#"{"logo": "/no/such/logo.png"}"#).contains("cannot read /no/such/logo.png"))
    }

    @Test func theAccentAndTheLogoReachThePagesAndTheBar() async throws {
        let logo = try Self.file(Self.png)
        try await ProxyTests.withProxy(configure: {
            $0.brand.accent = BrandAccent(light: BrandColour(hex: "#b00020")!, dark: ThemeAccent.dark.reaching(4.5, from: BrandColour(hex: "#b00020")!))
            $0.brand.logo = try? BrandLogo.read(Array(FileManager.default.contents(atPath: logo)!)).get()
        }) { gateway, _ in
            let signIn = try await gateway.get("/signin", cookies: [:])
            let style = try #require(signIn.body.firstMatch(of: #/<link rel="stylesheet" href="(/static/brand/accent\.[0-9a-f]+\.css)">/#)?.1)
            let logoURL = try #require(signIn.body.firstMatch(of: #/src="(/static/brand/logo\.[0-9a-f]+\.png)"/#)?.1)
            let css = try await gateway.get(String(style), cookies: [:])
            #expect(css.status == 200 && css.headers.first(name: "Content-Type")?.hasPrefix("text/css") == true)
            #expect(css.body.contains(":root, :host { --accent: #b00020; --accent-fg: #ffffff; }"), "\(css.body)")
            #expect(css.body.contains("@media (prefers-contrast: more)"))
            let image = try await gateway.get(String(logoURL), cookies: [:])
            #expect(image.status == 200 && image.headers.first(name: "Content-Type") == "image/png")

            // An app's page: the bar names both, and a policy that restricts images lets the logo in.
            let cookies = try await ProxyTests.signedIn(gateway)
            let page = try await gateway.get(
                "/apps/echo/html?csp=" + FormEncoding.escape("img-src 'none'; style-src 'self'"), cookies: cookies, headers: ProxyHardeningTests.document)
            #expect(page.body.contains(#"class="mark logo" id="brand-logo" src="\#(logoURL)""#), "\(page.body.prefix(3000))")
            #expect(page.body.contains(#"<link rel="stylesheet" href="\#(style)" nonce="#))
            let policies = page.headers[canonicalForm: "Content-Security-Policy"].joined(separator: ", ")
            #expect(policies.contains("img-src \(gateway.origin)\(logoURL)"), "\(policies)")
        }
    }

    @Test func withoutABrandThePagesNameNeither() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let signIn = try await gateway.get("/signin", cookies: [:])
            #expect(!signIn.body.contains("/brand/") && !signIn.body.contains("brand-logo"))
        }
    }
}
