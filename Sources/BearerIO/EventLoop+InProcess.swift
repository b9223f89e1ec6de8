import BearerCore

/// Something whose readiness a loop learns in this process, not from epoll: the ends of in-memory
/// streams and the accept queues of in-memory listeners. When its readiness may have changed it
/// asks for a turn (`EventLoop.queueInProcessEvent`); on the loop's next turn it tells its handler,
/// as epoll's events are told. Confined to its loop.
protocol InProcessEventSource: AnyObject {
    /// Queued for the next turn (set and cleared by the loop's queue).
    var isQueued: Bool { get set }
    /// Tells the handler what the source is ready for, as far as its interest goes.
    func dispatchEvents()
    /// The loop is stopping with this still registered: close, without calling back into anything.
    func loopWillStop()
}

extension EventLoop {
    /// Registers `source`, so that a stopping loop closes it.
    func addInProcessSource(_ source: any InProcessEventSource) {
        self.assertInEventLoop()
        self.inProcessSources[ObjectIdentifier(source)] = source
    }

    func removeInProcessSource(_ source: any InProcessEventSource) {
        self.inProcessSources[ObjectIdentifier(source)] = nil
    }

    /// Tells `source` on the next turn (once, however often it asks before then).
    func queueInProcessEvent(_ source: any InProcessEventSource) {
        guard !source.isQueued else { return }
        source.isQueued = true
        self.inProcessEvents.append(source)
    }

    /// Tells every source queued before this turn; what they queue meanwhile waits for the next.
    func dispatchInProcessEvents() {
        let sources = self.inProcessEvents
        self.inProcessEvents.removeAll(keepingCapacity: true)
        for source in sources {
            source.isQueued = false
            source.dispatchEvents()
        }
    }
}
