import AsyncHTTPClient
import CompressNIO
import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird
import Logging

/// Small upstream apps that development mode runs on its own loopback port, so that a newcomer sees every proxy
/// behaviour in the browser: an app with its own sign-in cookie and a visit counter (the shared jar), links and a
/// form (path rewriting), gzip, a redirect out of the allowlist, and chat, calls and stories apps for registered members.
public enum DemoApps {
    public static let defaultPort = 8081

    /// The catalog development mode uses when the configuration names no apps.
    public static func catalog(port: Int) -> [AppConfiguration] {
        let base = "http://127.0.0.1:\(port)"
        return [
            AppConfiguration(
                slug: "visits", name: "Visit Counter", description: "Counts your visits with the app's own cookie",
                upstream: URL(string: base + "/visits/")!),
            AppConfiguration(
                slug: "links", name: "Links and Forms", description: "Links, forms and redirects of every kind",
                upstream: URL(string: base + "/links/")!),
            AppConfiguration(
                slug: "gzip", name: "Compressed Page", description: "A page its server sends gzipped", upstream: URL(string: base + "/gzip/")!),
            AppConfiguration(
                slug: "leave", name: "Redirect Elsewhere", description: "Tries to send you outside the organization's apps",
                upstream: URL(string: base + "/leave/")!),
            AppConfiguration(
                slug: "hosted", name: "Links on Their Own Host", description: "An app on a host name of its own",
                upstream: URL(string: base + "/links/")!, mount: .host),
            AppConfiguration(slug: slowSlug, name: "Slow App", description: "Takes a few seconds to answer", upstream: URL(string: base + "/slow/")!),
            AppConfiguration(
                slug: "styled", name: "Heavily Styled App", description: "Fixed headers and styles that fight the bar",
                upstream: URL(string: base + "/styled/")!),
            AppConfiguration(
                slug: "fullscreen", name: "Full-Screen App", description: "Its own full-screen interface, with the bar tucked away",
                upstream: URL(string: base + "/fullscreen/")!, gatewayBar: .handle),
            AppConfiguration(
                slug: whoAmISlug, name: "Who Am I", description: "What an app learns about you, and how it checks it",
                upstream: URL(string: base + "/whoami/")!),
            AppConfiguration(
                slug: chatsSlug, name: "Chats", description: "Messages with your colleagues", upstream: URL(string: base + "/chat/")!,
                minimumLevel: .registered,
                headers: AppHeaderConfiguration(identity: AppHeaderConfiguration.defaultIdentity.merging(["X-Forwarded-Chat-User": .chatUserID]) { $1 })),
            AppConfiguration(
                slug: callsSlug, name: "Calls", description: "Audio and video calls", upstream: URL(string: base + "/calls/")!,
                minimumLevel: .registered, permissions: ["camera", "microphone"]),
            AppConfiguration(
                slug: storiesSlug, name: "Stories", description: "Short updates that disappear after a day",
                upstream: URL(string: base + "/stories/")!, minimumLevel: .registered),
        ]
    }

    /// The demo apps behind the Chats, Calls and Stories tabs.
    public static let chatsSlug = "chat"
    public static let callsSlug = "calls"
    public static let storiesSlug = "stories"
    /// An app that takes `slowSeconds` to answer: the loading page's slow notice.
    public static let slowSlug = "slow"
    public static let slowSeconds = 8

    /// `keysURL`: the gateway's published assertion keys, fetched with `http` by the Who Am I app.
    public static func application(port: Int, keysURL: String, http: HTTPClient, logger: Logger) -> some ApplicationProtocol {
        let router = Router()
        let whoAmI = WhoAmI(keysURL: keysURL, audience: "http://127.0.0.1:\(port)", http: http)
        router.get("whoami/") { request, _ in await whoAmI.page(request) }
        router.get("visits/") { request, _ in try visits(request) }
        router.post("visits/login") { request, _ -> Response in
            let form = FormEncoding.decode(String(buffer: try await request.body.collect(upTo: 4096)))
            let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
            var response = Response(status: .seeOther, headers: [.location: "/visits/"])
            if !name.isEmpty {
                response.headers.append(HTTPField(name: .setCookie, value: "demo_user=\(FormEncoding.escape(name)); Path=/; HttpOnly"))
            }
            return response
        }
        router.get("links/") { _, _ in
            page(
                "Links and Forms",
                """
                <p>Every link below is root-relative or absolute on this app's own host; the gateway rewrites them.</p>
                <ul>
                  <li><a id="about-link" href="/links/about">About (root-relative)</a></li>
                  <li><a id="absolute-link" href="http://127.0.0.1:\(port)/links/about">About (absolute URL)</a></li>
                  <li><a id="visits-link" href="/visits/">The visit counter (another app)</a></li>
                  <li><a id="outside-link" href="https://outside.example/news">News from outside the organization</a></li>
                </ul>
                <form method="post" action="/links/echo">
                  <label for="message">Message</label> <input id="message" name="message" value="hello">
                  <button type="submit" id="send">Send</button>
                </form>
                """)
        }
        router.get("links/about") { _, _ in page("About", "<p id=\"about\">Reached through a rewritten link.</p><p><a href=\"/links/\">Back</a></p>")
        }
        router.post("links/echo") { request, _ in
            let form = FormEncoding.decode(String(buffer: try await request.body.collect(upTo: 64 * 1024)))
            return page(
                "Echo", "<p>The app received: <strong id=\"echo\">\(escape(form["message"] ?? ""))</strong></p><p><a href=\"/links/\">Back</a></p>")
        }
        router.get("gzip/") { request, _ -> Response in
            let html = pageHTML(
                "Compressed Page",
                "<p id=\"gzip\">This page left the app gzip-compressed.</p>" + String(repeating: "<p>Filler for compression.</p>", count: 200))
            guard request.headers[.acceptEncoding]?.contains("gzip") == true else { return page(html) }
            var plain = ByteBuffer(string: html)
            let compressed = try plain.compress(with: .gzip())
            return Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8", .contentEncoding: "gzip"], body: .init(byteBuffer: compressed))
        }
        router.get("leave/") { _, _ in Response(status: .found, headers: [.location: "https://outside.example/landing"]) }
        router.get("chat/") { request, _ in
            // The member's chat account, as the gateway tells this app (`X-Forwarded-Chat-User`, from the homeserver).
            let account = request.headers[HTTPField.Name("X-Forwarded-Chat-User")!].map {
                "<p id=\"chat-account\">You are <strong>\(escape($0))</strong> on the chat homeserver.</p>"
            }
            return page("Chats", "<p id=\"chat\">Welcome to the chat app. Only registered members get here.</p>" + (account ?? ""), mobile: true)
        }
        router.get("calls/") { request, _ in
            // The call options the gateway's Calls tab passes along.
            let query = request.uri.queryParameters
            let options = ["call", "camera", "microphone", "audio_output"].map { name in
                "<dt>\(name)</dt><dd id=\"call-\(name)\">\(escape(query.get(name) ?? "not given"))</dd>"
            }
            return page("Calls", "<p id=\"calls\">The call app received these options:</p><dl>\(options.joined())</dl>", mobile: true)
        }
        router.get("slow/") { _, _ in
            try await Task.sleep(for: .seconds(slowSeconds))
            return page("Slow App", "<p id=\"slow\">This app took \(slowSeconds) seconds to answer.</p>")
        }
        // An app whose own CSS restyles everything (`*`, `div`, `button`, the root font size): the bar must not change.
        router.get("styled/") { _, _ in
            page(
                pageHTML(
                    "Heavily Styled App",
                    "<div id=\"styled\"><p>This app's stylesheet restyles every element, every div and every button.</p>"
                        + "<button type=\"button\">An app button</button></div>", stylesheet: "/styled/app.css"))
        }
        // A service worker of the app's (an offline cache), on the gateway's origin once the app is path-mounted: what
        // signing out must clear.
        router.get("links/worker.js") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/javascript; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: "self.addEventListener('fetch', () => {});\n")))
        }
        router.get("styled/app.css") { _, _ in
            stylesheet(
                """
                html { font-size: 24px !important; }
                * { font-family: Georgia, serif !important; color: #6b0f0f !important; letter-spacing: 0.1em !important;
                    margin: 6px !important; line-height: 2 !important; box-sizing: content-box !important; }
                body { background: #fff8e8 !important; display: flex !important; flex-direction: column-reverse !important; }
                div { border: 4px dashed #6b0f0f !important; padding: 20px !important; display: inline-block !important; }
                button { background: #ffd0e0 !important; font-size: 32px !important; border-radius: 0 !important; padding: 18px !important; }
                nav, a, summary, section { display: block !important; float: right !important; }
                """)
        }
        // An app with its own full-screen interface, which turns the bar off (`gateway_bar: false`): only the handle.
        router.get("fullscreen/") { _, _ in
            page(
                pageHTML(
                    "Full-Screen App", "<p id=\"fullscreen\">This app fills the whole window with its own toolbar at the top.</p>",
                    stylesheet: "/fullscreen/app.css"))
        }
        router.get("fullscreen/app.css") { _, _ in
            stylesheet(
                """
                html, body { margin: 0; height: 100%; }
                main { position: fixed; inset: 0; display: flex; flex-direction: column; font-family: system-ui, sans-serif;
                    background: #0f2a3d; color: #ffffff; }
                h1 { background: #081823; padding: 0 1rem; height: 3rem; display: flex; align-items: center; font-size: 1.25rem; margin: 0; }
                p { padding: 1rem; margin: 0; }
                """)
        }
        router.get("stories/") { _, _ in page("Stories", "<p id=\"stories\">Stories from your colleagues appear here.</p>", mobile: true) }
        return Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "gatehouse-demo-apps"), logger: logger)
    }

    static func visits(_ request: Request) throws -> Response {
        guard let user = request.cookies["demo_user"]?.value.removingPercentEncoding else {
            return page(
                "Visit Counter",
                """
                <p>This app has its own sign-in, kept in its own cookie (which the gateway keeps in your server-side jar).</p>
                <form method="post" action="/visits/login">
                  <label for="name">Your name for this app</label> <input id="name" name="name" autocomplete="name">
                  <button type="submit" id="app-sign-in">Sign in to the app</button>
                </form>
                """)
        }
        let count = (Int(request.cookies["demo_visits"]?.value ?? "") ?? 0) + 1
        var response = page(
            "Visit Counter",
            "<p>Hello, <span id=\"app-user\">\(escape(user))</span>. Visits: <strong id=\"visits\">\(count)</strong></p><p><a href=\"/links/\">Links and Forms</a></p>"
        )
        response.headers.append(HTTPField(name: .setCookie, value: "demo_visits=\(count); Path=/; Max-Age=86400"))
        return response
    }

    /// A demo app's page. The older intranet apps it imitates declare no mobile viewport (a phone lays them out 980 px
    /// wide and shows them scaled down); the chat apps do (`mobile`).
    static func pageHTML(_ title: String, _ body: String, stylesheet: String? = nil, mobile: Bool = false) -> String {
        let link = stylesheet.map { "<link rel=\"stylesheet\" href=\"\($0)\">" } ?? ""
        let viewport = mobile ? "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">" : ""
        return
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\(viewport)<title>\(title)</title>\(link)</head><body><main><h1>\(title)</h1>\(body)</main></body></html>"
    }

    static func stylesheet(_ css: String) -> Response {
        Response(status: .ok, headers: [.contentType: "text/css; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: css)))
    }

    static func page(_ title: String, _ body: String, mobile: Bool = false) -> Response {
        page(pageHTML(title, body, mobile: mobile))
    }

    static func page(_ html: String) -> Response {
        Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
    }
}
