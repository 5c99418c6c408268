import NIOCore

/// A connection's timer whose deadline moves with every request or read: moving it is an assignment, not a
/// scheduled task cancelled and another scheduled. The task wakes when the deadline it was scheduled for comes,
/// and sleeps on when the deadline has moved later meanwhile; `stop` leaves it to wake for nothing, `cancel` ends it
/// (when the connection closes). Used on its event loop only.
public final class DeadlineTimer {
    private let eventLoop: any EventLoop
    private let action: () -> Void
    private var deadline: NIODeadline?
    private var task: Scheduled<Void>?
    private var taskDeadline: NIODeadline?

    /// `action` runs when a deadline passes without having been moved or stopped.
    public init(eventLoop: any EventLoop, action: @escaping () -> Void) {
        self.eventLoop = eventLoop
        self.action = action
    }

    public var isSet: Bool { deadline != nil }

    public func set(_ deadline: NIODeadline) {
        self.deadline = deadline
        if let taskDeadline, taskDeadline <= deadline { return }
        task?.cancel()
        schedule(deadline)
    }

    public func set(in amount: TimeAmount) {
        set(.now() + amount)
    }

    public func stop() {
        deadline = nil
    }

    public func cancel() {
        deadline = nil
        task?.cancel()
        task = nil
        taskDeadline = nil
    }

    private func schedule(_ at: NIODeadline) {
        taskDeadline = at
        task = eventLoop.assumeIsolated().scheduleTask(deadline: at) { [weak self] in self?.woke() }
    }

    private func woke() {
        task = nil
        taskDeadline = nil
        guard let deadline else { return }
        guard NIODeadline.now() >= deadline else {
            schedule(deadline)
            return
        }
        self.deadline = nil
        action()
    }
}
