import GatehouseCore
import NIOHTTP1

extension HTTPHeaders {
    /// The value of the first cookie called `name` in these `Cookie` fields (a request's).
    func cookie(named name: String) -> String? {
        // Read as bytes, pair by pair, without splitting the field: every request asks this.
        let name = name.utf8
        for (fieldName, field) in self where fieldName.utf8.elementsEqual("cookie".utf8, by: { $0.asciiLowercased == $1 }) {
            let bytes = field.utf8
            var pairStart = bytes.startIndex
            while pairStart < bytes.endIndex {
                let pairEnd = bytes[pairStart...].firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
                let pair = bytes[pairStart..<pairEnd].drop { $0 == UInt8(ascii: " ") }
                if let equals = pair.firstIndex(of: UInt8(ascii: "=")), pair[..<equals].elementsEqual(name) {
                    return String(Substring(pair[pair.index(after: equals)...]))
                }
                pairStart = pairEnd < bytes.endIndex ? bytes.index(after: pairEnd) : pairEnd
            }
        }
        return nil
    }
}
