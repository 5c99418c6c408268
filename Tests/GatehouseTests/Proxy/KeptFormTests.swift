import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// No lost work: a form posted when the session has ended or a step-up is due is kept, sent on once after the
/// sign-in, to its member only; another site's form and a script's request are never kept.
@Suite struct KeptFormTests {
    static let formPost = [("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document"), ("Accept", "text/html")]
    static let form = [("amount", "1200"), ("note", String(repeating: "long form ", count: 300))]

    static func keptID(_ location: String?) throws -> String {
        let link = try #require(location)
        let returnTo = try #require(FormEncoding.decode(String(link.split(separator: "?", maxSplits: 1)[1]))["return_to"])
        #expect(returnTo.hasPrefix("/kept-form?id="), "\(link)")
        return String(returnTo.dropFirst("/kept-form?id=".count))
    }

    @Test func aFormPostedWhenAStepUpIsDueIsSentOnceAfterIt() async throws {
        try await ProxyTests.withProxy(configure: {
            $0.apps[0].rules = PathRules([.init(paths: ["/echo/payroll/*"], require: .init(authAgeSeconds: 60))])
        }) { gateway, _ in
            var cookies = BrowserCookies()
            cookies.values = try await ProxyTests.signedIn(gateway)
            try await StepUpTests.age(gateway, cookies: cookies.values, by: 61)
            let headers = Self.formPost + [("Origin", gateway.origin)]

            // Another site's form, and a script's request, are not kept.
            let foreign = try await gateway.post(
                "/apps/echo/echo/payroll/claim", form: Self.form, cookies: cookies.values, headers: Self.formPost + [("Origin", "https://evil.example")])
            #expect(foreign.status == 303 && foreign.location?.contains("kept-form") == false)
            let script = try await gateway.post(
                "/apps/echo/echo/payroll/claim", form: Self.form, cookies: cookies.values,
                headers: [("Origin", gateway.origin), ("Sec-Fetch-Mode", "cors"), ("Accept", "application/json")])
            #expect(script.status == 401 && !script.body.contains("kept-form"))

            let posted = try await gateway.post("/apps/echo/echo/payroll/claim?step=2", form: Self.form, cookies: cookies.values, headers: headers)
            #expect(posted.status == 303)
            let id = try Self.keptID(posted.location)
            let back = try await StepUpTests.signInAgain(gateway, from: try #require(posted.location), cookies: &cookies)
            #expect(back.location == "/kept-form?id=\(id)")
            let page = try await gateway.get(try #require(back.location), cookies: cookies.values)
            #expect(page.status == 200 && page.body.contains("Your form was kept") && page.body.contains("id=\"kept-send\""))
            // Sent from its own address (so that the app's answer is where it belongs), marked with its id.
            let send = "/apps/echo/echo/payroll/claim?step=2&gatehouse-kept-form=\(id)"
            #expect(page.body.contains("href=\"\(gateway.origin)\(send.replacingOccurrences(of: "&", with: "&amp;"))\""))
            // Only to the address it was kept for.
            #expect(try await gateway.get("/apps/echo/echo/payroll/other?gatehouse-kept-form=\(id)", cookies: cookies.values).status == 410)
            let sent = try await gateway.get(send, cookies: cookies.values, headers: Self.formPost)
            let report = try ProxyTests.report(sent)
            #expect(sent.status == 200 && report.path == "/echo/payroll/claim?step=2" && report.bodyBytes == FormEncoding.encode(Self.form).utf8.count)
            #expect(report.headers["content-type"] == ["application/x-www-form-urlencoded"])
            // Never twice.
            let again = try await gateway.get(send, cookies: cookies.values, headers: Self.formPost)
            #expect(again.status == 410 && again.body.contains("This form was already sent"))
            #expect(try await gateway.get("/kept-form?id=\(id)", cookies: cookies.values).status == 410)
        }
    }

    @Test func aFormPostedAsTheSessionRanOutWaitsForItsMemberOnly() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let alice = try await ProxyTests.signedIn(gateway)
            try await StepUpTests.age(gateway, cookies: alice, by: 1801)
            let posted = try await gateway.post(
                "/apps/echo/echo/leave-request", form: Self.form, cookies: alice, headers: Self.formPost + [("Origin", gateway.origin)])
            #expect(posted.status == 303 && posted.location?.hasPrefix("/signin?") == true && posted.location?.contains("expired=1") == true)
            let id = try Self.keptID(posted.location)
            let signInPage = try await gateway.get(try #require(posted.location), cookies: [:])
            #expect(signInPage.body.contains("Your form is kept"))

            // Another member signing in on this browser cannot have it, or discard it.
            let bob = try await ProxyTests.signedIn(gateway, as: "bob")
            #expect(try await gateway.get("/kept-form?id=\(id)", cookies: bob).status == 410)
            #expect(try await gateway.get("/apps/echo/echo/leave-request?gatehouse-kept-form=\(id)", cookies: bob, headers: Self.formPost).status == 410)

            let flow = try await SignInFlowTests.signIn(gateway, as: "alice", deepLink: "/kept-form?id=\(id)")
            #expect(flow.callbackReply?.location == "/kept-form?id=\(id)")
            let send = "/apps/echo/echo/leave-request?gatehouse-kept-form=\(id)"
            let sent = try await gateway.get(send, cookies: flow.cookies.values, headers: Self.formPost)
            #expect(try ProxyTests.report(sent).path == "/echo/leave-request")
            #expect(try await gateway.get(send, cookies: flow.cookies.values).status == 410)
        }
    }

    @Test func aFormOverTheLimitIsNotKept() async throws {
        try await ProxyTests.withProxy(configure: { $0.proxy.maximumRequestBodyBytes = 1000 }) { gateway, _ in
            let alice = try await ProxyTests.signedIn(gateway)
            try await StepUpTests.age(gateway, cookies: alice, by: 1801)
            let posted = try await gateway.post(
                "/apps/echo/echo/upload", form: Self.form, cookies: alice, headers: Self.formPost + [("Origin", gateway.origin)])
            #expect(posted.status == 303 && posted.location?.contains("kept-form") == false, "\(posted.location ?? "")")
        }
    }

    /// On an app host: the step-up comes back to the path through the host's handoff, and a kept form is sent from
    /// the app's own host with its grant.
    @Test func onAnAppHostTheStepUpAndTheKeptFormKeepToTheHost() async throws {
        try await EchoUpstream.run { upstream in
            try await LiveGateway.run(configure: {
                $0.appsDomain = "apps.localhost"
                $0.apps = [
                    AppConfiguration(
                        slug: "spa", name: "SPA", upstream: URL(string: upstream.origin + "/")!, mount: .host,
                        rules: PathRules([.init(paths: ["/echo/payroll/*"], require: .init(authAgeSeconds: 60))]))
                ]
            }) { gateway in
                var cookies = BrowserCookies()
                cookies.values = try await ProxyTests.signedIn(gateway)
                let grant = try await HostMountTests.handoff(gateway, session: cookies.values)
                let host = HostMountTests.host("spa", gateway)
                let appOrigin = "http://spa.apps.localhost:\(gateway.port)"
                try await StepUpTests.age(gateway, cookies: cookies.values, by: 61)

                let page = try await gateway.get("/echo/payroll/x?y=1", cookies: ["gatehouse_app": grant], headers: host + StepUpTests.navigation)
                let link = try #require(page.location)
                #expect(link.hasPrefix(gateway.origin + "/signin/start?return_to=%2Fapps-open%2Fspa%3Fto%3D%252Fecho%252Fpayroll%252Fx%253Fy%253D1"))
                let posted = try await gateway.post(
                    "/echo/payroll/claim", form: Self.form, cookies: ["gatehouse_app": grant], headers: host + Self.formPost + [("Origin", appOrigin)])
                let id = try Self.keptID(posted.location)

                let back = try await StepUpTests.signInAgain(gateway, from: link, cookies: &cookies)
                let reopened = try await gateway.get(try #require(back.location), cookies: cookies.values)
                #expect(reopened.location == appOrigin + "/echo/payroll/x?y=1")
                #expect(try await gateway.get("/echo/payroll/x", cookies: ["gatehouse_app": grant], headers: host + StepUpTests.navigation).status == 200)

                let kept = try await gateway.get("/kept-form?id=\(id)", cookies: cookies.values)
                let send = "/echo/payroll/claim?gatehouse-kept-form=\(id)"
                #expect(kept.body.contains("href=\"\(appOrigin)\(send)\""))
                let sent = try await gateway.get(send, cookies: ["gatehouse_app": grant], headers: host + Self.formPost)
                let report = try ProxyTests.report(sent)
                #expect(report.path == "/echo/payroll/claim" && report.bodyBytes == FormEncoding.encode(Self.form).utf8.count)
                #expect(try await gateway.get(send, cookies: ["gatehouse_app": grant], headers: host).status == 410)
            }
        }
    }
}
