import Foundation
import GatehouseCore

/// A stored column that holds a secret, the same in SQLite and PostgreSQL, and the row identity its values are sealed
/// for.
struct SealedColumn: Sendable {
    enum Kind: Sendable {
        /// The whole value is sealed.
        case sealed
        /// A session's body: sealed but for its level and frame choices, which SQL reads and changes.
        case sessionBody
        /// Looked up by an equal value: stored as `StorageKeyring.lookupHash`.
        case lookupHash
    }

    let table: String
    /// The column that names the row (its identity in the associated data).
    let key: String
    let column: String
    let kind: Kind

    /// The associated data of the value in the row named `key`.
    func context(_ key: String) -> String { "\(table).\(column):\(key)" }

    static let sessions = SealedColumn(table: "sessions", key: "id", column: "body", kind: .sessionBody)
    static let jars = SealedColumn(table: "cookie_jars", key: "session_id", column: "body", kind: .sealed)
    static let loginAttempts = SealedColumn(table: "login_attempts", key: "state", column: "body", kind: .sealed)
    static let flows = SealedColumn(table: "registration_flows", key: "sub", column: "body", kind: .sealed)
    static let phoneNumbers = SealedColumn(table: "registrations", key: "sub", column: "phone_number", kind: .sealed)
    static let displayNames = SealedColumn(table: "registrations", key: "sub", column: "display_name", kind: .sealed)
    static let assertionKeys = SealedColumn(table: "assertion_keys", key: "generation", column: "private_key", kind: .sealed)
    static let sentPhoneNumbers = SealedColumn(table: "verification_sends", key: "id", column: "phone_number", kind: .lookupHash)
    static let keptForms = SealedColumn(table: "kept_forms", key: "id_hash", column: "body", kind: .sealed)
    static let memberNames = SealedColumn(table: "members", key: "account", column: "name", kind: .sealed)
    static let matrixTokens = SealedColumn(table: "matrix_devices", key: "session_id", column: "access_token", kind: .sealed)
    static let pushSubscriptions = SealedColumn(table: "matrix_devices", key: "session_id", column: "push", kind: .sealed)

    static let all = [
        sessions, jars, loginAttempts, flows, phoneNumbers, displayNames, assertionKeys, sentPhoneNumbers, keptForms, memberNames, matrixTokens,
        pushSubscriptions,
    ]

    func seal(_ plaintext: String, key: String, with keyring: StorageKeyring) throws -> String {
        try keyring.seal(plaintext, context: context(key))
    }

    func open(_ sealed: String, key: String, with keyring: StorageKeyring) throws -> String {
        try keyring.open(sealed, context: context(key))
    }

    func seal<T: Encodable>(_ value: T, key: String, with keyring: StorageKeyring) throws -> String {
        try seal(RowCoding.encode(value), key: key, with: keyring)
    }

    func open<T: Decodable>(_ type: T.Type, _ sealed: String, key: String, with keyring: StorageKeyring) throws -> T {
        try RowCoding.decode(type, text: open(sealed, key: key, with: keyring))
    }
}

/// A session's stored body: `{"level": …, "frame": …, "chatUserID": …, "assurance": …, "sealed": "gh1:…"}`. The
/// level, the frame choices, the chat account and the assurance stay in clear because SQL changes them in place (a
/// registration raises every session of its member with its account, a reset lowers them; `setFrame` merges choices,
/// `setAssurance` records a step-up); everything else (identity, tokens, CSRF token, device) is sealed for the
/// session's id. The clear ones are the ones that count.
enum SessionRow {
    private struct Outer: Codable {
        var level: AuthLevel
        var frame: FramePreferences?
        var chatUserID: String?
        var assurance: Assurance?
        var sealed: String
    }

    static func encode(_ session: Session, with keyring: StorageKeyring) throws -> String {
        var inner = session
        inner.frame = nil
        inner.chatUserID = nil
        inner.assurance = nil
        let sealed = try SealedColumn.sessions.seal(inner, key: session.id, with: keyring)
        return try RowCoding.encode(
            Outer(level: session.level, frame: session.frame, chatUserID: session.chatUserID, assurance: session.assurance, sealed: sealed))
    }

    static func decode(_ text: String, id: String, with keyring: StorageKeyring) throws -> Session {
        let outer = try RowCoding.decode(Outer.self, text: text)
        var session = try SealedColumn.sessions.open(Session.self, outer.sealed, key: id, with: keyring)
        guard session.id == id else { throw StorageError.corrupt("sessions.body:\(id): the body is another session's") }
        session.level = outer.level
        session.frame = outer.frame
        session.chatUserID = outer.chatUserID
        session.assurance = outer.assurance
        return session
    }

    /// The key that sealed a stored body, `nil` for a body stored before bodies were sealed.
    static func keyID(of text: String) -> String? {
        (try? RowCoding.decode(Outer.self, text: text)).flatMap { StorageKeyring.keyID(of: $0.sealed) }
    }
}
