import BearerCore
import Dispatch
import Synchronization

/// The event a drain waits for: the last open client connection closed.
///
/// `ProxyServer.drain` used to look at the count every 10 ms; now the connection that brings it to
/// zero wakes the drain. Only a drain that waits is woken: a proxy that goes idle a thousand times
/// before it is stopped stores no wake-ups for its drain to skip through.
final class LastConnectionClosed: Sendable {
    private let isAwaited = Atomic<Bool>(false)
    private let happened = DispatchSemaphore(value: 0)

    /// The open count just fell to zero.
    func signal() {
        if self.isAwaited.load(ordering: .sequentiallyConsistent) { self.happened.signal() }
    }

    /// Waits until `openCount` is zero or `deadline` passed; returns the count then.
    ///
    /// The flag is set before the count is read and the closing connection lowers the count before it
    /// reads the flag, both sequentially consistent: either this sees zero or the closer sees the flag.
    func wait(until deadline: Instant, openCount: () -> Int) -> Int {
        self.isAwaited.store(true, ordering: .sequentiallyConsistent)
        defer { self.isAwaited.store(false, ordering: .sequentiallyConsistent) }
        // A wake-up left from an earlier zero (a connection opened and closed since) only makes it look again.
        while openCount() > 0 && self.happened.wait(until: deadline) {}
        return openCount()
    }
}
