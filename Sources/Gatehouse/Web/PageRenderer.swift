import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird
import Mustache

/// Renders Mustache templates from `Templates/` with the request's strings table as `s` (`Languages`), the gateway's
/// files by their hashed URLs as `assets` (`{{assets.gatehouse_css}}`), and the common page values.
public struct PageRenderer: Sendable {
    let library: MustacheLibrary
    public let languages: Languages
    public let assets: GatewayAssets
    private let assetURLs: [String: String]
    /// The brand's files by their hashed URLs, named once (`brandStyle`, `brandLogo` in every page).
    private let brandURLs: [String: String]
    let developmentMode: Bool
    /// The session's limits, for the warning before it ends on signed-in pages (`nil`: no warning).
    let sessionWarning: SessionConfiguration?
    /// The organization's files among the gateway's (`brand.accent_colour`'s stylesheet, `brand.logo`), by their plain
    /// paths (`/static/brand/accent.css`): `assets.url(for:)` names them by their hashes.
    public let brand: BrandFiles

    public struct BrandFiles: Sendable {
        public var style: String?
        public var logo: String?

        public init(style: String? = nil, logo: String? = nil) {
            (self.style, self.logo) = (style, logo)
        }

        static let stylePath = "/brand/accent.css"

        /// The files `brand` adds to the gateway's, and where they are.
        static func of(_ brand: BrandConfiguration) -> (files: [(path: String, bytes: [UInt8])], paths: BrandFiles) {
            var files: [(path: String, bytes: [UInt8])] = []
            if let accent = brand.accent { files.append((stylePath, Array(accent.css.utf8))) }
            if let logo = brand.logo { files.append((logo.path, logo.bytes)) }
            return (
                files,
                BrandFiles(style: brand.accent == nil ? nil : Paths.publicAssets + stylePath, logo: brand.logo.map { Paths.publicAssets + $0.path })
            )
        }
    }

    /// The strings of the request being handled.
    public var strings: StringsTable { languages.strings }

    public init(
        library: MustacheLibrary, languages: Languages, assets: GatewayAssets, developmentMode: Bool, sessionWarning: SessionConfiguration? = nil,
        brand: BrandFiles = BrandFiles()
    ) {
        self.sessionWarning = sessionWarning.flatMap { $0.warningSeconds > 0 ? $0 : nil }
        self.brand = brand
        brandURLs = ["brandStyle": brand.style.map(assets.url(for:)), "brandLogo": brand.logo.map(assets.url(for:))].compactMapValues { $0 }
        self.library = library
        self.languages = languages
        self.assets = assets
        self.assetURLs = assets.templateNames
        self.developmentMode = developmentMode
    }

    public static func load(configuration: GatehouseConfiguration) async throws -> PageRenderer {
        let library = try await MustacheLibrary(directory: configuration.directories.templates)
        let languages = try Languages.load(
            directory: configuration.directories.strings, defaultLanguage: configuration.brand.defaultLanguage, brand: configuration.brand)
        let brand = BrandFiles.of(configuration.brand)
        let assets = try GatewayAssets.load(directory: configuration.directories.publicFiles, adding: brand.files)
        return PageRenderer(
            library: library, languages: languages, assets: assets, developmentMode: configuration.developmentMode,
            sessionWarning: configuration.session, brand: brand.paths)
    }

    /// The HTML of `template` with `values`, or a `PageRenderingError` when the template is missing.
    public func html(_ template: String, title: String, _ values: [String: Any] = [:]) throws -> String {
        let strings = strings
        var context = TemplateValues.present(values)
        context["s"] = strings.values
        context["assets"] = assetURLs
        context["title"] = title
        context["lang"] = strings["lang"]
        context["dir"] = strings.direction
        context["gatewayName"] = strings["gateway_name"]
        context.merge(brandURLs) { _, brand in brand }
        context["developmentMode"] = developmentMode
        // A signed-in member's page warns before the session ends.
        if let session = sessionWarning, RequestLanguage.current?.isSignedIn == true {
            context["sessionWatch"] = ["idle": session.idleTimeoutSeconds, "warn": session.warningSeconds]
        }
        guard let html = library.render(context, withTemplate: template) else { throw PageRenderingError.missingTemplate(template) }
        return html
    }

    /// A piece of markup for another document (no page title or layout of its own).
    public func fragment(_ template: String, _ values: [String: Any]) throws -> String {
        try html(template, title: "", values)
    }

    public func page(_ template: String, title: String, status: HTTPResponse.Status = .ok, _ values: [String: Any] = [:]) throws -> Response {
        let html = try html(template, title: title, values)
        return Response(
            status: status,
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: html))
        )
    }
}

public enum PageRenderingError: Error, CustomStringConvertible {
    case missingTemplate(String)
    public var description: String {
        switch self {
        case .missingTemplate(let name): "template \(name).mustache is missing"
        }
    }
}
