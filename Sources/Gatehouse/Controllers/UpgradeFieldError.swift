/// An inline message for one field of an upgrade step's page; `key` names the template's `<key>Error` value when it
/// differs from the field's id.
struct UpgradeFieldError {
    let field: String
    let message: String
    let key: String

    init(_ field: String, _ message: String, key: String? = nil) {
        self.field = field
        self.message = message
        self.key = key ?? Self.camelCase(field)
    }

    static func camelCase(_ id: String) -> String {
        let parts = id.split(separator: "-")
        return parts.enumerated().map { $0 == 0 ? String($1) : $1.prefix(1).uppercased() + $1.dropFirst() }.joined()
    }
}
