import Foundation
import GatehouseCore

/// `brand.*`: the names, strings and language, the accent colour checked for contrast in both themes, and the logo
/// file read and checked once.
enum BrandReader {
    static func read(_ reader: inout ConfigurationReader) -> BrandConfiguration {
        let defaults = BrandConfiguration()
        return BrandConfiguration(
            gatewayName: reader.string("brand.gateway_name", default: defaults.gatewayName),
            chatProductName: reader.string("brand.chat_product_name", default: defaults.chatProductName),
            strings: reader.stringMap("brand.strings"),
            defaultLanguage: reader.string("brand.default_language", default: defaults.defaultLanguage),
            accent: accent(reader), logo: logo(reader))
    }

    /// `brand.accent_colour` for the light theme; `brand.accent_colour_dark`, or the light one made lighter until it
    /// reaches 4.5:1 there, for the dark one. Each must serve its theme's links and buttons (`ThemeAccent.problem`).
    static func accent(_ reader: ConfigurationReader) -> BrandAccent? {
        guard let light = colour(reader, "brand.accent_colour") else {
            if reader.optionalString("brand.accent_colour_dark") != nil {
                reader.report("brand.accent_colour_dark", "needs brand.accent_colour (the light theme's accent) beside it")
            }
            return nil
        }
        let dark = colour(reader, "brand.accent_colour_dark") ?? ThemeAccent.dark.reaching(ThemeAccent.textRatio, from: light)
        var fits = true
        for (keyPath, theme, colour) in [("brand.accent_colour", ThemeAccent.light, light), ("brand.accent_colour_dark", .dark, dark)] {
            if let problem = theme.problem(colour) {
                reader.report(keyPath, problem)
                fits = false
            }
        }
        return fits ? BrandAccent(light: light, dark: dark) : nil
    }

    private static func colour(_ reader: ConfigurationReader, _ keyPath: String) -> BrandColour? {
        guard let text = reader.optionalString(keyPath) else { return nil }
        guard let colour = BrandColour(hex: text.trimmingCharacters(in: .whitespaces)) else {
            reader.report(keyPath, "must be a colour as #rrggbb (or #rgb), got \(text)")
            return nil
        }
        return colour
    }

    /// `brand.logo`: the path of the image file.
    static func logo(_ reader: ConfigurationReader) -> BrandLogo? {
        guard let path = reader.optionalString("brand.logo") else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            reader.report("brand.logo", "cannot read \(path)")
            return nil
        }
        switch BrandLogo.read(Array(data)) {
        case .success(let logo): return logo
        case .failure(let problem):
            reader.report("brand.logo", "\(path) \(problem)")
            return nil
        }
    }
}
