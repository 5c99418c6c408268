import HTTPTypes
import NIOHTTP1

extension HTTPFields {
    /// NIO's fields as HTTP types' (names that are not tokens are left out: the parser would not have let them in).
    init(_ headers: HTTPHeaders) {
        self.init()
        reserveCapacity(headers.count)
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { append(HTTPField(name: name, value: value)) }
        }
    }
}

extension HTTPHeaders {
    init(_ fields: HTTPFields) {
        self.init(fields.map { ($0.name.rawName, $0.value) })
    }
}
