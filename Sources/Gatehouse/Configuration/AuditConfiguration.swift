/// The audit trail (`audit.*`): always kept in the store for the console, and written as JSON lines where `file` says.
public struct AuditConfiguration: Sendable, Equatable {
    /// A file the records are appended to, one JSON object per line, or `-` for standard output; none by default.
    public var file: String?
    /// Records older than this many days are removed from the store (the file is the operator's to rotate).
    public var retentionDays: Int

    public init(file: String? = nil, retentionDays: Int = 90) {
        self.file = file
        self.retentionDays = retentionDays
    }
}
