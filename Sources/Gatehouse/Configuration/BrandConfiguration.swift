import Foundation
import GatehouseCore

/// What the gateway's pages and its bar show of the organization: its names, strings, language, accent colour and logo.
public struct BrandConfiguration: Sendable {
    public var gatewayName: String
    public var chatProductName: String
    /// Extra or replaced strings by key, on top of every language's strings table.
    public var strings: [String: String]
    /// The language of pages for members who chose none and whose browsers ask for none Gatehouse has.
    public var defaultLanguage: String
    /// The organization's accent (`brand.accent_colour`), in each theme; `nil`: the gateway's own blue.
    public var accent: BrandAccent?
    /// The organization's logo (`brand.logo`), beside the gateway's name; `nil`: the name alone.
    public var logo: BrandLogo?

    public init(
        gatewayName: String = "Gatehouse", chatProductName: String = "Signal", strings: [String: String] = [:], defaultLanguage: String = "en",
        accent: BrandAccent? = nil, logo: BrandLogo? = nil
    ) {
        self.gatewayName = gatewayName
        self.chatProductName = chatProductName
        self.strings = strings
        self.defaultLanguage = defaultLanguage
        self.accent = accent
        self.logo = logo
    }
}

/// The accent of links, buttons and the bar's mark in the light and the dark theme, each reaching 4.5:1 against its
/// theme's backgrounds and with its buttons' text (`ThemeAccent`), and their 7:1 variants for `prefers-contrast: more`.
public struct BrandAccent: Sendable, Equatable {
    public let light: BrandColour
    public let dark: BrandColour

    public init(light: BrandColour, dark: BrandColour) {
        (self.light, self.dark) = (light, dark)
    }

    /// The stylesheet that puts the accent on the gateway's pages (`:root`) and in the bar (`:host`), after their own.
    public var css: String {
        func rule(_ selector: String, _ theme: ThemeAccent, _ colour: BrandColour) -> String {
            "\(selector) { --accent: \(colour); --accent-fg: \(theme.text(on: colour)); }"
        }
        let (light, dark) = (ThemeAccent.light, ThemeAccent.dark)
        let darkSelector = #":root, :host(:not([data-page-scheme="light"]))"#
        return """
            /* The organization's accent (brand.accent_colour), made by the gateway from its configuration. */
            \(rule(":root, :host", light, self.light))
            @media (prefers-color-scheme: dark) { \(rule(darkSelector, dark, self.dark)) }
            @media (prefers-contrast: more) { \(rule(":root, :host", light, light.reaching(ThemeAccent.moreRatio, from: self.light))) }
            @media (prefers-contrast: more) and (prefers-color-scheme: dark) { \(rule(darkSelector, dark, dark.reaching(ThemeAccent.moreRatio, from: self.dark))) }

            """
    }
}

/// The organization's logo as the gateway serves it (`/brand/logo.<kind>` among its files): an SVG, PNG, WebP or JPEG
/// of at most 256 KiB, its kind read from its bytes.
public struct BrandLogo: Sendable, Equatable {
    public let bytes: [UInt8]
    /// `svg`, `png`, `webp` or `jpg`.
    public let kind: String

    public static let maximumBytes = 256 * 1024

    /// The path among the gateway's files.
    public var path: String { "/brand/logo.\(kind)" }

    /// The logo in `bytes`, or why they are not one.
    public static func read(_ bytes: [UInt8]) -> Result<BrandLogo, BrandLogoProblem> {
        guard !bytes.isEmpty else { return .failure(.empty) }
        guard bytes.count <= maximumBytes else { return .failure(.tooLarge(bytes.count)) }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .success(BrandLogo(bytes: bytes, kind: "png")) }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return .success(BrandLogo(bytes: bytes, kind: "jpg")) }
        if bytes.count > 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) {
            return .success(BrandLogo(bytes: bytes, kind: "webp"))
        }
        guard let text = String(validating: bytes, as: UTF8.self), text.range(of: "<svg", options: .caseInsensitive) != nil else {
            return .failure(.notAnImage)
        }
        // Shown as an image it could run nothing; opened on its own, an SVG is a document of the gateway's origin.
        let lowered = text.lowercased()
        for active in ["<script", "javascript:", "<foreignobject", "<iframe", "<embed", "<object"] where lowered.contains(active) {
            return .failure(.activeContent(active))
        }
        if lowered.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) != nil { return .failure(.activeContent("an on… attribute")) }
        return .success(BrandLogo(bytes: bytes, kind: "svg"))
    }
}

public enum BrandLogoProblem: Error, Equatable, CustomStringConvertible {
    case empty
    case tooLarge(Int)
    case notAnImage
    case activeContent(String)

    public var description: String {
        switch self {
        case .empty: "is empty"
        case .tooLarge(let bytes): "is \(bytes) bytes; a logo may have \(BrandLogo.maximumBytes) (256 KiB)"
        case .notAnImage: "is not an SVG, PNG, WebP or JPEG image"
        case .activeContent(let what): "is an SVG with active content (\(what)); a logo is a picture only"
        }
    }
}
