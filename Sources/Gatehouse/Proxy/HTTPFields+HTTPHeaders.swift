import GatehouseDataPlane
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

extension HTTPFields {
    /// A member's request head (`RequestHead`, as the listener read it) as HTTP types' fields.
    init(_ head: RequestHead) {
        self.init()
        reserveCapacity(head.fields.count)
        for field in head.fields {
            if let name = HTTPField.Name(head.name(field)) { append(HTTPField(name: name, value: head.value(field))) }
        }
    }
}

extension HTTPHeaders {
    init(_ fields: HTTPFields) {
        self.init(fields.map { ($0.name.rawName, $0.value) })
    }
}
