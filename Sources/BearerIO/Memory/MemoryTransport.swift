import BearerCore
import Glibc

/// One end of an in-memory stream: the transport of a `StreamConnection` on a `MemoryNetwork`.
///
/// Two ends make a pair. What one end sends lands in the other's `inbox`, which is bounded
/// (`capacity`): a sender that finds it full waits for writability, as over a socket whose buffer
/// is full, until the reader takes bytes out. Each end hears of what the other did — bytes, room
/// again, an end, a reset, a connect that finished — on the loop's next turn, as readiness, so a
/// connection over memory runs the code it runs over epoll. Half-close, reset and refusal behave
/// as over TCP, with one simplification: a close with unread bytes is an orderly end, not a reset
/// (a test asks for a reset with `StreamConnection.setResetOnClose`). Both ends of a pair live on
/// one loop. Confined to it.
final class MemoryTransport: InProcessEventSource {
    /// Strong, as `StreamConnection.loop` is; the loop lets go of its sources when it stops.
    let loop: EventLoop
    /// How many bytes the peer may send before this end reads them.
    let capacity: Int
    /// The other end, while both are open.
    private var peer: MemoryTransport?
    /// What the peer sent and this end has not read.
    private var inbox = ByteBuffer()
    private var receiving: Receiving = .open
    private var sending: Sending = .open
    /// A connect that nobody accepted: what `pendingError` reports.
    private let refusal: Int32
    private var resetsOnClose = false
    private(set) var waitsForWritable = false
    private var handler: Selectable?
    private var interest: Interest = .none
    var isQueued = false
    /// No peer and no events, ever: the owner's bytes stay in its stream's outbound buffer, where the
    /// one who reads them takes them (`StreamConnection.detached`).
    private let isDetached: Bool

    /// Where the bytes from the peer are. Valid transitions: .ended, .reset.
    private enum Receiving {
        case open
        /// The peer sent its end: once `inbox` is read, a read returns the end.
        case ended
        /// The peer reset the stream: `inbox` is gone, and a read fails.
        case reset
    }

    /// Whether this end may send. Valid transitions: .failing (from .open only).
    private enum Sending {
        case open
        /// Shut down, or the peer is gone: a send fails with this errno (EPIPE, ECONNRESET).
        case failing(Int32)
    }

    private init(loop: EventLoop, capacity: Int, refusal: Int32, isDetached: Bool = false) {
        self.loop = loop
        self.capacity = capacity
        self.refusal = refusal
        self.isDetached = isDetached
    }

    /// Two connected ends on `loop`, each taking up to `capacity` bytes unread.
    static func pair(on loop: EventLoop, capacity: Int) -> (MemoryTransport, MemoryTransport) {
        let first = MemoryTransport(loop: loop, capacity: capacity, refusal: 0)
        let second = MemoryTransport(loop: loop, capacity: capacity, refusal: 0)
        first.peer = second
        second.peer = first
        return (first, second)
    }

    /// An end with no peer that takes nothing and tells nothing (`StreamConnection.detached`).
    static func detached(on loop: EventLoop) -> MemoryTransport {
        MemoryTransport(loop: loop, capacity: 0, refusal: 0, isDetached: true)
    }

    /// The end of a connect nobody listened for: it fails with `errno` on the next turn.
    static func refused(on loop: EventLoop, errno: Int32 = ECONNREFUSED) -> MemoryTransport {
        MemoryTransport(loop: loop, capacity: 0, refusal: errno)
    }

    // MARK: Registration

    func register(_ handler: Selectable, interest: Interest) {
        self.handler = handler
        self.interest = interest
        self.loop.addInProcessSource(self)
        self.wake()
    }

    func setInterest(_ interest: Interest) {
        self.interest = interest
        if !self.isDetached { self.wake() }
    }

    /// What a socket's SO_ERROR would say: the refused connect, or the reset.
    func pendingError() -> Int32 {
        if self.refusal != 0 { return self.refusal }
        if case .reset = self.receiving { return ECONNRESET }
        return 0
    }

    private func wake() {
        self.loop.queueInProcessEvent(self)
    }

    func dispatchEvents() {
        guard let handler = self.handler else { return }
        let events = self.wantedEvents
        guard events.isReadable || events.isWritable || events.isHangUpOrError else { return }
        handler.ready(events)
        // Level-triggered, as epoll: still ready for what is still wanted, the handler hears again.
        let again = self.wantedEvents
        if self.handler != nil && (again.isReadable || again.isWritable || again.isHangUpOrError) { self.wake() }
    }

    /// What this end is ready for, as far as its interest goes (a hang-up whatever the interest).
    private var wantedEvents: ReadinessEvents {
        var readable = !self.inbox.isEmpty
        if case .ended = self.receiving { readable = true }
        var writable = false
        switch self.sending {
        case .open: writable = self.peer.map { $0.inbox.readableBytes < $0.capacity } ?? false
        case .failing: writable = true
        }
        return ReadinessEvents(
            isReadable: readable && self.interest.readable,
            isWritable: writable && self.interest.writable,
            isHangUpOrError: self.pendingError() != 0
        )
    }

    func loopWillStop() {
        self.handler?.loopWillStop()
        self.close()
    }

    // MARK: Bytes

    /// Takes what the peer sent, at most `StreamConnection.readSize`.
    func read(into buffer: inout ByteBuffer) throws(IOError) -> ReadProgress {
        if !self.inbox.isEmpty {
            let count = min(self.inbox.readableBytes, StreamConnection.readSize)
            // Sound: the pointer is the inbox's own readable bytes, used only inside the closure, and
            // `count` is at most how many there are.
            self.inbox.withUnsafeReadableBytes { buffer.writeBytes(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            self.inbox.moveReaderIndex(forwardBy: count)
            if self.inbox.isEmpty { self.inbox.clear() }
            // Room again: a writer that waited for it hears so.
            if let peer = self.peer, peer.waitsForWritable { peer.wake() }
            return .bytes(count)
        }
        switch self.receiving {
        case .open: return .wouldBlock
        case .ended: return .end
        case .reset: throw IOError(errnoCode: ECONNRESET, function: "read")
        }
    }

    /// Puts as much of `bytes` in the peer's inbox as it has room for; the rest waits for writability.
    func send(_ bytes: inout ByteBuffer) throws(IOError) -> Int {
        if self.isDetached { return 0 }
        if case .failing(let code) = self.sending { throw IOError(errnoCode: code, function: "send") }
        guard let peer = self.peer else { throw IOError(errnoCode: EPIPE, function: "send") }
        let count = min(bytes.readableBytes, peer.capacity - peer.inbox.readableBytes)
        if count > 0 {
            // Sound as in `read`: `bytes`' own readable bytes, inside the closure, `count` at most theirs.
            bytes.withUnsafeReadableBytes { peer.inbox.writeBytes(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            bytes.moveReaderIndex(forwardBy: count)
            peer.wake()
        }
        self.waitsForWritable = !bytes.isEmpty
        return count
    }

    /// One send that never waits; what does not fit is dropped.
    func sendIfPossible(_ bytes: ByteBuffer) {
        var bytes = bytes
        _ = try? self.send(&bytes)
        self.waitsForWritable = false
    }

    // MARK: Ending

    /// Half-closes: the peer reads the end after what was sent.
    func shutdownWrite() {
        guard case .open = self.sending else { return }
        self.sending = .failing(EPIPE)
        self.peer?.peerEnded()
    }

    func setResetOnClose() {
        self.resetsOnClose = true
    }

    /// Closes this end: the peer reads the end (or, after `setResetOnClose`, fails with a reset),
    /// and its sends fail from then on.
    func close() {
        if self.isDetached { return }
        self.loop.removeInProcessSource(self)
        self.handler = nil
        if let peer = self.peer {
            if self.resetsOnClose { peer.peerReset() } else { peer.peerClosed() }
        }
        self.peer = nil
        self.inbox = ByteBuffer()
        self.sending = .failing(EPIPE)
    }

    private func peerEnded() {
        if case .open = self.receiving { self.receiving = .ended }
        self.wake()
    }

    private func peerClosed() {
        self.peer = nil
        if case .open = self.sending { self.sending = .failing(EPIPE) }
        self.peerEnded()
    }

    private func peerReset() {
        self.peer = nil
        self.receiving = .reset
        self.inbox = ByteBuffer()
        self.sending = .failing(ECONNRESET)
        self.wake()
    }
}

@available(*, unavailable)
extension MemoryTransport: Sendable {}
