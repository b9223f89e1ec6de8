import BearerCore
import CBearerLinux
import Dispatch
import Glibc
import Synchronization

/// How an event loop does its I/O.
package enum IOBackend: String, Sendable, CaseIterable {
    /// Readiness from epoll; every read and send a system call of its own.
    case epoll
    /// Plain sockets receive through io_uring multishot receives into provided buffers, and one
    /// `io_uring_enter` a turn waits; epoll still reports writability, TLS, listeners and wake-ups
    /// (its descriptor is polled through the ring). Falls back to epoll when the kernel refuses.
    case ioUring = "io_uring"
}

/// One epoll loop on one thread: I/O readiness, timers, and tasks sent from other threads.
///
/// Everything registered with a loop (connections, listeners) is touched only on its thread, so the
/// data path needs no locks. Other threads reach a loop only through `execute(_:)`, which queues the
/// task and wakes the loop through an eventfd. Methods other than `execute`, `inEventLoop` and
/// `shutdown` must be called on the loop's thread.
package final class EventLoop: @unchecked Sendable {
    package let index: Int
    let epollFD: Int32
    private let wakeFD: Int32
    @exclusivity(unchecked) var slots: [Slot] = []
    @exclusivity(unchecked) var timers = TimerHeap()
    private let queuedTasks = Locked<[@Sendable () -> Void]>([])
    let wakePending = Atomic<Bool>(false)
    let stopRequested = Atomic<Bool>(false)
    private var thread: pthread_t?
    let loopThreadID = Atomic<UInt>(0)
    @exclusivity(unchecked) private var bufferPool: [ByteBuffer] = []
    /// Work for the end of this loop turn, queued from the loop itself (no wake-up needed).
    @exclusivity(unchecked) var deferredWork: [() -> Void] = []
    /// Where time comes from: the system's monotonic clock, or a test's manual one.
    package let clock: any TimeSource
    @exclusivity(unchecked) var currentTime: Instant
    /// How long this loop's turns take (read on the loop, for /metrics).
    @exclusivity(unchecked) package private(set) var turnDurations = LoopTurnHistogram()
    private let requestedBackend: IOBackend
    /// The ring, with `io = io_uring` when the kernel allowed it. Made on the loop's own thread (the
    /// only one that submits), before `start` returns.
    @exclusivity(unchecked) var ring: IOUring?
    /// Why `io = io_uring` fell back to epoll (nil: it did not, or was not asked for).
    package private(set) var ringUnavailableReason: String?
    /// Readiness learned in this process, not from epoll (in-memory streams and listeners): told
    /// to their handlers on the next turn.
    @exclusivity(unchecked) var inProcessEvents: [any InProcessEventSource] = []
    /// Every in-process source registered, so that a stopping loop closes them as it closes descriptors.
    @exclusivity(unchecked) var inProcessSources: [ObjectIdentifier: any InProcessEventSource] = [:]
    /// A loop without a thread of its own, which the thread that made it runs (EventLoop+Stepped).
    let isStepped: Bool
    /// What a settling pool queued (`BlockingWorkPool(settlingOn:)`): a stepped loop runs it when it
    /// has nothing else to do.
    let settlingWork = Locked<[@Sendable () -> Void]>([])

    /// The time read after the last `epoll_wait` returned: cheap, and precise enough for timeouts.
    /// (Computed, so that reads from other modules pay no dynamic exclusivity check.)
    package var now: Instant { self.currentTime }

    struct Slot {
        var generation: UInt32 = 0
        var handler: Selectable?
        /// The handler as a ring receiver, when the loop has a ring and the handler is one: cast once
        /// at registration rather than per completion (a protocol cast is a runtime lookup).
        var ringReceiver: RingReceiver?
        var interest: Interest = .none
        var isExclusive = false
        /// In the epoll set (with a ring, a descriptor that wants nothing from epoll is left out of it,
        /// so that a hang-up it cannot act on does not wake the loop on every turn).
        var isInEpoll = false
        /// Its multishot receive, with a ring.
        var receive: ReceiveState = .idle
        /// The ring's `batch` when that receive was armed: while the ring is still at it, the receive
        /// has not reached the kernel.
        var receiveBatch: UInt64 = 0
        /// A send of it is in flight in the ring.
        var isSending = false
    }

    /// Where a socket's multishot receive is. A cancelled receive still completes once (-ECANCELED):
    /// a new one is armed only after that, so two never run for one socket.
    enum ReceiveState {
        case idle
        case armed
        case cancelling(rearm: Bool)
    }

    private static let wakeToken: UInt64 = .max

    package convenience init(index: Int, clock: any TimeSource = SystemTimeSource(), io: IOBackend = .epoll) {
        self.init(index: index, clock: clock, io: io, isStepped: false)
    }

    init(index: Int, clock: any TimeSource, io: IOBackend, isStepped: Bool) {
        self.index = index
        self.clock = clock
        self.requestedBackend = io
        self.isStepped = isStepped
        // A stepped loop belongs to the thread that makes it: its test's.
        if isStepped { self.loopThreadID.store(UInt(pthread_self()), ordering: .releasing) }
        self.currentTime = clock.now()
        self.epollFD = cbl_epoll_create()
        precondition(self.epollFD >= 0, "epoll_create1 failed: \(String(cString: strerror(errno)))")
        self.wakeFD = cbl_eventfd()
        precondition(self.wakeFD >= 0, "eventfd failed: \(String(cString: strerror(errno)))")
        let result = cbl_epoll_ctl(self.epollFD, CBL_EPOLL_CTL_ADD, self.wakeFD, CBL_EPOLLIN, Self.wakeToken)
        precondition(result == 0, "epoll_ctl(eventfd) failed")
    }

    deinit {
        close(self.epollFD)
        close(self.wakeFD)
    }

    /// Starts the loop's thread; returns once the loop has its I/O backend.
    package func start(name: String) {
        let ready = Locked(false)
        self.thread = spawnThread(name: name) { [self] in
            self.loopThreadID.store(UInt(pthread_self()), ordering: .releasing)
            if self.requestedBackend == .ioUring {
                do throws(IOUring.Unavailable) {
                    self.ring = try IOUring()
                } catch {
                    self.ringUnavailableReason = error.description
                }
            }
            ready.withLock { $0 = true }
            self.run()
        }
        while !ready.withLock({ $0 }) { sched_yield() }
    }

    /// Whether plain sockets on this loop receive through the ring.
    package var usesIOUring: Bool { self.ring != nil }

    package var inEventLoop: Bool {
        self.loopThreadID.load(ordering: .acquiring) == UInt(pthread_self())
    }

    @inline(__always)
    package func assertInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(self.inEventLoop, "not on event loop \(self.index)", file: file, line: line)
    }

    /// Runs `task` on the loop's thread, soon. Safe from any thread.
    package func execute(_ task: @escaping @Sendable () -> Void) {
        self.queuedTasks.withLock { $0.append(task) }
        if !self.wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            var one: UInt64 = 1
            _ = Glibc.write(self.wakeFD, &one, 8)
        }
    }

    /// Runs `task` on the loop and returns once it ran: at once on the loop's own thread (a task of
    /// the loop; a stepped loop's, which is its test's), else queued and waited for.
    package func executeAndWait(_ task: @escaping @Sendable () -> Void) {
        if self.inEventLoop {
            task()
            return
        }
        let done = DispatchSemaphore(value: 0)
        self.execute {
            task()
            done.signal()
        }
        done.wait()
    }

    /// Stops the loop after the current iteration and waits for its thread to end. Not on the loop
    /// itself, unless it is a stepped loop (which stops at once, on its own thread).
    package func shutdown() {
        if self.isStepped {
            self.stopStepped()
            return
        }
        self.stopRequested.store(true, ordering: .releasing)
        self.execute {}
        if let thread = self.thread {
            joinThread(thread)
            self.thread = nil
        }
    }

    // MARK: Registration (on the loop)

    package func register(_ fd: Int32, _ handler: Selectable, interest: Interest, exclusive: Bool = false) {
        self.assertInEventLoop()
        let index = Int(fd)
        if index >= self.slots.count {
            self.slots.append(contentsOf: repeatElement(Slot(), count: max(index + 1 - self.slots.count, 64)))
        }
        precondition(self.slots[index].handler == nil, "fd \(fd) registered twice")
        self.slots[index].generation &+= 1
        self.slots[index].handler = handler
        self.slots[index].ringReceiver = self.ring == nil ? nil : handler as? RingReceiver
        self.slots[index].interest = interest
        self.slots[index].isExclusive = exclusive
        self.slots[index].receive = .idle
        self.slots[index].isSending = false
        self.slots[index].isInEpoll = false
        if self.ring != nil && interest == .none { return }
        var events = Self.epollEvents(interest)
        if exclusive { events |= CBL_EPOLLEXCLUSIVE }
        let result = cbl_epoll_ctl(self.epollFD, CBL_EPOLL_CTL_ADD, fd, events, self.token(fd))
        precondition(result == 0, "epoll_ctl(ADD, \(fd)) failed: \(String(cString: strerror(errno)))")
        self.slots[index].isInEpoll = true
    }

    package func setInterest(_ fd: Int32, _ interest: Interest) {
        let index = Int(fd)
        guard self.slots[index].handler != nil, self.slots[index].interest != interest else { return }
        self.slots[index].interest = interest
        if self.ring != nil && !self.slots[index].isExclusive {
            // With a ring, a descriptor that wants nothing from epoll leaves the epoll set.
            if interest == .none {
                if self.slots[index].isInEpoll {
                    _ = cbl_epoll_ctl(self.epollFD, CBL_EPOLL_CTL_DEL, fd, 0, 0)
                    self.slots[index].isInEpoll = false
                }
                return
            }
            if !self.slots[index].isInEpoll {
                let result = cbl_epoll_ctl(
                    self.epollFD,
                    CBL_EPOLL_CTL_ADD,
                    fd,
                    Self.epollEvents(interest),
                    self.token(fd)
                )
                precondition(result == 0, "epoll_ctl(ADD, \(fd)) failed: \(String(cString: strerror(errno)))")
                self.slots[index].isInEpoll = true
                return
            }
        }
        if self.slots[index].isExclusive {
            // EPOLLEXCLUSIVE registrations cannot be modified, only removed and added again.
            _ = cbl_epoll_ctl(self.epollFD, CBL_EPOLL_CTL_DEL, fd, 0, 0)
            if interest != .none {
                _ = cbl_epoll_ctl(
                    self.epollFD,
                    CBL_EPOLL_CTL_ADD,
                    fd,
                    Self.epollEvents(interest) | CBL_EPOLLEXCLUSIVE,
                    self.token(fd)
                )
            }
            return
        }
        let result = cbl_epoll_ctl(self.epollFD, CBL_EPOLL_CTL_MOD, fd, Self.epollEvents(interest), self.token(fd))
        precondition(result == 0, "epoll_ctl(MOD, \(fd)) failed: \(String(cString: strerror(errno)))")
    }

    /// Removes `fd` from the loop; events already reported for it in this iteration are dropped.
    package func deregister(_ fd: Int32) {
        let index = Int(fd)
        guard index < self.slots.count, self.slots[index].handler != nil else { return }
        // An armed receive holds the socket open until it ends: cancel it before the fd is closed.
        self.stopReceivingBeforeClose(fd)
        if self.ring == nil || self.slots[index].isInEpoll {
            _ = cbl_epoll_ctl(self.epollFD, CBL_EPOLL_CTL_DEL, fd, 0, 0)
        }
        self.slots[index].handler = nil
        self.slots[index].ringReceiver = nil
        self.slots[index].generation &+= 1
        self.slots[index].interest = .none
        self.slots[index].isInEpoll = false
    }

    func token(_ fd: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: fd)) | UInt64(self.slots[Int(fd)].generation) << 32
    }

    private static func epollEvents(_ interest: Interest) -> UInt32 {
        var events: UInt32 = 0
        if interest.readable { events |= CBL_EPOLLIN }
        if interest.writable { events |= CBL_EPOLLOUT }
        return events
    }

    // MARK: Timers (on the loop)

    @discardableResult
    package func schedule(at deadline: Instant, _ action: @escaping () -> Void) -> TimerID {
        self.assertInEventLoop()
        return self.timers.schedule(at: deadline, action)
    }

    @discardableResult
    package func schedule(after delay: Duration, _ action: @escaping () -> Void) -> TimerID {
        self.schedule(at: self.clock.now() + delay, action)
    }

    package func cancel(_ timer: TimerID) {
        self.timers.cancel(timer)
    }

    /// Runs `work` at the end of the current loop turn, before waiting for events again.
    package func `defer`(_ work: @escaping () -> Void) {
        self.assertInEventLoop()
        self.deferredWork.append(work)
    }

    // MARK: Buffers (on the loop)

    /// An empty buffer with storage, from the loop's small pool: connections borrow one while they hold
    /// bytes and give it back when empty, so an idle connection holds no buffer memory at all.
    package func borrowBuffer() -> ByteBuffer {
        if let buffer = self.bufferPool.popLast() { return buffer }
        return ByteBuffer(capacity: 64 * 1024)
    }

    /// Gives `buffer` one of the pool's buffers when it holds none.
    @inline(__always)
    package func lendBuffer(to buffer: inout ByteBuffer) {
        if buffer.capacity == 0 { buffer = self.borrowBuffer() }
    }

    /// The pool keeps up to `bufferPoolLimit` buffers (4 MiB of 64 KiB ones per loop). On io_uring a
    /// buffer stays with its send until the send completes, so one busy turn has a buffer out for
    /// each send it submitted (about 36 at 256 connections); with a pool of 8 the rest were freed
    /// and allocated again, and glibc gave the pages back (`madvise`) and faulted them in again:
    /// 9,429 `madvise` calls in 188,603 requests.
    static let bufferPoolLimit = 64

    package func returnBuffer(_ buffer: consuming ByteBuffer) {
        guard self.bufferPool.count < Self.bufferPoolLimit, buffer.capacity >= 16 * 1024, buffer.capacity <= 1024 * 1024
        else { return }
        buffer.clear()
        self.bufferPool.append(buffer)
    }

    /// Gives `buffer`'s storage back to the pool and leaves `buffer` without any. The storage moves
    /// into the pool: returning a copy retained and released it once more, several times a request.
    @inline(__always)
    package func returnBuffer(from buffer: inout ByteBuffer) {
        var taken = ByteBuffer()
        swap(&taken, &buffer)
        self.returnBuffer(consume taken)
    }

    // MARK: The loop

    private func run() {
        let maximumEvents = 512
        let events = UnsafeMutableRawPointer.allocate(
            byteCount: maximumEvents * cbl_epoll_event_size(),
            alignment: 8
        )
        defer { events.deallocate() }

        if let ring = self.ring {
            self.runWithRing(ring, events: events, maximumEvents: maximumEvents)
            // Still registered: close, and let the ring finish what they started.
            for slot in self.slots { slot.handler?.loopWillStop() }
            self.cancelEverything(ring)
        } else {
            while !self.stopRequested.load(ordering: .acquiring) {
                let count = self.waitForEpollEvents(events, maximumEvents, timeout: self.epollTimeout())
                self.currentTime = self.clock.now()
                self.dispatchEpollEvents(events, count)
                self.endTurn(handledIO: count > 0)
            }
        }
        self.finishStopping()
    }

    /// The end of a loop's life, on its thread.
    func finishStopping() {
        // Drain what was queued so that nothing sent to a stopping loop is silently dropped.
        self.runQueuedTasks()
        // Whatever is still registered is closed now, so no descriptor or reference cycle outlives the loop.
        for slot in self.slots {
            slot.handler?.loopWillStop()
        }
        for source in Array(self.inProcessSources.values) {
            source.loopWillStop()
        }
        self.slots.removeAll()
        self.inProcessSources.removeAll()
        self.inProcessEvents.removeAll()
        self.timers = TimerHeap()
        self.deferredWork.removeAll()
    }

    /// The rest of a turn, after its I/O: readiness learned in this process, timers, tasks from
    /// other threads, work deferred to here.
    func endTurn(handledIO: Bool) {
        if !self.inProcessEvents.isEmpty { self.dispatchInProcessEvents() }
        self.runDueTimers()
        self.runQueuedTasks()
        self.runDeferredWork()
        if handledIO {
            // Turns that only woke up for a timer or a task are short and many: not counted.
            self.turnDurations.record(self.clock.now().nanoseconds &- self.currentTime.nanoseconds)
        }
    }

    func waitForEpollEvents(_ events: UnsafeMutableRawPointer, _ maximumEvents: Int, timeout: Int32) -> Int {
        let count = cbl_epoll_wait(
            self.epollFD,
            events.assumingMemoryBound(to: epoll_event.self),
            Int32(maximumEvents),
            timeout
        )
        if count < 0 {
            precondition(errno == EINTR, "epoll_wait failed: \(String(cString: strerror(errno)))")
            return 0
        }
        return Int(count)
    }

    func dispatchEpollEvents(_ events: UnsafeMutableRawPointer, _ count: Int) {
        let eventSize = cbl_epoll_event_size()
        for index in 0..<count {
            let event = (events + index * eventSize).assumingMemoryBound(to: epoll_event.self)
            let data = cbl_epoll_event_data(event)
            if data == Self.wakeToken {
                var value: UInt64 = 0
                _ = Glibc.read(self.wakeFD, &value, 8)
                continue
            }
            let fd = Int(UInt32(truncatingIfNeeded: data))
            let generation = UInt32(truncatingIfNeeded: data >> 32)
            guard fd < self.slots.count, self.slots[fd].generation == generation,
                let handler = self.slots[fd].handler
            else { continue }
            let bits = cbl_epoll_event_events(event)
            handler.ready(
                ReadinessEvents(
                    isReadable: bits & CBL_EPOLLIN != 0,
                    isWritable: bits & CBL_EPOLLOUT != 0,
                    isHangUpOrError: bits & (CBL_EPOLLHUP | CBL_EPOLLERR) != 0
                )
            )
        }
    }

    func runDeferredWork() {
        var rounds = 0
        while !self.deferredWork.isEmpty && rounds < 16 {
            rounds += 1
            let work = self.deferredWork
            self.deferredWork.removeAll(keepingCapacity: true)
            for item in work { item() }
        }
    }

    func epollTimeout() -> Int32 {
        if self.wakePending.load(ordering: .relaxed) || !self.deferredWork.isEmpty || !self.inProcessEvents.isEmpty {
            return 0
        }
        guard let deadline = self.timers.nextDeadline() else { return -1 }
        let remaining = deadline.nanoseconds - self.clock.now().nanoseconds
        if remaining <= 0 { return 0 }
        return Int32(clamping: (remaining + 999_999) / 1_000_000)
    }

    func runDueTimers() {
        if self.timers.isEmpty { return }
        for action in self.timers.popDue(now: self.now) {
            action()
        }
    }

    func runQueuedTasks() {
        guard self.wakePending.load(ordering: .acquiring) else { return }
        self.wakePending.store(false, ordering: .releasing)
        let tasks = self.queuedTasks.withLock { tasks -> [@Sendable () -> Void] in
            let taken = tasks
            tasks.removeAll(keepingCapacity: true)
            return taken
        }
        for task in tasks { task() }
    }
}

@available(*, unavailable)
extension TimerHeap: Sendable {}
