import Foundation

/// What a member's pages are told as their rooms change.
public enum ChatUpdate: Sendable {
    /// One `/sync` answer's changes, with the room list after them.
    case changed(RoomList.Changes, RoomList)
    /// The session's device is gone (logged out elsewhere, or the account deactivated): no more updates.
    case ended
    /// The homeserver stopped answering (`false`, at the first failure that may pass) or answers again (`true`): the
    /// pages say so, and send again what they could not send meanwhile.
    case reachable(Bool)
}

/// One member session's `/sync` loop and room list: it runs while a page of the session listens (`listen`) or the
/// bar has asked lately (`lease`), and stops when none does (`SyncLoopState` decides; this actor carries it out),
/// resuming from its `since` token when asked again.
public actor SyncLoop {
    let client: MatrixClient
    public nonisolated let credentials: MatrixCredentials
    /// How long one `/sync` waits for news.
    let wait: Duration
    private var state = SyncLoopState()
    public private(set) var rooms: RoomList
    private var since: String?
    private var listeners: [UUID: AsyncStream<ChatUpdate>.Continuation] = [:]
    private var running: Task<Void, Never>?
    private var catchingUp: Task<Void, any Error>?
    /// When the last answer arrived (a page loaded while the loop runs reads the list as it is).
    private var answeredAt: ContinuousClock.Instant?
    /// Whether the homeserver's last answer was a failure that may pass (told to listeners as `reachable`).
    public private(set) var unreachable = false

    public init(client: MatrixClient, credentials: MatrixCredentials, wait: Duration = .seconds(25)) {
        self.client = client
        self.credentials = credentials
        self.wait = wait
        self.rooms = RoomList(me: credentials.userID)
    }

    /// Updates as they come, until `stopListening` (or the device ends).
    public func listen() -> (id: UUID, updates: AsyncStream<ChatUpdate>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<ChatUpdate>.makeStream(bufferingPolicy: .bufferingNewest(64))
        listeners[id] = continuation
        if unreachable { continuation.yield(.reachable(false)) }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.stopListening(id) }
        }
        perform(state.handle(.listenerJoined))
        return (id, stream)
    }

    public func stopListening(_ id: UUID) {
        guard let continuation = listeners.removeValue(forKey: id) else { return }
        continuation.finish()
        perform(state.handle(.listenerLeft))
    }

    /// Counts as a listener for `seconds` (the bar asking for the unread count keeps the loop up between its asks).
    public func lease(seconds: Int) {
        perform(state.handle(.listenerJoined))
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            self.endLease()
        }
    }

    private func endLease() { perform(state.handle(.listenerLeft)) }

    /// The room list as of now: when the loop is not running, one `/sync` without waiting first (from `since`, or
    /// the whole list the first time).
    public func current() async throws(MatrixError) -> RoomList {
        if case .running = state.phase, answeredAt != nil { return rooms }
        if case .lingering = state.phase, answeredAt != nil { return rooms }
        if state.phase == .ended { throw .tokenInvalid }
        let task: Task<Void, any Error>
        if let catchingUp {
            task = catchingUp
        } else {
            task = Task { try await self.catchUp() }
            catchingUp = task
        }
        defer { catchingUp = nil }
        do {
            try await task.value
        } catch let error as MatrixError {
            throw error
        } catch {
            throw .unreachable(String(describing: error))
        }
        return rooms
    }

    /// The room list after what the member just did (joined, left, made a room): one `/sync` without waiting, whether
    /// the loop runs or not, so that the next page shows it. A long poll under way is dropped and started again from
    /// the new `since`, so that no answer is applied twice.
    public func refresh() async throws(MatrixError) -> RoomList {
        let wasRunning = running != nil
        running?.cancel()
        running = nil
        defer { if wasRunning { resume() } }
        apply(try await client.sync(credentials, since: since, wait: .zero))
        return rooms
    }

    /// The long poll again, if the machine still wants one and none runs.
    private func resume() {
        switch state.phase {
        case .running, .lingering: if running == nil { syncSoon(after: 0) }
        case .idle, .ended: break
        }
    }

    private func catchUp() async throws {
        let sync = try await client.sync(credentials, since: since, wait: .zero)
        apply(sync)
    }

    /// Whether the device is gone: no sync runs on it again.
    public var isEnded: Bool { state.phase == .ended }

    /// The loop is ended (the device logged out): listeners are told, nothing more runs.
    public func end() {
        running?.cancel()
        running = nil
        _ = state.handle(.syncFailed(transient: false))
        publish(.ended)
        for continuation in listeners.values { continuation.finish() }
        listeners.removeAll()
    }

    // MARK: - Carrying out the machine's actions

    private func perform(_ action: SyncLoopState.Action) {
        switch action {
        case .none:
            break
        case .start, .syncAgain:
            syncSoon(after: 0)
        case .retry(let seconds):
            syncSoon(after: seconds)
        case .startGrace:
            Task {
                try? await Task.sleep(for: .seconds(SyncLoopState.graceSeconds))
                self.graceEnded()
            }
        case .stop:
            running?.cancel()
            running = nil
        case .end:
            end()
        }
    }

    private func graceEnded() { perform(state.handle(.graceEnded)) }

    private func syncSoon(after seconds: Int) {
        running?.cancel()
        let (client, credentials, since, wait) = (client, credentials, since, wait)
        running = Task {
            if seconds > 0 { try? await Task.sleep(for: .seconds(seconds)) }
            guard !Task.isCancelled else { return }
            do {
                let sync = try await client.sync(credentials, since: since, wait: wait)
                guard !Task.isCancelled else { return }
                self.answered(sync)
            } catch {
                guard !Task.isCancelled else { return }
                self.failed(error as? MatrixError ?? .unreachable(String(describing: error)))
            }
        }
    }

    private func answered(_ sync: SyncResponse) {
        apply(sync)
        if unreachable {
            unreachable = false
            publish(.reachable(true))
        }
        perform(state.handle(.syncAnswered))
    }

    private func failed(_ error: MatrixError) {
        if error.isTransient, !unreachable {
            unreachable = true
            publish(.reachable(false))
        }
        perform(state.handle(.syncFailed(transient: error.isTransient)))
    }

    private func apply(_ sync: SyncResponse) {
        since = sync.nextBatch
        answeredAt = .now
        let changes = rooms.apply(sync)
        if !changes.isEmpty { publish(.changed(changes, rooms)) }
    }

    private func publish(_ update: ChatUpdate) {
        for continuation in listeners.values { continuation.yield(update) }
    }
}
