import Foundation

/// An sRGB colour as a brand gives it (`#1f5fbf`, `#15b`), with what WCAG 2.1 measures of it: relative luminance and
/// the contrast ratio between two colours (1:1 to 21:1).
public struct BrandColour: Sendable, Equatable, CustomStringConvertible {
    public let red: UInt8
    public let green: UInt8
    public let blue: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8) {
        (self.red, self.green, self.blue) = (red, green, blue)
    }

    /// `#rrggbb` or `#rgb`, in either case; nothing else (no names, no alpha: a translucent accent has no one contrast).
    public init?(hex text: String) {
        guard text.hasPrefix("#"), text.dropFirst().allSatisfy(\.isHexDigit) else { return nil }
        let digits = Array(text.dropFirst())
        let pairs: [String]
        switch digits.count {
        case 3: pairs = digits.map { String([$0, $0]) }
        case 6: pairs = stride(from: 0, to: 6, by: 2).map { String(digits[$0...$0 + 1]) }
        default: return nil
        }
        guard let red = UInt8(pairs[0], radix: 16), let green = UInt8(pairs[1], radix: 16), let blue = UInt8(pairs[2], radix: 16) else { return nil }
        self.init(red: red, green: green, blue: blue)
    }

    /// `#rrggbb`, lower case.
    public var description: String { String(format: "#%02x%02x%02x", red, green, blue) }

    /// WCAG 2.1's relative luminance: 0 for black, 1 for white.
    public var luminance: Double {
        func linear(_ channel: UInt8) -> Double {
            let value = Double(channel) / 255
            return value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
        }
        return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)
    }

    /// WCAG 2.1's contrast ratio with `other`, from 1 (the same) to 21 (black on white).
    public func contrast(with other: BrandColour) -> Double {
        let (lighter, darker) = (max(luminance, other.luminance), min(luminance, other.luminance))
        return (lighter + 0.05) / (darker + 0.05)
    }

    /// This colour mixed with `other`: `amount` 0 is this one, 1 is `other`.
    public func mixed(with other: BrandColour, _ amount: Double) -> BrandColour {
        func channel(_ from: UInt8, _ to: UInt8) -> UInt8 { UInt8((Double(from) + (Double(to) - Double(from)) * amount).rounded()) }
        return BrandColour(red: channel(red, other.red), green: channel(green, other.green), blue: channel(blue, other.blue))
    }

    /// The first of this colour mixed with `other` in steps of 2 % that reaches `ratio` against every colour of
    /// `backgrounds` (`other` itself when none does before it).
    public func toward(_ other: BrandColour, reaching ratio: Double, against backgrounds: [BrandColour]) -> BrandColour {
        for step in 0...50 {
            let candidate = mixed(with: other, Double(step) / 50)
            if backgrounds.allSatisfy({ candidate.contrast(with: $0) >= ratio }) { return candidate }
        }
        return other
    }

    public static let white = BrandColour(red: 255, green: 255, blue: 255)
    public static let black = BrandColour(red: 0, green: 0, blue: 0)
}

/// The accent of one theme: its colour, the text on it, and whether they reach what links and buttons need.
public struct ThemeAccent: Sendable, Equatable {
    /// The theme's name in messages (`light`, `dark`) and the backgrounds the accent is read on (page, card, bar).
    public let theme: String
    public let backgrounds: [BrandColour]
    /// The text colours a button may put on the accent; the one that contrasts more is taken.
    public let textChoices: [BrandColour]

    /// Links and buttons are text: WCAG 2.1 AA asks 4.5:1.
    public static let textRatio = 4.5
    /// `prefers-contrast: more` asks AAA's 7:1.
    public static let moreRatio = 7.0

    public static let light = ThemeAccent(
        theme: "light", backgrounds: [BrandColour(hex: "#f6f7f9")!, .white], textChoices: [.white, BrandColour(hex: "#0b1220")!])
    public static let dark = ThemeAccent(
        theme: "dark", backgrounds: [BrandColour(hex: "#111418")!, BrandColour(hex: "#1b2027")!], textChoices: [BrandColour(hex: "#0b1220")!, .white])

    /// The text colour for buttons of `accent`.
    public func text(on accent: BrandColour) -> BrandColour {
        textChoices.max { accent.contrast(with: $0) < accent.contrast(with: $1) }!
    }

    /// Why `accent` does not serve this theme's links and buttons, or `nil` when it does.
    public func problem(_ accent: BrandColour) -> String? {
        if let background = backgrounds.min(by: { accent.contrast(with: $0) < accent.contrast(with: $1) }),
            accent.contrast(with: background) < Self.textRatio
        {
            return "\(accent) reaches \(Self.ratio(accent.contrast(with: background))):1 against the \(theme) theme's background \(background); links "
                + "need \(Self.ratio(Self.textRatio)):1 (WCAG 2.1 AA), e.g. \(accent.toward(towardText, reaching: Self.textRatio, against: backgrounds))"
        }
        let text = text(on: accent)
        if accent.contrast(with: text) < Self.textRatio {
            return "\(accent) reaches \(Self.ratio(accent.contrast(with: text))):1 with its buttons' text \(text) in the \(theme) theme; buttons "
                + "need \(Self.ratio(Self.textRatio)):1 (WCAG 2.1 AA)"
        }
        return nil
    }

    /// The colour that makes an accent stand out more here: black on light backgrounds, white on dark ones.
    public var towardText: BrandColour { backgrounds[0].luminance > 0.5 ? .black : .white }

    /// `accent` made to reach `ratio` against this theme's backgrounds (moved toward `towardText`).
    public func reaching(_ ratio: Double, from accent: BrandColour) -> BrandColour {
        accent.toward(towardText, reaching: ratio, against: backgrounds)
    }

    static func ratio(_ value: Double) -> String { String(format: "%.1f", (value * 10).rounded(.down) / 10) }
}
