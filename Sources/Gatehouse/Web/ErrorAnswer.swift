import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird
import Logging

/// An error as the member gets it: an error page for browsers, JSON for API callers, always with the request id
/// (the application's error pages and the data plane's answers alike).
struct ErrorAnswer {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let body: String

    /// `key` names the strings of the page's title and text; `toast` a string the page also shows as a toast.
    static func make(
        renderer: PageRenderer, status: HTTPResponse.Status, reason: String, key: String, arguments: [String: String] = [:],
        toast: String? = nil, wantsJSON: Bool, requestID: String, retryURL: String, logger: Logger
    ) -> ErrorAnswer {
        let title = renderer.strings["\(key)_title"]
        let text = renderer.strings.text("\(key)_text", arguments)
        if wantsJSON {
            let parts = reason.split(separator: ":", maxSplits: 1).map(String.init)
            // What was wrong with a caller's bad request, said to the caller (`call_id: 1 to 64 letters…`); never a
            // failure's inner detail.
            let detail = status == .badRequest && parts.count == 2 ? ["detail": parts[1]] : [:]
            return json(status: status, reason: parts.first ?? reason, message: text, requestID: requestID, extra: detail)
        }
        var values: [String: Any] = [
            "heading": title, "message": text, "requestID": requestID, "retry": status.code >= 500 || status == .tooManyRequests,
            "retryURL": retryURL,
        ]
        if let toast { values["toast"] = renderer.strings[toast] }
        do {
            let html = try renderer.html("error", title: title, values)
            return ErrorAnswer(status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"], body: html)
        } catch {
            logger.error("error page could not be rendered", metadata: ["error": .string("\(error)")])
            return ErrorAnswer(
                status: status, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                body: "\(title)\n\n\(text)\n\n\(renderer.strings["error_request_id"]): \(requestID)\n")
        }
    }

    static func json(
        status: HTTPResponse.Status, reason: String, message: String, requestID: String?, extra: [String: String] = [:]
    ) -> ErrorAnswer {
        var object: [String: String] = extra.merging(["error": reason, "message": message]) { _, own in own }
        object["request_id"] = requestID
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return ErrorAnswer(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"], body: body)
    }

    /// API callers ask for JSON and not for HTML; browsers always accept `text/html`.
    static func wantsJSON(accept: String?) -> Bool {
        let accept = accept?.lowercased() ?? ""
        return accept.containsBytes(of: "application/json") && !accept.containsBytes(of: "text/html")
    }

    var response: Response {
        Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
