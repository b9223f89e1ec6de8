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
    /// An outgoing connection is established (with TLS: its handshake is complete), or a TLS
    /// session started on an open connection (`startTLS`) completed its handshake.
    func streamConnected(_ connection: StreamConnection)
    /// The connection is gone: reset, failed, or closed after a final flush. Called at most once, and
    /// never for a `close()` the owner called itself.
    func streamClosed(_ connection: StreamConnection, error: IOError?)
}

/// A non-blocking byte stream (TCP or unix socket) with an inbound and an outbound buffer.
///
/// Three parts, one file each: this class, which owns the buffers, the lifecycle (connecting, open,
/// closing after a flush, lingering) and the owner's events; a transport that moves bytes between
/// the socket and the kernel (`ReadinessTransport`: read(2) and send(2) on epoll's word;
/// `RingTransport`: io_uring receives and sends), chosen by the loop; and, when there is TLS, a
/// `TLSConnection` between the two, in either role, from the start (an upstream) or from the middle
/// of the stream (`startTLS`: an intercepted CONNECT). Whatever the transport and with or without
/// TLS, the owner sees the same thing: bytes in `inbound` and one `streamReceived`, so one "parse what
/// `inbound` holds" routine serves every owner.
///
/// Writes go to the kernel at once when they can and are buffered only when it would block; the
/// owner watches `pendingWriteBytes` to stop reading the other side (backpressure). Buffers are
/// borrowed from the loop while they hold bytes, so an idle connection holds none. Confined to its loop.
package final class StreamConnection: Selectable {
    package let fd: Int32
    /// Strong, and a `let`: a method called on it borrows it, at no reference counting (an
    /// `unowned(unsafe)` one is copied into a strong reference, a retain and a release, on every use:
    /// 87 retains a request measured 73 without). The cycle through the loop's registrations ends
    /// when the connection closes, or when the loop stops (it lets go of everything registered).
    package let loop: EventLoop
    @exclusivity(unchecked) package var delegate: StreamConnectionDelegate?
    /// What the owner reads: the peer's bytes (decrypted, with TLS).
    @exclusivity(unchecked) private var inboundStorage = ByteBuffer()
    /// What the owner wrote and the connection has not yet handed on (to TLS, or to the transport).
    @exclusivity(unchecked) private var outbound = ByteBuffer()
    @exclusivity(unchecked) private var state: State
    @exclusivity(unchecked) private var isReadingEnabled = true
    /// The peer sent its last byte (FIN), and the owner was told.
    @exclusivity(unchecked) package private(set) var hasReadEnded = false
    /// Bytes the kernel accepted so far (ciphertext, with TLS): whether a request reached the
    /// connection at all.
    @exclusivity(unchecked) package private(set) var bytesSent = 0
    @exclusivity(unchecked) private var writeSide: WriteSide = .open
    @exclusivity(unchecked) private var lingerTimer: TimerID?
    /// What epoll was last told.
    @exclusivity(unchecked) private var registeredInterest: Interest = .none
    @exclusivity(unchecked) private var transport: StreamTransport
    /// TLS over the transport, when there is one.
    @exclusivity(unchecked) package private(set) var tls: TLSConnection?
    /// A pass over the bytes TLS holds is queued for the end of this loop turn (epoll cannot see them).
    @exclusivity(unchecked) private var isTLSPassScheduled = false

    /// A relay passes a peer's end on as a half-close once everything before it is written.
    private enum WriteSide {
        case open
        /// `shutdown(SHUT_WR)` once the outbound buffer is empty.
        case shutDownWhenFlushed
        case shutDown
    }

    private enum State {
        case connecting
        /// Bytes flow (with TLS, a handshake may still be running: see `tls.state`).
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
        self.transport =
            loop.usesIOUring ? .ring(RingTransport(fd: fd, loop: loop)) : .readiness(ReadinessTransport(fd: fd))
    }

    /// Puts TLS over the stream (the client role, or a server that speaks TLS from the first byte):
    /// call before `start`. The handshake runs as soon as TCP is up, and the delegate hears
    /// `streamConnected` once it completed.
    package func useTLS(_ connection: TLSConnection) {
        precondition(self.tls == nil && self.bytesSent == 0, "TLS must start before any byte")
        self.tls = connection
    }

    /// Starts TLS now, in the middle of an open stream: what is buffered to send goes out first in
    /// clear (a `200 Connection established`), and what the peer already sent (in `inbound`, unread)
    /// is the first of the handshake. The delegate hears `streamConnected` once the handshake is
    /// complete, or `streamClosed` with the TLS failure.
    package func startTLS(_ connection: TLSConnection) {
        self.loop.assertInEventLoop()
        precondition(self.tls == nil, "TLS started twice")
        guard self.state == .open else { return }
        swap(&connection.produced, &self.outbound)
        swap(&connection.received, &self.inboundStorage)
        self.tls = connection
        self.driveHandshake(connection)
    }

    /// Registers with the loop; events start arriving.
    package func start(delegate: StreamConnectionDelegate) {
        self.loop.assertInEventLoop()
        self.delegate = delegate
        let interest = self.wantedInterest()
        self.registeredInterest = interest
        self.loop.register(self.fd, self, interest: interest)
        self.transport.setReceiving(self.wantsToReceive)
        if self.state == .open, let tls = self.tls { self.driveHandshake(tls) }
    }

    package var isOpen: Bool { self.state == .open && self.tls?.state != .handshaking }
    package var isClosed: Bool { self.state == .closed }
    package var isConnecting: Bool { self.state == .connecting || self.tls?.state == .handshaking }
    package var pendingWriteBytes: Int {
        var pending = self.outbound.readableBytes
        if let tls = self.tls { pending += tls.produced.readableBytes }
        if case .ring(let ring) = self.transport { pending += ring.bytesInFlight }
        return pending
    }

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

    /// The peer's FIN reached the connection (with TLS, maybe before the owner was told).
    private var hasReceivedEnd: Bool { self.tls?.hasReceivedEnd ?? self.hasReadEnded }

    /// Starts or stops reading (backpressure: stop while the other side cannot take more).
    package func setReading(_ enabled: Bool) {
        guard self.isReadingEnabled != enabled else { return }
        self.isReadingEnabled = enabled
        self.updateInterest()
        if enabled { self.scheduleTLSPassIfNeeded() }
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
        guard self.outbound.isEmpty, self.tls == nil, !bytes.isEmpty, case .readiness(var readiness) = self.transport
        else {
            self.write(bytes)
            self.flush()
            return
        }
        do throws(IOError) {
            let sent = try readiness.send(bytes)
            self.transport = .readiness(readiness)
            self.bytesSent += sent
            if sent < bytes.count {
                self.write(UnsafeRawBufferPointer(rebasing: bytes[sent...]))
                self.waitForWritable()
            }
        } catch {
            self.fail(error)
        }
    }

    /// Sends what is buffered, as far as the kernel takes it; waits for writability for the rest.
    package func flush() {
        guard self.state == .open || self.state == .closingAfterFlush else { return }
        let isDrained: Bool
        if let tls = self.tls {
            // Encrypted once the handshake is done; until then the owner's bytes wait.
            if tls.isEstablished && !self.outbound.isEmpty && !self.encryptOutbound(tls) { return }
            isDrained = self.send(&tls.produced)
        } else {
            isDrained = self.send(&self.outbound)
        }
        if isDrained && self.outbound.isEmpty && self.state != .closed {
            self.flushed()
        } else if case .ring(let ring) = self.transport {
            ring.flushLeft(pendingWriteBytes: self.pendingWriteBytes)
        }
    }

    /// Hands the owner's bytes to TLS, which encrypts them into what the transport sends.
    private func encryptOutbound(_ tls: TLSConnection) -> Bool {
        self.prepareTLSOutput(tls)
        let outcome = self.outbound.withUnsafeReadableBytes { tls.write($0) }
        self.outbound.clear()
        self.releaseOutbound()
        if case .failed(let failure) = outcome {
            self.fail(.tls(failure))
            return false
        }
        return true
    }

    /// Hands `bytes` (the outbound buffer, or TLS's output) to the transport. Returns whether
    /// nothing of it is left to send or in flight.
    @inline(__always)
    private func send(_ bytes: inout ByteBuffer) -> Bool {
        switch self.transport {
        case .readiness(var readiness):
            do throws(IOError) {
                self.bytesSent += try readiness.send(&bytes)
                self.transport = .readiness(readiness)
            } catch {
                self.fail(error)
                return false
            }
            if readiness.waitsForWritable {
                self.waitForWritable()
                return false
            }
            return true
        case .ring(let ring):
            // Counted when handed over, not when confirmed: a request whose send was in flight when its
            // connection failed may have reached the peer (so it is not "sent nothing").
            self.bytesSent += ring.send(&bytes)
            return ring.isIdle
        }
    }

    /// Everything is sent: stop waiting for writability, half-close or linger if asked to.
    private func flushed() {
        self.releaseOutbound()
        if self.registeredInterest.writable { self.updateInterest() }
        if self.writeSide == .shutDownWhenFlushed {
            self.writeSide = .shutDown
            self.shutdownWrite()
        }
        if self.state == .closingAfterFlush { self.beginLingering() }
    }

    private func waitForWritable() {
        if !self.registeredInterest.writable { self.updateInterest() }
    }

    private func shutdownWrite() {
        _ = try? SystemCall.nonBlocking("shutdown") { Glibc.shutdown(self.fd, CBL_SHUT_WR) }
    }

    private func prepareOutbound() {
        self.loop.lendBuffer(to: &self.outbound)
    }

    private func releaseOutbound() {
        if self.outbound.capacity > 0 && self.outbound.isEmpty {
            self.loop.returnBuffer(from: &self.outbound)
        }
        if let tls = self.tls, tls.produced.capacity > 0 && tls.produced.isEmpty {
            self.loop.returnBuffer(from: &tls.produced)
        }
    }

    /// What OpenSSL writes goes into one of the loop's buffers: appended to an empty `produced`, the
    /// BIO would allocate a small buffer of its own for every record (and the ring's send would free it).
    private func prepareTLSOutput(_ tls: TLSConnection) {
        self.loop.lendBuffer(to: &tls.produced)
    }

    // MARK: Closing

    /// Half-closes once everything buffered is sent (a tunnel whose other side finished sending);
    /// reading goes on. With TLS a close_notify goes first, so the peer sees a clean end.
    package func shutdownWriteAfterFlush() {
        guard self.state == .open else { return }
        if self.writeSide == .open { self.writeSide = .shutDownWhenFlushed }
        self.closeTLSOutput()
        self.flush()
    }

    /// Closes now; buffered writes are dropped. The delegate is not called.
    package func close() {
        guard self.state != .closed else { return }
        self.state = .closed
        if let timer = self.lingerTimer { self.loop.cancel(timer) }
        if let tls = self.tls {
            // A last close_notify, if the kernel takes it at once; never waited for.
            tls.shutdown()
            self.transport.sendIfPossible(tls.produced)
            if tls.received.capacity > 0 { self.loop.returnBuffer(from: &tls.received) }
            if tls.produced.capacity > 0 { self.loop.returnBuffer(from: &tls.produced) }
            self.tls = nil
        }
        if self.transport.close() { self.releaseDescriptor() }
        self.outbound.clear()
        self.releaseOutbound()
        self.inboundStorage.clear()
        self.releaseInboundIfEmpty()
        self.delegate = nil
    }

    /// Sends what is buffered, then half-closes and drains the peer before closing, so the peer reads
    /// everything (an error response above all) instead of a reset. The delegate hears `streamClosed`.
    package func closeAfterFlush() {
        switch self.state {
        case .open where self.tls?.state == .handshaking, .connecting:
            self.finishClosing(error: nil)
        case .open:
            self.state = .closingAfterFlush
            self.closeTLSOutput()
            self.flush()
        case .closingAfterFlush, .lingering, .closed:
            return
        }
    }

    /// Encrypts what the owner wrote, then a close_notify after it.
    private func closeTLSOutput() {
        guard let tls = self.tls, tls.isEstablished else { return }
        if !self.outbound.isEmpty && !self.encryptOutbound(tls) { return }
        tls.shutdown()
    }

    private func beginLingering() {
        guard self.state == .closingAfterFlush else { return }
        self.state = .lingering
        if self.hasReadEnded || self.hasReceivedEnd {
            self.finishClosing(error: nil)
            return
        }
        self.shutdownWrite()
        self.inboundStorage.clear()
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
        self.transport.releaseBuffers()
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
        if events.isWritable && self.transport.waitsForWritable {
            self.socketWritable()
            if self.state == .closed { return }
        }
        if (events.isReadable || events.isHangUpOrError) && self.registeredInterest.readable && self.wantsToReceive,
            case .readiness(let readiness) = self.transport
        {
            self.readOnce(readiness)
        }
    }

    /// The socket takes bytes again: send what waited, and tell the owner once nothing is pending.
    private func socketWritable() {
        if case .ring(let ring) = self.transport {
            ring.socketWritable()
            self.updateInterest()
            return
        }
        self.flush()
        if self.state == .open && self.pendingWriteBytes == 0 {
            self.delegate?.streamWritable(self)
        }
    }

    /// Whether the connection wants the peer's bytes now: the owner does, a handshake needs them,
    /// or a lingering close drains them.
    private var wantsToReceive: Bool {
        switch self.state {
        case .open:
            if self.hasReadEnded || self.hasReceivedEnd { return false }
            return self.isReadingEnabled || self.tls?.state == .handshaking
        case .lingering: return !self.hasReadEnded && !self.hasReceivedEnd
        case .connecting, .closingAfterFlush, .closed: return false
        }
    }

    private func finishConnecting() {
        let code = Socket.pendingError(self.fd)
        guard code == 0 else {
            self.fail(IOError(errnoCode: code, function: "connect"))
            return
        }
        self.state = .open
        self.updateInterest()
        if let tls = self.tls {
            self.driveHandshake(tls)
            return
        }
        self.delegate?.streamConnected(self)
    }

    @inline(__always)
    private func readOnce(_ readiness: ReadinessTransport) {
        let progress: ReadProgress
        do throws(IOError) {
            if let tls = self.tls {
                self.loop.lendBuffer(to: &tls.received)
                progress = try readiness.read(into: &tls.received)
            } else {
                self.loop.lendBuffer(to: &self.inboundStorage)
                progress = try readiness.read(into: &self.inboundStorage)
            }
        } catch {
            self.receiveFailed(error)
            return
        }
        switch progress {
        case .wouldBlock: self.releaseInboundIfEmpty()
        case .bytes: self.receivedBytes()
        case .end: self.receivedEnd()
        }
    }

    /// The transport put bytes in `inbound`, or with TLS in `tls.received`.
    @inline(__always)
    private func receivedBytes() {
        if self.state == .lingering {
            self.inboundStorage.clear()
            self.tls?.received.clear()
            return
        }
        if let tls = self.tls {
            if tls.state == .handshaking {
                self.driveHandshake(tls)
            } else {
                self.readTLS(tls)
            }
            return
        }
        self.delegate?.streamReceived(self)
        if self.state != .closed { self.releaseInboundIfEmpty() }
    }

    /// Reading the socket failed. A TLS reader that meets a reset sees the end of the stream (HTTP
    /// framing tells whether the message was complete), unless the server asked for a client
    /// certificate and has not answered yet: then the reset is its refusal, and `fail` says so.
    private func receiveFailed(_ error: IOError) {
        if let tls = self.tls, error.errnoCode == ECONNRESET, tls.clientCertificateFailure(alert: nil) == nil {
            self.receivedEnd()
        } else {
            self.fail(error)
        }
    }

    /// The transport met the peer's end.
    private func receivedEnd() {
        guard let tls = self.tls, self.state == .open else {
            self.peerFinishedSending()
            return
        }
        tls.hasReceivedEnd = true
        self.updateInterest()
        if tls.state == .handshaking {
            self.driveHandshake(tls)
        } else if self.isReadingEnabled {
            self.readTLS(tls)
        }
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
        if self.inboundStorage.isEmpty && self.inboundStorage.capacity > 0 {
            self.loop.returnBuffer(from: &self.inboundStorage)
        }
        if let tls = self.tls, tls.received.isEmpty && tls.received.capacity > 0 {
            self.loop.returnBuffer(from: &tls.received)
        }
    }

    // MARK: TLS

    /// Runs the handshake over what arrived; sends what it produced.
    private func driveHandshake(_ tls: TLSConnection) {
        self.prepareTLSOutput(tls)
        switch tls.handshake() {
        case .done:
            // The handshake's last flight (a server's session tickets too) goes out with the owner's first bytes.
            self.flush()
            guard self.state != .closed else { return }
            self.updateInterest()
            self.delegate?.streamConnected(self)
            guard self.state != .closed else { return }
            self.scheduleTLSPassIfNeeded()
        case .needsMoreBytes:
            _ = self.send(&tls.produced)
            guard self.state != .closed else { return }
            self.updateInterest()
        case .failed(let failure):
            // The alert goes out if the kernel takes it at once.
            self.transport.sendIfPossible(tls.produced)
            self.fail(.tls(failure))
        }
    }

    /// Decrypts what `received` holds into `inbound`, up to `readSize` a pass, and tells the owner.
    private func readTLS(_ tls: TLSConnection) {
        guard self.state == .open && self.isReadingEnabled && !self.hasReadEnded else { return }
        var total = 0
        var outcome: TLSConnection.Outcome = .needsMoreBytes
        // The plaintext goes into one of the loop's buffers (an empty inbound would grow one of its own).
        self.loop.lendBuffer(to: &self.inboundStorage)
        while total < Self.readSize {
            outcome = .needsMoreBytes
            _ = self.inboundStorage.writeWithUnsafeMutableBytes(minimumWritable: 16 * 1024) { tail -> Int in
                let room = UnsafeMutableRawBufferPointer(rebasing: tail[0..<min(tail.count, Self.readSize)])
                outcome = tls.read(into: room)
                if case .done(let count) = outcome { return count }
                return 0
            }
            guard case .done(let count) = outcome else { break }
            total += count
            // Nothing left to decrypt: asking OpenSSL again would only hear "want read".
            if !tls.hasBufferedInput && !tls.hasReceivedEnd { break }
        }
        if case .failed(let failure) = outcome {
            self.fail(.tls(failure))
            return
        }
        // Reading can make TLS answer (a TLS 1.3 key update): send it.
        if !tls.produced.isEmpty {
            _ = self.send(&tls.produced)
            guard self.state != .closed else { return }
        }
        guard total > 0 else {
            if outcome == .ended {
                self.peerFinishedSending()
            } else {
                self.releaseInboundIfEmpty()
            }
            return
        }
        self.delegate?.streamReceived(self)
        guard self.state != .closed else { return }
        self.releaseInboundIfEmpty()
        if outcome == .ended {
            // Data and then the end in one go: report the end after the data.
            self.loop.defer { [weak self] in
                guard let self, self.state != .closed, !self.hasReadEnded else { return }
                self.peerFinishedSending()
            }
            return
        }
        self.scheduleTLSPassIfNeeded()
    }

    /// Bytes TLS already holds produce no event: read them on this loop turn's end.
    private func scheduleTLSPassIfNeeded() {
        guard let tls = self.tls, tls.state != .handshaking, !self.isTLSPassScheduled, self.state == .open,
            self.isReadingEnabled, !self.hasReadEnded, tls.hasBufferedInput || tls.hasReceivedEnd
        else { return }
        self.isTLSPassScheduled = true
        self.loop.defer { [weak self] in
            guard let self else { return }
            self.isTLSPassScheduled = false
            if let tls = self.tls { self.readTLS(tls) }
        }
    }

    // MARK: Interest

    private func wantedInterest() -> Interest {
        switch self.state {
        case .connecting:
            return .write
        case .open, .closingAfterFlush, .lingering:
            return Interest(
                readable: self.transport.readsOnReadiness && self.wantsToReceive,
                writable: self.transport.waitsForWritable && self.state != .lingering
            )
        case .closed:
            return .none
        }
    }

    private func updateInterest() {
        guard self.state != .closed else { return }
        self.transport.setReceiving(self.wantsToReceive)
        let interest = self.wantedInterest()
        guard interest != self.registeredInterest else { return }
        self.registeredInterest = interest
        self.loop.setInterest(self.fd, interest)
    }
}

// MARK: The ring

extension StreamConnection: RingReceiver {
    package func ringReceived(_ bytes: UnsafeRawBufferPointer) {
        switch self.state {
        case .open:
            break
        case .lingering, .closingAfterFlush:
            // Draining before the close: what the peer still sends is read and dropped.
            return
        case .connecting, .closed:
            return
        }
        if let tls = self.tls {
            self.loop.lendBuffer(to: &tls.received)
            tls.received.writeBytes(bytes)
        } else {
            self.loop.lendBuffer(to: &self.inboundStorage)
            self.inboundStorage.writeBytes(bytes)
        }
        self.receivedBytes()
    }

    package func ringSendCompleted(_ result: Int32) {
        guard case .ring(let ring) = self.transport else { return }
        if self.state == .closed {
            ring.sendEnded()
            self.releaseDescriptor()
            return
        }
        let completion: SendCompletion
        do throws(IOError) {
            completion = try ring.sendCompleted(result)
        } catch {
            self.fail(error)
            return
        }
        switch completion {
        case .resent: break
        case .waitsForWritable: self.waitForWritable()
        case .drained:
            // Plain and nothing written meanwhile (the common case): done, without another pass.
            if self.tls == nil && self.outbound.isEmpty { self.flushed() } else { self.flush() }
        }
        if self.state == .open && ring.shouldWakeOwner(pendingWriteBytes: self.pendingWriteBytes) {
            self.delegate?.streamWritable(self)
        }
    }

    package func ringReceiveEnded(_ result: Int32) {
        guard self.state != .closed else { return }
        if result == 0 {
            self.receivedEnd()
        } else {
            self.receiveFailed(IOError(errnoCode: -result, function: "recv"))
        }
    }
}

@available(*, unavailable)
extension StreamConnection: Sendable {}
