import GatehouseStorage
import NIOConcurrencyHelpers

/// The console's apps, beside the file's: the store, what the running gateway made of them (served, or set aside
/// with their problems), and the way a change made here is applied at once (the other replicas hear of it through
/// the store, `CatalogChanges`).
final class StoredCatalog: Sendable {
    struct Applied: Sendable {
        /// The apps of the configuration file (read-only in the console).
        var fileApps: [AppConfiguration] = []
        /// Stored apps that are enabled but not served, with what stands in their way.
        var setAside: [String: [ConfigurationProblem]] = [:]
    }

    let store: any AppCatalogStore
    let changes: CatalogChanges
    private let applied = NIOLockedValueBox(Applied())
    private let applier = NIOLockedValueBox<(@Sendable () async -> Void)?>(nil)

    init(store: any AppCatalogStore, changes: CatalogChanges) {
        self.store = store
        self.changes = changes
    }

    var state: Applied {
        get { applied.withLockedValue { $0 } }
        set { applied.withLockedValue { $0 = newValue } }
    }

    /// What applies the stored apps (`ConfigurationApplier`, once the gateway runs).
    func applyWith(_ apply: @escaping @Sendable () async -> Void) {
        applier.withLockedValue { $0 = apply }
    }

    /// The stored apps read again and applied on this replica, before the operator's next page.
    func apply() async {
        await applier.withLockedValue { $0 }?()
    }
}
