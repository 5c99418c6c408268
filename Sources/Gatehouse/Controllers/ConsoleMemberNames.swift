import GatehouseStorage

/// How the console names members: the name they last signed in with and their username beside the subject id, which
/// stays shown (it is what the audit trail is filtered by and what apps receive).
struct ConsoleMemberNames {
    let names: [String: MemberName]

    /// The names of every member among `subjects`, in one query.
    static func load(_ subjects: some Sequence<String?>, from members: any MemberStore) async throws -> ConsoleMemberNames {
        ConsoleMemberNames(names: try await members.names(accounts: Array(Set(subjects.compactMap { $0 })).sorted()))
    }

    /// `values` with the name and username of `subject` (where known) as `memberName` and `memberUsername`.
    func adding(to values: [String: Any], subject: String?) -> [String: Any] {
        guard let subject, let known = names[subject] else { return values }
        var values = values
        values["memberName"] = known.name
        values["memberUsername"] = known.username
        return values
    }
}
