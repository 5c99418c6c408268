import Logging
import Synchronization

/// The gateway's log level (`log_level`), which a reload of the configuration changes for every logger at once: the
/// gateway's handlers (`FollowingLevel`) ask it at each line.
public final class LogLevelSetting: Sendable {
    /// The one the gateway's process runs with.
    public static let gateway = LogLevelSetting(.info)

    /// The level's rank (`Logger.Level`'s order): read at every line a logger is asked to write, so without the
    /// array `allCases` would make each time.
    private let rank: Atomic<UInt8>

    public init(_ level: Logger.Level) {
        rank = Atomic(Self.rank(of: level))
    }

    public var level: Logger.Level {
        get { Self.level(ofRank: rank.load(ordering: .relaxed)) }
        set { rank.store(Self.rank(of: newValue), ordering: .relaxed) }
    }

    static func rank(of level: Logger.Level) -> UInt8 {
        switch level {
        case .trace: 0
        case .debug: 1
        case .info: 2
        case .notice: 3
        case .warning: 4
        case .error: 5
        case .critical: 6
        }
    }

    static func level(ofRank rank: UInt8) -> Logger.Level {
        switch rank {
        case 0: .trace
        case 1: .debug
        case 2: .info
        case 3: .notice
        case 4: .warning
        case 5: .error
        default: .critical
        }
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

    public func log(event: LogEvent) {
        inner.log(event: event)
    }
}
