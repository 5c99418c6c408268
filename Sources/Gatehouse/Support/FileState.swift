import Foundation

/// What tells that a file changed: its modification time, size and inode (a secret mount swaps a link).
struct FileState: Equatable, Sendable {
    let modified: Date?
    let size: Int?
    let inode: Int?

    init(path: String) {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        modified = attributes?[.modificationDate] as? Date
        size = (attributes?[.size] as? NSNumber)?.intValue
        inode = (attributes?[.systemFileNumber] as? NSNumber)?.intValue
    }
}
