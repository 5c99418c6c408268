import Logging
import Synchronization

/// The gateway's log level (`log_level`), which a reload of the configuration changes for every logger at once: the
/// gateway's handlers (`FollowingLevel`) ask it at each line.
public final class LogLevelSetting: Sendable {
    /// The one the gateway's process runs with.
    public static let gateway = LogLevelSetting(.info)

    private let index: Atomic<Int>

    public init(_ level: Logger.Level) {
        index = Atomic(Logger.Level.allCases.firstIndex(of: level) ?? 0)
    }

    public var level: Logger.Level {
        get { Logger.Level.allCases[index.load(ordering: .relaxed)] }
        set { index.store(Logger.Level.allCases.firstIndex(of: newValue) ?? 0, ordering: .relaxed) }
    }
}

/// A handler whose level is the setting's, whatever the logger it belongs to was given: a logger that sets its own
/// level (a command that wants warnings only) keeps it.
public struct FollowingLevel<Inner: LogHandler>: LogHandler {
    var inner: Inner
    let setting: LogLevelSetting
    private var own: Logger.Level?

    public init(_ inner: Inner, setting: LogLevelSetting = .gateway) {
        self.inner = inner
        self.setting = setting
    }

    public var logLevel: Logger.Level {
        get { own ?? setting.level }
        set { own = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    public func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt
    ) {
        inner.log(level: level, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }
}
