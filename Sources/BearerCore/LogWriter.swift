import Dispatch
import Glibc
import Synchronization

/// Writes log lines to a file descriptor from a thread of its own, so that no event loop ever waits
/// for the log.
///
/// A `write(2)` to a pipe nobody reads (a stuck supervisor, a `| less` left in the background)
/// blocks until someone does; made from an event loop, it stopped every connection of that loop, and
/// every other loop behind the lock that kept lines whole. Now a loop only appends its lines to a
/// bounded queue, under a lock held for the copy, and the writer's thread takes everything queued and
/// writes it outside the lock. Lines that do not fit are dropped and counted (`droppedLines`, on
/// `/metrics`); the first line accepted after a drop comes after a warning saying how many lines are
/// missing there, which is written as soon as the log takes bytes again.
///
/// The descriptor stays blocking: an inherited stderr shares its open file description with the
/// shell or terminal that started the proxy, and `O_NONBLOCK` set on it here would be set for them
/// too. (One that is non-blocking already is waited for with `poll`, on the writer's thread.)
package final class LogWriter: Sendable {
    private struct Queue {
        /// Accepted bytes the writer's thread has not taken yet.
        var pending: [UInt8] = []
        /// Bytes the writer's thread took and is writing.
        var inFlight = 0
        /// Lines dropped since a line was last accepted: the next accepted line brings the notice.
        var droppedSinceAccepted = 0
        var isFinishing = false
        /// Callers of `flush` waiting for the queue to empty.
        var flushWaiters = 0

        var isEmpty: Bool { self.pending.isEmpty && self.inFlight == 0 }
    }

    /// Queued bytes, pending and in flight, above which lines are dropped: about 8,000 access log
    /// lines, far more than a loop turn makes, so a log that keeps up never loses one.
    package static let defaultCapacity = 1 << 20

    /// How long the writer waits, once woken, for more lines to write with the first.
    static let gatheringMicroseconds: UInt32 = 1000

    private let fd: Int32
    private let capacity: Int
    private let closesDescriptor: Bool
    private let queue = Locked(Queue())
    /// Signalled when `pending` stops being empty (and to finish); the writer waits on it.
    private let hasWork = DispatchSemaphore(value: 0)
    /// Signalled once per waiting `flush` when the writer found the queue empty.
    private let emptied = DispatchSemaphore(value: 0)
    private let dropped = Atomic<Int>(0)
    /// Called once, on the thread that counts them, when lines are first lost: a log whose lines
    /// cannot say so themselves (the audit log, every line of which is JSON) says it elsewhere.
    private let firstLoss: Locked<(@Sendable () -> Void)?>
    /// Lost lines are noted in the stream (`dropNotice`), unless `whenFirstLosingLines` reports them.
    private let notesLossInline: Bool

    /// Starts the writer's thread. `closesDescriptor`: the descriptor is the writer's own (an access
    /// log file), closed once `finish()` has let the thread write what was queued.
    package init(
        fileDescriptor: Int32,
        capacity: Int = LogWriter.defaultCapacity,
        closesDescriptor: Bool,
        whenFirstLosingLines: (@Sendable () -> Void)? = nil
    ) {
        self.fd = fileDescriptor
        self.capacity = capacity
        self.closesDescriptor = closesDescriptor
        self.firstLoss = Locked(whenFirstLosingLines)
        self.notesLossInline = whenFirstLosingLines == nil
        let thread = spawnThread(name: "log-writer") { self.run() }
        pthread_detach(thread)
    }

    /// Lines lost because the queue was full, or because the descriptor refused them (closed, full disk).
    package var droppedLines: Int { self.dropped.load(ordering: .relaxed) }

    /// Bytes queued and not yet written: a soak watches that it does not grow.
    package var queuedBytes: Int { self.queue.withLock { $0.pending.count + $0.inFlight } }

    /// Queues whole lines, or drops and counts them when the queue is full. Never waits for the log.
    package func write(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        var isDropped = false
        let wakesWriter = self.queue.withLock { queue -> Bool in
            guard queue.pending.count + queue.inFlight + bytes.count <= self.capacity, !queue.isFinishing else {
                let lines = Self.lineCount(bytes)
                queue.droppedSinceAccepted += lines
                self.dropped.add(lines, ordering: .relaxed)
                isDropped = true
                return false
            }
            let wasEmpty = queue.pending.isEmpty
            if queue.droppedSinceAccepted > 0 && self.notesLossInline {
                queue.pending += Self.dropNotice(lines: queue.droppedSinceAccepted).utf8
                queue.droppedSinceAccepted = 0
            }
            queue.pending.append(contentsOf: bytes)
            return wasEmpty
        }
        if wakesWriter { self.hasWork.signal() }
        if isDropped { self.reportFirstLoss() }
    }

    /// Runs `whenFirstLosingLines` the first time lines are lost, outside every lock of the writer.
    private func reportFirstLoss() {
        let report = self.firstLoss.withLock { report in
            defer { report = nil }
            return report
        }
        report?()
    }

    /// Waits until everything queued is written, or `timeout` passed (a log nobody reads): before the
    /// process exits. Returns whether the queue emptied.
    @discardableResult
    package func flush(timeout: Duration) -> Bool {
        let deadline = Instant.now() + timeout
        // A wake-up meant for a flush that gave up earlier only makes this one look again.
        while !self.queue.withLock({ queue in
            if !queue.isEmpty { queue.flushWaiters += 1 }
            return queue.isEmpty
        }) {
            guard self.emptied.wait(until: deadline) else { return false }
        }
        return true
    }

    /// Lets the thread write what is queued, then end (closing the descriptor if it is the writer's).
    /// Later lines are dropped.
    package func finish() {
        self.queue.withLock { $0.isFinishing = true }
        self.hasWork.signal()
    }

    /// The warning in place of lines that were dropped.
    static func dropNotice(lines: Int) -> String {
        Logger.format(
            level: .warn,
            message: "log lines dropped: the log was not taking them fast enough",
            metadata: ["lines": "\(lines)"]
        )
    }

    // MARK: The writer's thread

    private func run() {
        var batch: [UInt8] = []
        while true {
            self.hasWork.wait()
            // Lines that come meanwhile join the same write: under load the loops then append without
            // waking this thread each turn (a wake costs them more than the copy).
            usleep(Self.gatheringMicroseconds)
            while true {
                let (isFinishing, flushWaiters) = self.queue.withLock { queue -> (Bool, Int) in
                    swap(&batch, &queue.pending)
                    queue.inFlight = batch.count
                    // Everything queued is written: the flushes waiting for that may return.
                    let waiters = batch.isEmpty ? queue.flushWaiters : 0
                    if batch.isEmpty { queue.flushWaiters = 0 }
                    return (queue.isFinishing, waiters)
                }
                for _ in 0..<flushWaiters { self.emptied.signal() }
                if batch.isEmpty {
                    if isFinishing {
                        if self.closesDescriptor { close(self.fd) }
                        return
                    }
                    break
                }
                self.writeAll(batch)
                batch.removeAll(keepingCapacity: true)
                self.queue.withLock { $0.inFlight = 0 }
            }
        }
    }

    /// Writes `bytes` whole, however long the descriptor makes it wait; what it refuses is counted.
    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var written = 0
            do throws(SystemCallError) {
                try SystemCall.writeAll(self.fd, raw, written: &written)
            } catch {
                // Closed, a full disk: these lines are lost, and said so before the next ones.
                let lines = Self.lineCount(UnsafeRawBufferPointer(rebasing: raw[written...]))
                self.dropped.add(lines, ordering: .relaxed)
                self.queue.withLock { $0.droppedSinceAccepted += lines }
                self.reportFirstLoss()
            }
        }
    }

    private static func lineCount(_ bytes: UnsafeRawBufferPointer) -> Int {
        var count = 0
        for byte in bytes where byte == 0x0A { count += 1 }
        return max(count, 1)
    }
}
