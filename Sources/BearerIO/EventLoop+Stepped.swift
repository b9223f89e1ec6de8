import BearerCore
import CBearerLinux
import Glibc

/// A loop for tests that has no thread of its own: the test's thread runs it, turn by turn, until
/// nothing is pending, and moves its manual clock by hand. With the in-memory transport
/// (`MemoryNetwork`) and a settling pool (`BlockingWorkPool(settlingOn:)`), a whole scenario —
/// clients, the proxy, mock upstreams and token endpoints — runs on one thread, in an order that
/// does not depend on the machine: no wall-clock time, no other thread.
extension EventLoop {
    /// A stepped loop on `clock` (a `ManualTimeSource`, to move time with `advance(by:)`), run by
    /// the calling thread: everything confined to the loop is called from that thread.
    package static func stepped(index: Int = 0, clock: any TimeSource = ManualTimeSource()) -> EventLoop {
        EventLoop(index: index, clock: clock, io: .epoll, isStepped: true)
    }

    /// Runs turns until nothing is pending: in-memory readiness, tasks queued with `execute`, work
    /// deferred to a turn's end, and the timers due on the clock. Then, when the loop has settled,
    /// the oldest task of a settling pool runs, and the loop runs again, until that queue is empty
    /// too. (Sockets registered with a stepped loop are polled, never waited for.)
    package func runUntilQuiescent() {
        precondition(self.isStepped, "runUntilQuiescent drives a stepped loop (EventLoop.stepped)")
        self.assertInEventLoop()
        let maximumEvents = 64
        let events = UnsafeMutableRawPointer.allocate(byteCount: maximumEvents * cbl_epoll_event_size(), alignment: 8)
        defer { events.deallocate() }
        var turns = 0
        while true {
            turns += 1
            precondition(turns < 1_000_000, "the stepped loop did not settle (something is ready forever)")
            self.currentTime = self.clock.now()
            let count = self.waitForEpollEvents(events, maximumEvents, timeout: 0)
            self.dispatchEpollEvents(events, count)
            self.endTurn(handledIO: false)
            if self.hasPendingWork(polled: count > 0) { continue }
            guard let task = self.takeSettlingTask() else { return }
            task()
        }
    }

    /// Moves the manual clock forward by `duration`, settling at each timer's deadline on the way
    /// (earliest first, the clock at that deadline), and once more at the end.
    package func advance(by duration: Duration) {
        guard let clock = self.clock as? ManualTimeSource else {
            preconditionFailure("advance(by:) moves a ManualTimeSource; this loop has \(type(of: self.clock))")
        }
        let end = clock.now() + duration
        self.runUntilQuiescent()
        while let next = self.timers.nextDeadline(), next <= end {
            let now = clock.now()
            if next > now { clock.advance(by: next - now) }
            self.runUntilQuiescent()
        }
        let now = clock.now()
        if end > now { clock.advance(by: end - now) }
        self.runUntilQuiescent()
    }

    /// Queues `task` for when the stepped loop has settled. Safe from any thread.
    func executeWhenSettled(_ task: @escaping @Sendable () -> Void) {
        self.settlingWork.withLock { $0.append(task) }
    }

    private func takeSettlingTask() -> (@Sendable () -> Void)? {
        self.settlingWork.withLock { tasks in tasks.isEmpty ? nil : tasks.removeFirst() }
    }

    private func hasPendingWork(polled: Bool) -> Bool {
        if polled || !self.inProcessEvents.isEmpty || !self.deferredWork.isEmpty { return true }
        if self.wakePending.load(ordering: .acquiring) { return true }
        guard let deadline = self.timers.nextDeadline() else { return false }
        return deadline <= self.clock.now()
    }

    /// A stepped loop stops at once, on its own thread: what is registered is closed.
    func stopStepped() {
        self.assertInEventLoop()
        self.stopRequested.store(true, ordering: .releasing)
        self.finishStopping()
    }
}
