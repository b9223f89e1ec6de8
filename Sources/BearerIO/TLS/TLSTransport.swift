import BearerCore
import Glibc

/// TLS as a transport stacked on another (readiness, ring or memory), in either role, from the
/// first byte (an upstream; a server that speaks TLS at once) or from the middle of a stream (an
/// intercepted CONNECT: `StreamConnection.startTLS`).
///
/// The layer has buffers of its own, the session's: `received`, the peer's ciphertext that
/// OpenSSL has not read, and `produced`, what OpenSSL wrote for the transport below to send; the
/// session's BIO reads and writes them in place. Above it, the connection sees what it sees over
/// a socket — the owner's bytes in `inbound`, its writes taken from `outbound` — and two facts a
/// socket never has: a handshake to finish (`isEstablishing`, until a receive returns
/// `.established`), and bytes held that no readiness event will announce (`hasBufferedInput`:
/// the connection comes back for them at the end of the loop turn). So the connection core holds
/// no TLS code, as swift-nio's channel core holds none of `NIOSSLHandler`, which sits in the
/// pipeline between the socket's bytes and the handlers.
///
/// Writing never waits (the BIO takes everything; the owner's watermarks bound it), so the only
/// thing the session ever waits for is more of the peer's bytes. Confined to its loop.
final class TLSTransport {
    let session: TLSConnection
    /// What carries the ciphertext.
    @exclusivity(unchecked) var lower: StreamTransport
    /// Strong, as `StreamConnection.loop` is (why there): used, it costs no reference counting.
    let loop: EventLoop
    /// The peer's close_notify came in the same pass as data: the end is reported on the next pass,
    /// after the owner read the data.
    @exclusivity(unchecked) private var hasPendingEnd = false

    init(session: TLSConnection, over lower: StreamTransport, loop: EventLoop) {
        self.session = session
        self.lower = lower
        self.loop = loop
    }

    /// The stream's bytes so far become the layer's, when TLS starts in the middle of a stream:
    /// what the owner wrote and was not sent goes out first, in clear, as the start of the layer's
    /// output; what arrived and the owner did not read is the start of its input (a ClientHello
    /// right behind a CONNECT head).
    func takeOver(unsent: inout ByteBuffer, unread: inout ByteBuffer) {
        swap(&self.session.produced, &unsent)
        swap(&self.session.received, &unread)
    }

    var isEstablishing: Bool { self.session.state == .handshaking }

    /// The peer's bytes wait in `received` or inside OpenSSL, or its end waits to be reported.
    var hasBufferedInput: Bool {
        self.session.hasBufferedInput || self.session.hasReceivedEnd || self.hasPendingEnd
    }

    // MARK: Receiving

    /// Reads what the transport below has into `received`, then decrypts (or handshakes) it.
    func receive(into inbound: inout ByteBuffer, isReading: Bool) throws(IOError) -> ReceiveOutcome {
        self.loop.lendBuffer(to: &self.session.received)
        let outcome: ReceiveOutcome
        do throws(IOError) {
            outcome = try self.lower.receive(into: &self.session.received, isReading: true)
        } catch {
            return try self.receiveFailed(error, into: &inbound, isReading: isReading)
        }
        switch outcome {
        case .bytes:
            return try self.process(into: &inbound, isReading: isReading)
        case .nothing:
            self.releaseIdleBuffers()
            return .nothing
        case .end:
            return try self.receivedEnd(into: &inbound, isReading: isReading)
        case .established:
            preconditionFailure("a transport below TLS has no handshake of its own")
        }
    }

    /// Takes ciphertext the ring delivered.
    func received(
        _ bytes: UnsafeRawBufferPointer,
        into inbound: inout ByteBuffer,
        isReading: Bool
    ) throws(IOError) -> ReceiveOutcome {
        self.loop.lendBuffer(to: &self.session.received)
        self.session.received.writeBytes(bytes)
        return try self.process(into: &inbound, isReading: isReading)
    }

    /// The transport below met the peer's end: once `received` is read, the BIO reports it.
    func receivedEnd(into inbound: inout ByteBuffer, isReading: Bool) throws(IOError) -> ReceiveOutcome {
        self.session.hasReceivedEnd = true
        return try self.process(into: &inbound, isReading: isReading)
    }

    /// A reader that meets a reset sees the end of the stream (HTTP framing tells whether the
    /// message was complete), unless the server asked for a client certificate and has not
    /// answered yet: then the reset is its refusal, which `TLSConnection.explain` words.
    func receiveFailed(
        _ error: IOError,
        into inbound: inout ByteBuffer,
        isReading: Bool
    ) throws(IOError) -> ReceiveOutcome {
        guard error.errnoCode == ECONNRESET, self.session.clientCertificateFailure(alert: nil) == nil else {
            throw error
        }
        return try self.receivedEnd(into: &inbound, isReading: isReading)
    }

    /// Advances the handshake over what `received` holds, or, once established and while the owner
    /// reads, decrypts it into `inbound`.
    func process(into inbound: inout ByteBuffer, isReading: Bool) throws(IOError) -> ReceiveOutcome {
        defer { self.releaseIdleBuffers() }
        if self.session.state == .handshaking { return try self.handshake() }
        return isReading ? try self.decrypt(into: &inbound) : .nothing
    }

    private func handshake() throws(IOError) -> ReceiveOutcome {
        self.prepareOutput()
        switch self.session.handshake() {
        case .done: return .established
        case .needsMoreBytes: return .nothing
        // The alert OpenSSL wrote goes out with the close that follows (`close`).
        case .failed(let failure): throw .tls(failure)
        }
    }

    /// Decrypts up to `StreamConnection.readSize` a pass; what is left waits for the next pass.
    private func decrypt(into inbound: inout ByteBuffer) throws(IOError) -> ReceiveOutcome {
        if self.hasPendingEnd { return .end }
        var total = 0
        var outcome: TLSConnection.Outcome = .needsMoreBytes
        // The plaintext goes into one of the loop's buffers (an empty inbound would grow one of its own).
        self.loop.lendBuffer(to: &inbound)
        while total < StreamConnection.readSize {
            outcome = .needsMoreBytes
            // Sound: OpenSSL writes at most `room.count` bytes into the tail, which is valid during the
            // closure; the buffer counts as written only what it reports.
            _ = inbound.writeWithUnsafeMutableBytes(minimumWritable: 16 * 1024) { tail -> Int in
                let room = UnsafeMutableRawBufferPointer(rebasing: tail[0..<min(tail.count, StreamConnection.readSize)])
                outcome = self.session.read(into: room)
                if case .done(let count) = outcome { return count }
                return 0
            }
            guard case .done(let count) = outcome else { break }
            total += count
            // Nothing left to decrypt: asking OpenSSL again would only hear "want read".
            if !self.session.hasBufferedInput && !self.session.hasReceivedEnd { break }
        }
        if case .failed(let failure) = outcome { throw .tls(failure) }
        guard total > 0 else { return outcome == .ended ? .end : .nothing }
        // Data and then the end in one go: the owner reads the data first.
        if outcome == .ended { self.hasPendingEnd = true }
        return .bytes
    }

    // MARK: Sending

    /// Encrypts the owner's bytes once the handshake is done (until then they wait in `outbound`),
    /// and sends them after the session's own.
    func send(_ outbound: inout ByteBuffer, sent: inout Int) throws(IOError) -> Bool {
        if self.session.isEstablished && !outbound.isEmpty { try self.encrypt(&outbound) }
        return try self.sendOwnOutput(sent: &sent)
    }

    /// Sends what the session wrote (handshake flights, alerts, records) through the transport below.
    func sendOwnOutput(sent: inout Int) throws(IOError) -> Bool {
        let isDrained = try self.lower.send(&self.session.produced, sent: &sent)
        self.releaseIdleBuffers()
        return isDrained
    }

    /// Encrypts what the owner wrote, then closes the session's output with a close_notify; the
    /// peer's data is still read.
    func endOutput(after outbound: inout ByteBuffer) throws(IOError) {
        guard self.session.isEstablished else { return }
        if !outbound.isEmpty { try self.encrypt(&outbound) }
        self.prepareOutput()
        self.session.shutdown()
    }

    private func encrypt(_ outbound: inout ByteBuffer) throws(IOError) {
        self.prepareOutput()
        let outcome = outbound.withUnsafeReadableBytes { self.session.write($0) }
        outbound.clear()
        self.loop.returnBuffer(from: &outbound)
        if case .failed(let failure) = outcome { throw .tls(failure) }
    }

    /// What OpenSSL writes goes into one of the loop's buffers: appended to an empty `produced`, the
    /// BIO would allocate a small buffer of its own for every record (and the ring's send would free it).
    private func prepareOutput() {
        self.loop.lendBuffer(to: &self.session.produced)
    }

    /// The session's output waiting, and what the transport below holds or has in flight.
    var pendingBytes: Int {
        @inline(__always) get { self.session.produced.readableBytes + self.lower.bottomPendingBytes }
    }

    // MARK: The transport below

    // What is not the layer's business goes to the transport below. Methods of their own rather than
    // `lower` at the call: `StreamTransport`'s inlined members must not call themselves, which
    // would keep them from being inlined into the data path.
    func belowRegister(_ handler: StreamConnection, interest: Interest, on loop: EventLoop) {
        self.lower.register(handler, interest: interest, on: loop)
    }
    func belowSetInterest(_ interest: Interest, on loop: EventLoop) { self.lower.setInterest(interest, on: loop) }
    var belowReadsOnReadiness: Bool { self.lower.readsOnReadiness }
    func belowSetReceiving(_ wanted: Bool) { self.lower.setReceiving(wanted) }
    var belowRing: RingTransport? { self.lower.ring }
    var belowSocketDescriptor: Int32? { self.lower.socketDescriptor }
    func belowPendingError() -> Int32 { self.lower.pendingError() }
    var belowWaitsForWritable: Bool { self.lower.waitsForWritable }
    func belowSendIfPossible(_ bytes: ByteBuffer) { self.lower.sendIfPossible(bytes) }
    func belowShutdownWrite() { self.lower.shutdownWrite() }
    func belowSetResetOnClose() { self.lower.setResetOnClose() }
    func belowRelease(from loop: EventLoop) { self.lower.release(from: loop) }

    // MARK: Closing

    /// Closes the session: a last close_notify, if the transport below takes it at once (never
    /// waited for; after a failed handshake, the alert). Returns the transport below, to close.
    func close() -> StreamTransport {
        self.prepareOutput()
        self.session.shutdown()
        self.lower.sendIfPossible(self.session.produced)
        return self.detach()
    }

    /// Leaves the stream to the transport below, giving the session's buffers back: the session is
    /// over (its close_notify sent and flushed), and what follows only drains the peer.
    func detach() -> StreamTransport {
        self.session.received.clear()
        self.session.produced.clear()
        self.releaseIdleBuffers()
        return self.lower
    }

    /// Buffers hold bytes only while there are some: an idle session holds none of the loop's.
    private func releaseIdleBuffers() {
        if self.session.received.isEmpty && self.session.received.capacity > 0 {
            self.loop.returnBuffer(from: &self.session.received)
        }
        if self.session.produced.isEmpty && self.session.produced.capacity > 0 {
            self.loop.returnBuffer(from: &self.session.produced)
        }
    }
}

@available(*, unavailable)
extension TLSTransport: Sendable {}
