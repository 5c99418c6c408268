import Testing

@testable import GatehouseCore

/// The accent an organization gives is text on the gateway's pages (links, buttons): WCAG 2.1's contrast decides
/// whether it serves each theme.
@Suite struct BrandColourTests {
    @Test(arguments: ["#1f5fbf", "#1F5FBF", "#15b"]) func readsTheHexForms(text: String) throws {
        let colour = try #require(BrandColour(hex: text))
        #expect(colour.description == (text == "#15b" ? "#1155bb" : "#1f5fbf"))
    }

    @Test(arguments: ["", "#", "1f5fbf", "#12", "#1234", "#12345678", "#gggggg", "red", "#1f5fbf ", "rgb(1,2,3)", "#1f5fbf80", "#１２３"])
    func refusesAnythingElse(text: String) {
        #expect(BrandColour(hex: text) == nil)
    }

    @Test func contrastIsWCAGs() throws {
        #expect(abs(BrandColour.black.contrast(with: .white) - 21) < 0.001)
        #expect(BrandColour.white.contrast(with: .white) == 1)
        // WebAIM's checker: #767676 on white is 4.54:1, the lightest grey that passes AA.
        let grey = try #require(BrandColour(hex: "#767676"))
        #expect(abs(grey.contrast(with: .white) - 4.54) < 0.01)
        #expect(grey.contrast(with: .white) == BrandColour.white.contrast(with: grey))
    }

    @Test func aThemeRefusesAnAccentItsLinksCannotBeReadIn() throws {
        let pale = try #require(BrandColour(hex: "#7fb0ff"))
        let problem = try #require(ThemeAccent.light.problem(pale))
        #expect(problem.contains("2.0:1") && problem.contains("light theme") && problem.contains("4.5:1"), "\(problem)")
        // The suggestion it names is one that passes.
        let named = try #require(problem.firstMatch(of: /e\.g\. (#[0-9a-f]{6})/)?.1)
        let suggested = try #require(BrandColour(hex: String(named)))
        #expect(ThemeAccent.light.problem(suggested) == nil)
        #expect(ThemeAccent.light.problem(try #require(BrandColour(hex: "#1f5fbf"))) == nil)
        #expect(ThemeAccent.dark.problem(try #require(BrandColour(hex: "#1f5fbf"))) != nil)
        #expect(ThemeAccent.dark.problem(pale) == nil)
    }

    @Test func aDerivedAccentReachesItsRatioAgainstEveryBackgroundOfItsTheme() throws {
        for hex in ["#1f5fbf", "#b00020", "#006400", "#000000", "#ffffff", "#ff9900"] {
            let accent = try #require(BrandColour(hex: hex))
            for theme in [ThemeAccent.light, .dark] {
                for ratio in [ThemeAccent.textRatio, ThemeAccent.moreRatio] {
                    let reached = theme.reaching(ratio, from: accent)
                    #expect(theme.backgrounds.allSatisfy { reached.contrast(with: $0) >= ratio }, "\(hex) in \(theme.theme) to \(ratio)")
                }
                // Its buttons' text reads on it.
                let fitted = theme.reaching(ThemeAccent.textRatio, from: accent)
                #expect(fitted.contrast(with: theme.text(on: fitted)) >= ThemeAccent.textRatio, "\(hex) in \(theme.theme)")
            }
        }
    }
}
