import BearerCore
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

/// A non-blocking byte stream with an inbound and an outbound buffer.
///
/// This class owns the owner's two buffers, the lifecycle (connecting, open, closing after a flush,
/// lingering) and the owner's events. A `StreamTransport` moves the bytes: over a socket (readiness
/// or io_uring, as the loop does its I/O), over an in-memory pipe (`MemoryNetwork`), or through TLS
/// stacked on either, in either role, from the start or from the middle of the stream
/// (TLS/StreamConnection+TLS.swift). Whatever the transport, the owner sees the same thing: bytes
/// in `inbound` and one `streamReceived`, so one "parse what `inbound` holds" routine serves every
/// owner. The readiness and ring events arrive in StreamConnection+Receiving and +Ring.
///
/// Writes go to the transport at once when they can and are buffered only when it would block; the
/// owner watches `pendingWriteBytes` to stop reading the other side (backpressure). Buffers are
/// borrowed from the loop while they hold bytes, so an idle connection holds none. Confined to its loop.
package final class StreamConnection: Selectable {
    /// Strong, and a `let`: a method called on it borrows it, at no reference counting (an
    /// `unowned(unsafe)` one is copied into a strong reference, a retain and a release, on every use:
    /// 87 retains a request measured 73 without). The cycle through the loop's registrations ends
    /// when the connection closes, or when the loop stops (it lets go of everything registered).
    package let loop: EventLoop
    @exclusivity(unchecked) package var delegate: StreamConnectionDelegate?
    /// What the owner reads: the peer's bytes (decrypted, with TLS).
    @exclusivity(unchecked) var inboundStorage = ByteBuffer()
    /// What the owner wrote and the connection has not yet handed to the transport.
    @exclusivity(unchecked) var outbound = ByteBuffer()
    @exclusivity(unchecked) var state: State
    @exclusivity(unchecked) var isReadingEnabled = true
    /// The peer sent its last byte (FIN), and the owner was told.
    @exclusivity(unchecked) package internal(set) var hasReadEnded = false
    /// Bytes the transport's bottom accepted so far (ciphertext, with TLS): whether a request
    /// reached the connection at all.
    @exclusivity(unchecked) package internal(set) var bytesSent = 0
    @exclusivity(unchecked) private var writeSide: WriteSide = .open
    @exclusivity(unchecked) private var lingerTimer: TimerID?
    /// What the loop was last told.
    @exclusivity(unchecked) var registeredInterest: Interest = .none
    @exclusivity(unchecked) var transport: StreamTransport
    /// A pass over bytes the transport holds is queued for the end of this loop turn (no readiness
    /// event announces them).
    @exclusivity(unchecked) var isBufferedPassScheduled = false

    /// A relay passes a peer's end on as a half-close once everything before it is written.
    private enum WriteSide {
        case open
        /// Half-close once the outbound buffer is empty.
        case shutDownWhenFlushed
        case shutDown
    }

    enum State {
        case connecting
        /// Bytes flow (a transport's handshake may still be running: `transport.isEstablishing`).
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

    /// A stream over socket `fd`: through the ring when the loop has one, else on epoll's readiness.
    package convenience init(fd: Int32, loop: EventLoop, isConnecting: Bool) {
        let transport: StreamTransport =
            loop.usesIOUring ? .ring(RingTransport(fd: fd, loop: loop)) : .readiness(ReadinessTransport(fd: fd))
        self.init(transport: transport, loop: loop, isConnecting: isConnecting)
    }

    init(transport: StreamTransport, loop: EventLoop, isConnecting: Bool) {
        self.loop = loop
        self.state = isConnecting ? .connecting : .open
        self.transport = transport
    }

    /// Registers with the loop; events start arriving.
    package func start(delegate: StreamConnectionDelegate) {
        self.loop.assertInEventLoop()
        self.delegate = delegate
        let interest = self.wantedInterest()
        self.registeredInterest = interest
        self.transport.register(self, interest: interest, on: self.loop)
        self.transport.setReceiving(self.wantsToReceive)
        if self.state == .open && self.transport.isEstablishing { self.establish() }
    }

    package var isOpen: Bool { self.state == .open && !self.transport.isEstablishing }
    package var isClosed: Bool { self.state == .closed }
    package var isConnecting: Bool { self.state == .connecting || self.transport.isEstablishing }
    /// The socket the stream runs over (nil: an in-memory pipe): to ask who the peer is, not to use.
    package var socketDescriptor: Int32? { self.transport.socketDescriptor }
    package var pendingWriteBytes: Int { self.outbound.readableBytes + self.transport.pendingBytes }

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
        if enabled { self.scheduleBufferedPass() }
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

    /// Sends `bytes` now, without copying them when nothing is queued before them (a plain socket on
    /// epoll); buffers the rest.
    package func writeAndFlush(_ bytes: UnsafeRawBufferPointer) {
        guard self.state == .open || self.state == .closingAfterFlush else { return }
        guard self.outbound.isEmpty, !bytes.isEmpty, case .readiness(var readiness) = self.transport else {
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

    /// Sends what is buffered, as far as the transport takes it; waits for writability for the rest.
    package func flush() {
        guard self.state == .open || self.state == .closingAfterFlush else { return }
        let isDrained: Bool
        do throws(IOError) {
            isDrained = try self.transport.send(&self.outbound, sent: &self.bytesSent)
        } catch {
            self.fail(error)
            return
        }
        if isDrained && self.outbound.isEmpty {
            self.flushed()
        } else if let ring = self.transport.ring {
            ring.flushLeft(pendingWriteBytes: self.pendingWriteBytes)
        } else if self.transport.waitsForWritable {
            self.waitForWritable()
        }
    }

    /// Sends what the transport wrote on its own while receiving (a handshake's flight, the answer
    /// to a key update); the owner's bytes wait for its `flush`.
    func sendTransportOutput() {
        do throws(IOError) {
            let isDrained = try self.transport.sendOwnOutput(sent: &self.bytesSent)
            if !isDrained && self.transport.waitsForWritable { self.waitForWritable() }
        } catch {
            self.fail(error)
        }
    }

    /// Everything is sent: stop waiting for writability, half-close or linger if asked to.
    func flushed() {
        self.releaseOutbound()
        if self.registeredInterest.writable { self.updateInterest() }
        if self.writeSide == .shutDownWhenFlushed {
            self.writeSide = .shutDown
            self.transport.shutdownWrite()
        }
        if self.state == .closingAfterFlush { self.beginLingering() }
    }

    func waitForWritable() {
        if !self.registeredInterest.writable { self.updateInterest() }
    }

    private func prepareOutbound() {
        self.loop.lendBuffer(to: &self.outbound)
    }

    func releaseOutbound() {
        if self.outbound.capacity > 0 && self.outbound.isEmpty {
            self.loop.returnBuffer(from: &self.outbound)
        }
    }

    // MARK: Closing

    /// Half-closes once everything buffered is sent (a tunnel whose other side finished sending);
    /// reading goes on. A layer says its last word first (TLS: close_notify), so the peer sees a clean end.
    package func shutdownWriteAfterFlush() {
        guard self.state == .open else { return }
        if self.writeSide == .open { self.writeSide = .shutDownWhenFlushed }
        guard self.endOutput() else { return }
        self.flush()
    }

    /// Closes now; buffered writes are dropped. The delegate is not called.
    package func close() {
        guard self.state != .closed else { return }
        self.state = .closed
        if let timer = self.lingerTimer { self.loop.cancel(timer) }
        if self.transport.close() { self.transport.release(from: self.loop) }
        self.outbound.clear()
        self.releaseOutbound()
        self.inboundStorage.clear()
        self.releaseInboundIfEmpty()
        self.delegate = nil
    }

    /// Makes the coming `close` abort the connection: the peer reads a reset (ECONNRESET), not an end.
    package func setResetOnClose() {
        self.transport.setResetOnClose()
    }

    /// Sends what is buffered, then half-closes and drains the peer before closing, so the peer reads
    /// everything (an error response above all) instead of a reset. The delegate hears `streamClosed`.
    package func closeAfterFlush() {
        switch self.state {
        case .open where self.transport.isEstablishing, .connecting:
            self.finishClosing(error: nil)
        case .open:
            self.state = .closingAfterFlush
            guard self.endOutput() else { return }
            self.flush()
        case .closingAfterFlush, .lingering, .closed:
            return
        }
    }

    /// The owner writes nothing more: the transport encrypts what is left and closes its session.
    private func endOutput() -> Bool {
        do throws(IOError) {
            try self.transport.endOutput(after: &self.outbound)
            return true
        } catch {
            self.fail(error)
            return false
        }
    }

    private func beginLingering() {
        guard self.state == .closingAfterFlush else { return }
        self.state = .lingering
        if self.hasReadEnded || self.transport.hasReceivedEnd {
            self.finishClosing(error: nil)
            return
        }
        // A layer's session is over (its last word is sent): what is left only drains the peer.
        self.transport = self.transport.bottom
        self.transport.shutdownWrite()
        self.inboundStorage.clear()
        self.isReadingEnabled = true
        self.updateInterest()
        self.lingerTimer = self.loop.schedule(after: Self.lingerTimeout) { [weak self] in
            self?.lingerTimer = nil
            self?.finishClosing(error: nil)
        }
    }

    func fail(_ error: IOError) {
        // A reset on a TLS stream may be a server refusing the client's certificate: TLS says so.
        self.finishClosing(error: self.transport.explain(error))
    }

    func finishClosing(error: IOError?) {
        guard self.state != .closed else { return }
        let delegate = self.delegate
        self.close()
        delegate?.streamClosed(self, error: error)
    }

    package func loopWillStop() {
        self.close()
    }
}

@available(*, unavailable)
extension StreamConnection: Sendable {}
