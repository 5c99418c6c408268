import Hummingbird

/// A plain-text body: health and readiness answers, the metrics exposition, the error page when templates fail.
enum PlainTextResponse {
    static func make(
        _ text: String, status: HTTPResponse.Status = .ok, contentType: String = "text/plain", headers: HTTPFields = [:]
    ) -> Response {
        var fields = headers
        fields[.contentType] = contentType
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
