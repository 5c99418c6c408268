import Foundation
import SQLiteNIO

extension SQLiteData {
    static func text(_ value: String?) -> SQLiteData { value.map { .text($0) } ?? .null }
    static func time(_ date: Date) -> SQLiteData { .float(date.timeIntervalSince1970) }
}

/// JSON bodies for rows whose shape belongs to their concern, not to SQL.
enum RowCoding {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, from row: SQLiteRow, column: String = "body") throws -> T {
        guard let text = row.column(column)?.string else { throw StorageError.corrupt("missing \(column)") }
        return try decode(type, text: text)
    }

    static func decode<T: Decodable>(_ type: T.Type, text: String) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do {
            return try decoder.decode(T.self, from: Data(text.utf8))
        } catch {
            throw StorageError.corrupt("\(T.self): \(error)")
        }
    }
}
