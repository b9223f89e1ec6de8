import BearerCore
import CBearerLinux
import Glibc

/// What a stream connection tells its owner. Called on the connection's loop.
package protocol StreamConnectionDelegate: AnyObject {
    /// Bytes arrived; they are in `connection.inbound`. Consume what can be used now, leave the rest.
    func streamReceived(_ connection: StreamConnection)
    /// The peer sent its last byte (FIN). Reading has stopped; writing may go on.
    func streamReadEnded(_ connection: StreamConnection)
    /// Writes that had to wait for the kernel have drained: the other side may be read again.
    func streamWritable(_ connection: StreamConnection)
    /// An outgoing connection is established.
    func streamConnected(_ connection: StreamConnection)
    /// The connection is gone: reset, failed, or closed after a final flush. Called at most once, and
    /// never for a `close()` the owner called itself.
    func streamClosed(_ connection: StreamConnection, error: IOError?)
}

/// A non-blocking byte stream (TCP or unix socket) with an inbound and an outbound buffer.
///
/// Writes go to the kernel at once when they can and are buffered only when it would block; the
/// owner watches `pendingWriteBytes` to stop reading the other side (backpressure). Buffers are
/// borrowed from the loop while they hold bytes, so an idle connection holds none. Confined to its loop.
package final class StreamConnection: Selectable {
    package let fd: Int32
    /// Unowned and unchecked: loops outlive everything registered on them, and a checked reference
    /// would cost an atomic operation on every access of the data path.
    package unowned(unsafe) let loop: EventLoop
    @exclusivity(unchecked) package var delegate: StreamConnectionDelegate?
    @exclusivity(unchecked) private var inboundStorage = ByteBuffer()
    @exclusivity(unchecked) private var outbound = ByteBuffer()
    @exclusivity(unchecked) private var state: State
    @exclusivity(unchecked) private var isReadingEnabled = true
    /// The peer sent its last byte (FIN).
    @exclusivity(unchecked) package private(set) var hasReadEnded = false
    /// Bytes the kernel accepted so far: whether a request reached the connection at all.
    @exclusivity(unchecked) package private(set) var bytesSent = 0
    @exclusivity(unchecked) private var isWaitingForWritable = false
    @exclusivity(unchecked) private var lingerTimer: TimerID?
    @exclusivity(unchecked) private var registeredInterest: Interest = .none
    /// TLS over this stream, when there is one.
    @exclusivity(unchecked) package private(set) var tls: TLSConnection?
    /// OpenSSL needs readability to finish a write, or writability to finish a read or handshake.
    @exclusivity(unchecked) private var tlsWantsRead = false
    @exclusivity(unchecked) private var tlsWantsWrite = false
    @exclusivity(unchecked) private var isReadScheduled = false
    @exclusivity(unchecked) private var writeSide: WriteSide = .open
    /// Bytes arrive through the loop's io_uring receives rather than `read(2)` on readiness, and
    /// leave through its sends (a loop with `io = io_uring`, a stream without TLS: OpenSSL reads and
    /// writes the socket itself).
    @exclusivity(unchecked) private var readsThroughRing = false
    /// The bytes of the send the ring is carrying: untouched until it completes (the kernel reads
    /// them), then given back. Empty when no send is in flight.
    @exclusivity(unchecked) private var ringSendBuffer = ByteBuffer()
    @exclusivity(unchecked) private var ringSend: RingSend = .idle

    /// Owners pause reading while `pendingWriteBytes` is far above this, after a `flush()`. A flush
    /// that leaves at least this much pending marks the stream so that the ring send completion that
    /// brings it below wakes the owner (`streamWritable`), however the kernel split the sends.
    static let writableNotificationBytes = 64 * 1024
    /// Set by a flush that left `writableNotificationBytes` or more pending while sending through the ring.
    @exclusivity(unchecked) private var wakesOwnerWhenDrained = false

    /// Where `ringSendBuffer` is.
    private enum RingSend {
        case idle
        /// The ring is carrying it: one send at a time per socket.
        case inFlight
        /// The last send stopped on a full socket buffer: it goes again once the socket is writable.
        case waitsForWritable
    }

    /// A relay passes a peer's end on as a half-close once everything before it is written.
    private enum WriteSide {
        case open
        /// `shutdown(SHUT_WR)` once the outbound buffer is empty.
        case shutDownWhenFlushed
        case shutDown
    }

    private enum State {
        case connecting
        /// TCP is up; the TLS handshake is running.
        case handshaking
        case open
        /// Flushing the last bytes, then half-closing and draining the peer before closing.
        case closingAfterFlush
        /// Half-closed; reading and discarding until the peer closes too (or a timer ends it).
        case lingering
        case closed
    }

    /// Reads are at most this large; enough to stream fast, small enough to bound memory.
    package static let readSize = 64 * 1024
    /// How long a connection closed after an error response keeps draining what the peer still sends,
    /// so the peer reads the response instead of a reset (nginx's lingering close).
    package static let lingerTimeout: Duration = .seconds(2)

    package init(fd: Int32, loop: EventLoop, isConnecting: Bool) {
        self.fd = fd
        self.loop = loop
        self.state = isConnecting ? .connecting : .open
    }

    /// Puts TLS over the stream: call before `start`. The handshake runs as soon as TCP is up, and
    /// the delegate hears `streamConnected` once it completed.
    package func useTLS(_ connection: TLSConnection) {
        precondition(self.state == .connecting || self.state == .open, "TLS must start before any byte")
        self.tls = connection
        if self.state == .open { self.state = .handshaking }
    }

    /// Registers with the loop; events start arriving.
    package func start(delegate: StreamConnectionDelegate) {
        self.loop.assertInEventLoop()
        self.delegate = delegate
        self.readsThroughRing = self.loop.usesIOUring && self.tls == nil
        let interest = self.wantedInterest()
        self.registeredInterest = interest
        self.loop.register(self.fd, self, interest: interest)
        self.updateRingReceive()
        if self.state == .handshaking { self.driveHandshake() }
    }

    package var isOpen: Bool { self.state == .open }
    package var isClosed: Bool { self.state == .closed }
    package var isConnecting: Bool { self.state == .connecting || self.state == .handshaking }
    package var pendingWriteBytes: Int { self.outbound.readableBytes + self.ringSendBuffer.readableBytes }

    /// Bytes read and not yet consumed by the delegate; it consumes them in place.
    ///
    /// Computed over unchecked storage because the owners live in other modules, where every access
    /// to a stored property of a class pays a dynamic exclusivity check (`@exclusivity(unchecked)` is
    /// not seen across modules). Sound because the stream is confined to its loop and no access to
    /// `inbound` is held across a call back into the owner.
    package var inbound: ByteBuffer {
        _read { yield self.inboundStorage }
        _modify { yield &self.inboundStorage }
    }

    /// Starts or stops reading (backpressure: stop while the other side cannot take more).
    package func setReading(_ enabled: Bool) {
        guard self.isReadingEnabled != enabled else { return }
        self.isReadingEnabled = enabled
        self.updateInterest()
        if enabled { self.scheduleReadIfTLSHasBufferedBytes() }
    }

    /// Bytes OpenSSL already decrypted produce no epoll event: read them on the next loop turn.
    private func scheduleReadIfTLSHasBufferedBytes() {
        guard let tls = self.tls, tls.hasBufferedBytes, !self.isReadScheduled, self.state == .open else { return }
        self.isReadScheduled = true
        self.loop.defer { [weak self] in
            guard let self else { return }
            self.isReadScheduled = false
            if self.state == .open && self.isReadingEnabled && !self.hasReadEnded { self.readOnce() }
        }
    }

    // MARK: Writing

    /// Appends bytes to send; call `flush()` to send them.
    package func write(_ bytes: UnsafeRawBufferPointer) {
        self.prepareOutbound()
        self.outbound.writeBytes(bytes)
    }

    package func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.write($0) }
    }

    package func write(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { self.write($0) }
    }

    /// Lets `body` serialize straight into the outbound buffer.
    package func withOutbound<Result>(_ body: (inout ByteBuffer) -> Result) -> Result {
        self.prepareOutbound()
        return body(&self.outbound)
    }

    /// Sends `bytes` now, without copying them when nothing is queued before them; buffers the rest.
    package func writeAndFlush(_ bytes: UnsafeRawBufferPointer) {
        guard self.state == .open || self.state == .closingAfterFlush else { return }
        if self.outbound.isEmpty && !bytes.isEmpty && !self.readsThroughRing {
            var offset = 0
            while offset < bytes.count {
                let remaining = UnsafeRawBufferPointer(rebasing: bytes[offset...])
                switch self.send(remaining) {
                case .sent(let count): offset += count
                case .wouldBlock:
                    self.write(remaining)
                    self.waitForWritable()
                    return
                case .failed(let error):
                    self.fail(error)
                    return
                }
            }
            return
        }
        self.write(bytes)
        self.flush()
    }

    /// Sends what is buffered, as far as the kernel takes it; waits for writability for the rest.
    package func flush() {
        guard self.state == .open || self.state == .closingAfterFlush else { return }
        if self.readsThroughRing {
            self.flushThroughRing()
            return
        }
        while !self.outbound.isEmpty {
            let result = self.outbound.withUnsafeReadableBytes { self.send($0) }
            switch result {
            case .sent(let count):
                self.outbound.moveReaderIndex(forwardBy: count)
            case .wouldBlock:
                self.waitForWritable()
                return
            case .failed(let error):
                self.fail(error)
                return
            }
        }
        self.flushed()
    }

    /// Everything is sent: stop waiting for writability, half-close or linger if asked to.
    private func flushed() {
        self.releaseOutbound()
        if self.isWaitingForWritable {
            self.isWaitingForWritable = false
            self.updateInterest()
        }
        if self.writeSide == .shutDownWhenFlushed {
            self.writeSide = .shutDown
            _ = Glibc.shutdown(self.fd, CBL_SHUT_WR)
        }
        if self.state == .closingAfterFlush { self.beginLingering() }
    }

    /// Hands what is buffered to the ring as one send, unless one is in flight (its completion sends
    /// the rest). The loop submits every send of a turn with one `io_uring_enter`.
    private func flushThroughRing() {
        defer {
            if self.pendingWriteBytes >= Self.writableNotificationBytes { self.wakesOwnerWhenDrained = true }
        }
        guard self.ringSend == .idle else { return }
        guard !self.outbound.isEmpty else {
            self.flushed()
            return
        }
        swap(&self.ringSendBuffer, &self.outbound)
        // Counted when handed over, not when confirmed: a request whose send was in flight when its
        // connection failed may have reached the peer (so it is not "sent nothing").
        self.bytesSent += self.ringSendBuffer.readableBytes
        self.submitRingSend()
    }

    private func submitRingSend() {
        self.ringSend = .inFlight
        self.ringSendBuffer.withUnsafeReadableBytes { self.loop.startSending(self.fd, $0) }
    }

    private enum SendResult {
        case sent(Int)
        case wouldBlock
        case failed(IOError)
    }

    private func send(_ bytes: UnsafeRawBufferPointer) -> SendResult {
        if let tls = self.tls {
            switch tls.write(bytes) {
            case .done(let count):
                self.bytesSent += count
                if self.tlsWantsRead {
                    self.tlsWantsRead = false
                    self.updateInterest()
                }
                return .sent(count)
            case .wantWrite:
                return .wouldBlock
            case .wantRead:
                self.tlsWantsRead = true
                self.updateInterest()
                return .wouldBlock
            case .closed:
                return .failed(IOError(errnoCode: EPIPE, function: "send"))
            case .failed(let reason):
                return .failed(.tls(reason))
            }
        }
        while true {
            let result = Glibc.send(self.fd, bytes.baseAddress, bytes.count, CBL_MSG_NOSIGNAL)
            if result >= 0 {
                self.bytesSent += result
                return .sent(result)
            }
            switch errno {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            case let code: return .failed(IOError(errnoCode: code, function: "send"))
            }
        }
    }

    private func waitForWritable() {
        if !self.isWaitingForWritable {
            self.isWaitingForWritable = true
            self.updateInterest()
        }
    }

    private func prepareOutbound() {
        if self.outbound.capacity == 0 { self.outbound = self.loop.borrowBuffer() }
    }

    private func releaseOutbound() {
        if self.outbound.capacity > 0 {
            self.loop.returnBuffer(self.outbound)
            self.outbound = ByteBuffer()
        }
    }

    // MARK: Closing

    /// Half-closes once everything buffered is sent (a tunnel whose other side finished sending);
    /// reading goes on.
    package func shutdownWriteAfterFlush() {
        guard self.state == .open else { return }
        if self.writeSide == .open { self.writeSide = .shutDownWhenFlushed }
        self.flush()
    }

    /// Closes now; buffered writes are dropped. The delegate is not called.
    package func close() {
        guard self.state != .closed else { return }
        self.state = .closed
        if let timer = self.lingerTimer { self.loop.cancel(timer) }
        self.tls?.shutdown()
        self.tls = nil
        if self.ringSend == .inFlight {
            // The kernel still reads the send's bytes: the socket closes when the send has ended.
            self.loop.stopReceiving(self.fd)
            self.loop.cancelSending(self.fd)
        } else {
            self.releaseDescriptor()
        }
        self.releaseOutbound()
        if self.inbound.capacity > 0 {
            self.loop.returnBuffer(self.inbound)
            self.inbound = ByteBuffer()
        }
        self.delegate = nil
    }

    /// Sends what is buffered, then half-closes and drains the peer before closing, so the peer reads
    /// everything (an error response above all) instead of a reset. The delegate hears `streamClosed`.
    package func closeAfterFlush() {
        switch self.state {
        case .open:
            self.state = .closingAfterFlush
            self.flush()
        case .connecting, .handshaking:
            self.finishClosing(error: nil)
        case .closingAfterFlush, .lingering, .closed:
            return
        }
    }

    private func beginLingering() {
        guard self.state == .closingAfterFlush else { return }
        self.state = .lingering
        if self.hasReadEnded {
            self.finishClosing(error: nil)
            return
        }
        _ = Glibc.shutdown(self.fd, CBL_SHUT_WR)
        self.inbound.clear()
        self.isReadingEnabled = true
        self.updateInterest()
        self.lingerTimer = self.loop.schedule(after: Self.lingerTimeout) { [weak self] in
            self?.lingerTimer = nil
            self?.finishClosing(error: nil)
        }
    }

    private func fail(_ error: IOError) {
        // A reset on a TLS stream may be a server refusing the client's certificate: TLS says so.
        self.finishClosing(error: self.tls?.explain(error) ?? error)
    }

    private func finishClosing(error: IOError?) {
        guard self.state != .closed else { return }
        let delegate = self.delegate
        self.close()
        delegate?.streamClosed(self, error: error)
    }

    package func loopWillStop() {
        self.close()
    }

    private func releaseDescriptor() {
        self.loop.deregister(self.fd)
        Glibc.close(self.fd)
        if self.ringSendBuffer.capacity > 0 {
            self.loop.returnBuffer(self.ringSendBuffer)
            self.ringSendBuffer = ByteBuffer()
        }
    }

    // MARK: Readiness

    package func ready(_ events: ReadinessEvents) {
        if events.isHangUpOrError {
            let code = Socket.pendingError(self.fd)
            if code != 0 {
                self.fail(IOError(errnoCode: code, function: self.state == .connecting ? "connect" : "socket"))
                return
            }
            if self.registeredInterest == .none {
                // Epoll reports a hang-up whatever the interest; with nothing to read or write it would repeat forever.
                self.fail(IOError(errnoCode: ECONNRESET, function: "socket"))
                return
            }
        }
        if self.state == .connecting {
            if events.isWritable || events.isHangUpOrError { self.finishConnecting() }
            return
        }
        if self.state == .handshaking {
            self.driveHandshake()
            return
        }
        if self.tlsWantsWrite && events.isWritable {
            // A read waited for writability (TLS): do it now.
            self.tlsWantsWrite = false
            self.updateInterest()
            self.readOnce()
            if self.state == .closed { return }
        }
        if events.isWritable && self.ringSend == .waitsForWritable {
            self.isWaitingForWritable = false
            self.updateInterest()
            self.submitRingSend()
            return
        }
        if (events.isWritable && self.isWaitingForWritable) || (self.tlsWantsRead && events.isReadable) {
            self.flush()
            if self.state == .open && self.outbound.isEmpty {
                self.delegate?.streamWritable(self)
            }
            if self.state == .closed { return }
        }
        if (events.isReadable || events.isHangUpOrError) && self.registeredInterest.readable && self.wantsToRead {
            self.readOnce()
        }
    }

    private var wantsToRead: Bool {
        switch self.state {
        case .open: self.isReadingEnabled && !self.hasReadEnded
        case .lingering: !self.hasReadEnded
        case .connecting, .handshaking, .closingAfterFlush, .closed: false
        }
    }

    private func driveHandshake() {
        guard let tls = self.tls else { return }
        switch tls.handshake() {
        case .done:
            self.state = .open
            self.tlsWantsRead = false
            self.tlsWantsWrite = false
            self.updateInterest()
            self.delegate?.streamConnected(self)
            self.scheduleReadIfTLSHasBufferedBytes()
        case .wantRead:
            self.tlsWantsRead = true
            self.tlsWantsWrite = false
            self.updateInterest()
        case .wantWrite:
            self.tlsWantsRead = false
            self.tlsWantsWrite = true
            self.updateInterest()
        case .closed:
            self.fail(.tls("handshake failed: the peer closed the connection"))
        case .failed(let reason):
            self.fail(.tls(reason))
        }
    }

    private func finishConnecting() {
        let code = Socket.pendingError(self.fd)
        guard code == 0 else {
            self.fail(IOError(errnoCode: code, function: "connect"))
            return
        }
        if self.tls != nil {
            self.state = .handshaking
            self.driveHandshake()
            return
        }
        self.state = .open
        self.updateInterest()
        self.delegate?.streamConnected(self)
    }

    private func readOnce() {
        if self.inbound.capacity == 0 { self.inbound = self.loop.borrowBuffer() }
        if let tls = self.tls {
            self.readTLS(tls)
            return
        }
        var failure: Int32 = 0
        var wouldBlock = false
        let fd = self.fd
        let count = self.inbound.writeWithUnsafeMutableBytes(minimumWritable: 16 * 1024) { tail -> Int in
            while true {
                let result = Glibc.read(fd, tail.baseAddress, min(tail.count, Self.readSize))
                if result >= 0 { return result }
                switch errno {
                case EINTR: continue
                case EAGAIN: wouldBlock = true
                case let code: failure = code
                }
                return 0
            }
        }
        if failure != 0 {
            self.fail(IOError(errnoCode: failure, function: "read"))
            return
        }
        if wouldBlock {
            self.releaseInboundIfEmpty()
            return
        }
        if count == 0 {
            self.peerFinishedSending()
            return
        }
        if self.state == .lingering {
            self.inbound.clear()
            return
        }
        self.delegate?.streamReceived(self)
        if self.state != .closed { self.releaseInboundIfEmpty() }
    }

    /// Reads decrypted bytes: records until OpenSSL wants the socket again, up to `readSize`.
    private func readTLS(_ tls: TLSConnection) {
        var total = 0
        var outcome: TLSConnection.Outcome = .wantRead
        while total < Self.readSize {
            outcome = .wantRead
            _ = self.inbound.writeWithUnsafeMutableBytes(minimumWritable: 16 * 1024) { tail -> Int in
                outcome = tls.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: tail[0..<min(tail.count, Self.readSize)])
                )
                if case .done(let count) = outcome { return count }
                return 0
            }
            guard case .done(let count) = outcome else { break }
            total += count
        }
        switch outcome {
        case .failed(let reason):
            self.fail(.tls(reason))
            return
        case .wantWrite:
            self.tlsWantsWrite = true
            self.updateInterest()
        case .closed where total == 0:
            self.peerFinishedSending()
            return
        case .closed, .wantRead, .done:
            break
        }
        guard total > 0 else {
            self.releaseInboundIfEmpty()
            return
        }
        if self.state == .lingering {
            self.inbound.clear()
            return
        }
        self.delegate?.streamReceived(self)
        if self.state == .closed { return }
        self.releaseInboundIfEmpty()
        if case .closed = outcome {
            // Data and then the end in one go: report the end after the data.
            self.loop.defer { [weak self] in
                guard let self, self.state != .closed, !self.hasReadEnded else { return }
                self.hasReadEnded = true
                self.updateInterest()
                self.delegate?.streamReadEnded(self)
            }
            return
        }
        self.scheduleReadIfTLSHasBufferedBytes()
    }

    /// The peer sent its last byte: a lingering close is done; otherwise the delegate hears of it.
    private func peerFinishedSending() {
        self.hasReadEnded = true
        self.releaseInboundIfEmpty()
        self.updateInterest()
        if self.state == .lingering {
            self.finishClosing(error: nil)
        } else {
            self.delegate?.streamReadEnded(self)
        }
    }

    private func releaseInboundIfEmpty() {
        if self.inbound.isEmpty && self.inbound.capacity > 0 {
            self.loop.returnBuffer(self.inbound)
            self.inbound = ByteBuffer()
        }
    }

    private func wantedInterest() -> Interest {
        switch self.state {
        case .connecting:
            return .write
        case .handshaking:
            return Interest(readable: !self.tlsWantsWrite, writable: self.tlsWantsWrite)
        case .open, .closingAfterFlush:
            let readsHere = !self.readsThroughRing && self.isReadingEnabled && !self.hasReadEnded && self.state == .open
            return Interest(
                readable: readsHere || self.tlsWantsRead,
                writable: self.isWaitingForWritable || self.tlsWantsWrite
            )
        case .lingering:
            return Interest(readable: !self.readsThroughRing && !self.hasReadEnded, writable: false)
        case .closed:
            return .none
        }
    }

    private func updateInterest() {
        guard self.state != .closed else { return }
        self.updateRingReceive()
        let interest = self.wantedInterest()
        guard interest != self.registeredInterest else { return }
        self.registeredInterest = interest
        self.loop.setInterest(self.fd, interest)
    }

    /// Arms or cancels the ring's receive to match whether the stream wants bytes now.
    private func updateRingReceive() {
        guard self.readsThroughRing else { return }
        switch self.state {
        case .open, .lingering:
            if self.wantsToRead { self.loop.startReceiving(self.fd) } else { self.loop.stopReceiving(self.fd) }
        case .connecting, .handshaking, .closingAfterFlush, .closed:
            self.loop.stopReceiving(self.fd)
        }
    }
}

extension StreamConnection: RingReceiver {
    package func ringReceived(_ bytes: UnsafeRawBufferPointer) {
        switch self.state {
        case .open:
            break
        case .lingering, .closingAfterFlush:
            // Draining before the close: what the peer still sends is read and dropped.
            return
        case .connecting, .handshaking, .closed:
            return
        }
        if self.inboundStorage.capacity == 0 { self.inboundStorage = self.loop.borrowBuffer() }
        self.inboundStorage.writeBytes(bytes)
        self.delegate?.streamReceived(self)
        if self.state != .closed { self.releaseInboundIfEmpty() }
    }

    package func ringSendCompleted(_ result: Int32) {
        self.ringSend = .idle
        if self.state == .closed {
            self.releaseDescriptor()
            return
        }
        if result < 0 {
            if result == -EAGAIN {
                // The socket's buffer is full: send the rest once epoll says it is writable.
                self.ringSend = .waitsForWritable
                self.waitForWritable()
                return
            }
            self.fail(IOError(errnoCode: -result, function: "send"))
            return
        }
        self.ringSendBuffer.moveReaderIndex(forwardBy: Int(result))
        if !self.ringSendBuffer.isEmpty {
            self.submitRingSend()
        } else {
            if self.ringSendBuffer.capacity > 0 {
                self.loop.returnBuffer(self.ringSendBuffer)
                self.ringSendBuffer = ByteBuffer()
            }
            if self.outbound.isEmpty { self.flushed() } else { self.flushThroughRing() }
        }
        if self.wakesOwnerWhenDrained && self.pendingWriteBytes < Self.writableNotificationBytes
            && self.state == .open
        {
            self.wakesOwnerWhenDrained = false
            self.delegate?.streamWritable(self)
        }
    }

    package func ringReceiveEnded(_ result: Int32) {
        guard self.state != .closed else { return }
        if result == 0 {
            self.peerFinishedSending()
        } else {
            self.fail(IOError(errnoCode: -result, function: "recv"))
        }
    }
}

@available(*, unavailable)
extension StreamConnection: Sendable {}
