import NIOConcurrencyHelpers
import NIOPosix
import Synchronization

/// A small map of each thread's own, in front of state every request reads and few change (a shared cache behind a
/// lock): a thread finds what it found before without taking the shared lock. Two event loops taking one lock on
/// every page contend on it, and a contended lock is a `futex` that wakes the other loop; each loop reading its own
/// memo never does.
///
/// What a memo holds is a copy that its owner decides is still good (an entry carries whatever the owner needs to
/// tell: the time it is good until, the version of the shared state it was read at). A thread's memo holds at most
/// `limit` entries and starts over past it. All memos of a thread live in one thread-specific table (a `pthread`
/// key per memo would run out in a process that makes many), by the memo's number; a memo that is gone leaves its
/// entries until the table starts over.
public final class ThreadMemo<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private final class Entries {
        var values: [Key: Value] = [:]
    }

    private let number = ThreadMemos.nextNumber.add(1, ordering: .relaxed).newValue
    let limit: Int

    public init(limit: Int) {
        self.limit = limit
    }

    /// This thread's copy for `key`, if it kept one.
    public subscript(key: Key) -> Value? {
        existing()?.values[key]
    }

    /// This thread's copy for `key` while `isCurrent` holds of it; else what the shared state has (`shared`, under
    /// its lock), kept as this thread's copy when `isCurrent` holds of that.
    public func value(for key: Key, isCurrent: (Value) -> Bool = { _ in true }, shared: () -> Value?) -> Value? {
        if let mine = self[key], isCurrent(mine) { return mine }
        guard let found = shared(), isCurrent(found) else { return nil }
        remember(found, for: key)
        return found
    }

    /// Keeps `value` for `key` on this thread.
    public func remember(_ value: Value, for key: Key) {
        let entries = mine()
        if entries.values.count >= limit, entries.values[key] == nil { entries.values.removeAll(keepingCapacity: true) }
        entries.values[key] = value
    }

    /// Forgets this thread's copy for `key`.
    public func forget(_ key: Key) {
        existing()?.values[key] = nil
    }

    private func existing() -> Entries? {
        ThreadMemos.table.currentValue?.memos[number].map(Self.entries)
    }

    private func mine() -> Entries {
        let table = ThreadMemos.table.currentValue ?? ThreadMemos.Table.install()
        if let found = table.memos[number] { return Self.entries(found) }
        if table.memos.count >= ThreadMemos.Table.limit { table.memos.removeAll(keepingCapacity: true) }
        let made = Entries()
        table.memos[number] = made
        return made
    }

    /// The entries under this memo's number are always its own kind: the number is never reused.
    private static func entries(_ object: AnyObject) -> Entries { unsafeDowncast(object, to: Entries.self) }
}

/// The thread-specific table every `ThreadMemo` keeps its entries in.
enum ThreadMemos {
    final class Table: @unchecked Sendable {
        /// Memos a thread uses at once are few (a gateway's, a test's several gateways'); past this, those of gone
        /// memos are dropped with the rest.
        static let limit = 64
        var memos: [UInt64: AnyObject] = [:]

        static func install() -> Table {
            let table = Table()
            ThreadMemos.table.currentValue = table
            return table
        }
    }

    static let table = ThreadSpecificVariable<Table>()
    static let nextNumber = Atomic<UInt64>(0)
}

/// A value every request reads and that rarely changes (the running configuration's generation, the signing keys),
/// read without the shared lock: each thread keeps a copy with the version it was read at and looks only at the
/// version (one atomic load) while it is current. A change takes the lock and moves the version.
public final class ReadMostly<Value: Sendable>: Sendable {
    private let current: NIOLockedValueBox<Versioned>
    private let version = Atomic<UInt64>(0)
    private let copies = ThreadMemo<Bool, Versioned>(limit: 1)

    private struct Versioned: Sendable {
        var version: UInt64
        var value: Value
    }

    public init(_ value: Value) {
        current = NIOLockedValueBox(Versioned(version: 0, value: value))
    }

    public var value: Value {
        let now = version.load(ordering: .acquiring)
        if let copy = copies[true], copy.version == now { return copy.value }
        let read = current.withLockedValue { $0 }
        copies.remember(read, for: true)
        return read.value
    }

    /// Changes the value under the lock; every thread reads the new one from its next read on.
    @discardableResult
    public func change<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try current.withLockedValue { current in
            defer {
                current.version += 1
                version.store(current.version, ordering: .releasing)
            }
            return try body(&current.value)
        }
    }
}
