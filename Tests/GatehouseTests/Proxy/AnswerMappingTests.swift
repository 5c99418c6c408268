import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The answer mapping both paths share: its policy rendered once for apps without their own is the policy the full
/// merge gives, with the nonce where it belongs.
@Suite struct AnswerMappingTests {
    @Test func thePolicyRenderedOnceIsTheMergedPolicy() async throws {
        let configuration = try LiveGateway.developmentConfiguration(port: 8080)
        let mapping = AnswerMapping(configuration: configuration, renderer: try await PageRenderer.load(configuration: configuration))
        for nonce in [nil, "n0nce-Value_1", RandomToken.make(bytes: 18)] {
            let merged = GatehouseCore.ContentSecurityPolicy.combined(
                gateway: mapping.gatewayPolicy, upstream: [], nonce: nonce, scriptURLs: mapping.barScriptURLs, styleURLs: mapping.barStyleURLs, imageURLs: mapping.barImageURLs)
            #expect(mapping.policy(app: "any", upstream: [], nonce: nonce) == merged)
        }
        let nonce = RandomToken.make(bytes: 18)
        let policy = mapping.policy(app: "any", upstream: [], nonce: nonce)
        // No nonce in the gateway's own policy: it would switch off the `'unsafe-inline'` an app without a policy needs.
        #expect(policy.contains("script-src") && !policy.contains("'nonce-"))
        #expect(!policy.contains(AnswerMapping.noncePlaceholder))
        // An app's own policy is merged each time, and enforced beside the gateway's.
        let strict = mapping.policy(app: "any", upstream: ["script-src 'none'"], nonce: nonce)
        #expect(strict.hasPrefix(policy + ", ") && strict.contains("'nonce-\(nonce)'"))
    }

    /// Only a document whose charset spells `<` as ASCII does is rewritten: the charset read in any case, quoted or
    /// not, among other parameters.
    @Test(arguments: [
        (nil, true), ("text/html", true), ("text/html; charset=utf-8", true), ("TEXT/HTML; CHARSET=UTF-8", true),
        ("text/html;charset=\"iso-8859-1\"", true), ("text/html; charset=windows-1252; x=utf-16", true),
        ("text/html; charset=UTF-16LE", false), ("text/html; charset=\"utf-16\"", false), ("text/html; Charset='UTF-32BE'", false),
        ("text/html; charset=ucs-2", false), ("text/html; charset=utf-7", false), ("text/html; charset=\"unicode\"", false),
        ("text/html; charset=unicodeFFFE", false), ("text/html; charset=ISO-10646-UCS-2", false), ("text/html; charset= utf-16", false),
    ])
    func theCharsetDecidesWhetherADocumentIsRewritten(contentType: String?, rewritable: Bool) {
        #expect(AnswerMapping.isASCIICompatible(contentType: contentType) == rewritable)
    }
}
