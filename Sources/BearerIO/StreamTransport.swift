import BearerCore

/// How a stream connection's bytes travel: over a socket (`ReadinessTransport`: epoll says when,
/// read(2) and send(2) move the bytes; `RingTransport`: io_uring receives and sends), over an
/// in-memory pipe to another stream of this process (`MemoryTransport`), or through a layer stacked
/// on one of those (`TLSTransport`, which has buffers of its own and looks like any other transport
/// from above). The connection owns the owner's buffers and the lifecycle; each case here is one file.
///
/// An enum rather than a protocol existential: the connection switches once per operation and
/// every call is direct, which keeps the plain data path as cheap as when one class did it all
/// (a witness call per `pendingWriteBytes` cost about 100 instructions a request). Every system
/// call of a transport goes through `SystemCall`. Confined to the connection's loop.
enum StreamTransport {
    case readiness(ReadinessTransport)
    case ring(RingTransport)
    case memory(MemoryTransport)
    case tls(TLSTransport)

    // MARK: Registration

    /// Lets the loop tell `handler` about this transport's events.
    func register(_ handler: StreamConnection, interest: Interest, on loop: EventLoop) {
        switch self {
        case .readiness(let readiness): loop.register(readiness.fd, handler, interest: interest)
        case .ring(let ring): loop.register(ring.fd, handler, interest: interest)
        case .memory(let memory): memory.register(handler, interest: interest)
        case .tls(let tls): tls.belowRegister(handler, interest: interest, on: loop)
        }
    }

    @inline(__always)
    func setInterest(_ interest: Interest, on loop: EventLoop) {
        switch self {
        case .readiness(let readiness): loop.setInterest(readiness.fd, interest)
        case .ring(let ring): loop.setInterest(ring.fd, interest)
        case .memory(let memory): memory.setInterest(interest)
        case .tls(let tls): tls.belowSetInterest(interest, on: loop)
        }
    }

    /// Whether the loop's readable events are how this transport reads (else the ring delivers bytes).
    var readsOnReadiness: Bool {
        @inline(__always) get {
            switch self {
            case .readiness, .memory: true
            case .ring: false
            case .tls(let tls): tls.belowReadsOnReadiness
            }
        }
    }

    /// Whether the connection wants the peer's bytes now: the ring arms or cancels its receive
    /// (readiness follows from the interest).
    @inline(__always)
    func setReceiving(_ wanted: Bool) {
        switch self {
        case .readiness, .memory: return
        case .ring(let ring): ring.setReceiving(wanted)
        case .tls(let tls): tls.belowSetReceiving(wanted)
        }
    }

    /// The ring under this transport, whose completions the connection hears, if there is one.
    var ring: RingTransport? {
        @inline(__always) get {
            switch self {
            case .readiness, .memory: nil
            case .ring(let ring): ring
            case .tls(let tls): tls.belowRing
            }
        }
    }

    /// The socket under this transport (nil: an in-memory pipe), to ask who the peer is.
    var socketDescriptor: Int32? {
        switch self {
        case .readiness(let readiness): readiness.fd
        case .ring(let ring): ring.fd
        case .memory: nil
        case .tls(let tls): tls.belowSocketDescriptor
        }
    }

    /// The socket's pending error (0: none), read when a connect finished or the peer hung up.
    func pendingError() -> Int32 {
        switch self {
        case .readiness(let readiness): Socket.pendingError(readiness.fd)
        case .ring(let ring): Socket.pendingError(ring.fd)
        case .memory(let memory): memory.pendingError()
        case .tls(let tls): tls.belowPendingError()
        }
    }

    // MARK: Establishing

    /// The transport has a handshake of its own to finish before the owner's bytes flow (TLS).
    var isEstablishing: Bool {
        @inline(__always) get {
            if case .tls(let tls) = self { return tls.isEstablishing }
            return false
        }
    }

    /// Starts or advances that handshake, once the bytes below flow (after a connect, or at once).
    mutating func establish(into inbound: inout ByteBuffer) throws(IOError) -> ReceiveOutcome {
        if case .tls(let tls) = self { return try tls.process(into: &inbound, isReading: false) }
        return .established
    }

    // MARK: Receiving

    /// Reads what the peer sent (a readable event's read) into `inbound`, the owner's buffer.
    /// `isReading`: the owner wants bytes now (a layer's handshake may read when it does not).
    @inline(__always)
    mutating func receive(into inbound: inout ByteBuffer, isReading: Bool) throws(IOError) -> ReceiveOutcome {
        switch self {
        case .readiness(let readiness):
            return try readiness.read(into: &inbound).outcome
        case .memory(let memory):
            return try memory.read(into: &inbound).outcome
        case .ring:
            preconditionFailure("the ring delivers its bytes (received(_:into:isReading:))")
        case .tls(let tls):
            return try tls.receive(into: &inbound, isReading: isReading)
        }
    }

    /// Takes bytes the ring delivered (valid only during the call).
    @inline(__always)
    mutating func received(
        _ bytes: UnsafeRawBufferPointer,
        into inbound: inout ByteBuffer,
        isReading: Bool
    ) throws(IOError) -> ReceiveOutcome {
        switch self {
        case .ring:
            inbound.writeBytes(bytes)
            return .bytes
        case .tls(let tls):
            return try tls.received(bytes, into: &inbound, isReading: isReading)
        case .readiness, .memory:
            preconditionFailure("only the ring delivers bytes")
        }
    }

    /// The bottom transport met the peer's end (a ring receive that ended with 0).
    mutating func receivedEnd(into inbound: inout ByteBuffer, isReading: Bool) throws(IOError) -> ReceiveOutcome {
        if case .tls(let tls) = self { return try tls.receivedEnd(into: &inbound, isReading: isReading) }
        return .end
    }

    /// The bottom transport's receive failed (a ring receive that ended with an error): a layer may
    /// read it as the end; else it is the stream's failure.
    mutating func receiveFailed(
        _ error: IOError,
        into inbound: inout ByteBuffer,
        isReading: Bool
    ) throws(IOError) -> ReceiveOutcome {
        if case .tls(let tls) = self { return try tls.receiveFailed(error, into: &inbound, isReading: isReading) }
        throw error
    }

    /// The transport holds bytes of the peer (or its end) that no event will announce: the
    /// connection reads them with `receiveBuffered` at the end of the loop turn.
    var hasBufferedInput: Bool {
        @inline(__always) get {
            if case .tls(let tls) = self { return tls.hasBufferedInput }
            return false
        }
    }

    mutating func receiveBuffered(into inbound: inout ByteBuffer) throws(IOError) -> ReceiveOutcome {
        if case .tls(let tls) = self { return try tls.process(into: &inbound, isReading: true) }
        return .nothing
    }

    /// The peer's end reached the transport but not yet the owner: nothing more to receive below.
    var hasReceivedEnd: Bool {
        @inline(__always) get {
            if case .tls(let tls) = self { return tls.session.hasReceivedEnd }
            return false
        }
    }

    // MARK: Sending

    /// Sends `outbound` (the owner's bytes), as far as it can now, with the transport's own bytes
    /// before them; adds what the bottom accepted to `sent`. Returns whether nothing of the
    /// transport's is left to send or in flight (the owner's bytes may still wait: a handshake).
    @inline(__always)
    mutating func send(_ outbound: inout ByteBuffer, sent: inout Int) throws(IOError) -> Bool {
        switch self {
        case .readiness(var readiness):
            sent += try readiness.send(&outbound)
            self = .readiness(readiness)
            return !readiness.waitsForWritable
        case .ring(let ring):
            // Counted when handed over, not when confirmed: a request whose send was in flight when its
            // connection failed may have reached the peer (so it is not "sent nothing").
            sent += ring.send(&outbound)
            return ring.isIdle
        case .memory(let memory):
            sent += try memory.send(&outbound)
            return !memory.waitsForWritable
        case .tls(let tls):
            return try tls.send(&outbound, sent: &sent)
        }
    }

    /// Bytes of the transport's own (a handshake's flight, a key update's answer) wait to be sent.
    var hasOwnOutput: Bool {
        @inline(__always) get {
            if case .tls(let tls) = self { return !tls.session.produced.isEmpty }
            return false
        }
    }

    /// Sends the transport's own bytes only; the owner's wait for `flush`.
    mutating func sendOwnOutput(sent: inout Int) throws(IOError) -> Bool {
        if case .tls(let tls) = self { return try tls.sendOwnOutput(sent: &sent) }
        return true
    }

    /// The transport cannot send more until the loop reports it writable.
    var waitsForWritable: Bool {
        @inline(__always) get {
            switch self {
            case .readiness(let readiness): readiness.waitsForWritable
            case .ring(let ring): ring.waitsForWritable
            case .memory(let memory): memory.waitsForWritable
            case .tls(let tls): tls.belowWaitsForWritable
            }
        }
    }

    /// Bytes the transport holds or has in flight, beyond the owner's. Read many times a request:
    /// inlined all the way down, with no call left in it, it needs no registers saved.
    var pendingBytes: Int {
        @inline(__always) get {
            if case .tls(let tls) = self { return tls.pendingBytes }
            return self.bottomPendingBytes
        }
    }

    /// `pendingBytes` of a transport at the bottom: a layer stacks on one of these, never on another
    /// layer (`startTLS` checks), so reading it never comes back here.
    var bottomPendingBytes: Int {
        @inline(__always) get {
            switch self {
            case .readiness, .memory: 0
            case .ring(let ring): ring.bytesInFlight
            case .tls: preconditionFailure("A layer stacks on a bottom transport")
            }
        }
    }

    /// The owner will write nothing more: `outbound` is the last of it (TLS encrypts it and
    /// closes its session's output with a close_notify; a socket has nothing to add).
    mutating func endOutput(after outbound: inout ByteBuffer) throws(IOError) {
        if case .tls(let tls) = self { try tls.endOutput(after: &outbound) }
    }

    /// One last attempt to send `bytes` (a TLS alert or close_notify before a close), without
    /// waiting: whatever the bottom does not take at once is dropped.
    func sendIfPossible(_ bytes: ByteBuffer) {
        switch self {
        case .readiness(let readiness): readiness.sendIfPossible(bytes)
        case .ring(let ring): ring.sendIfPossible(bytes)
        case .memory(let memory): memory.sendIfPossible(bytes)
        case .tls(let tls): tls.belowSendIfPossible(bytes)
        }
    }

    /// Half-closes: the peer reads the end after everything sent.
    func shutdownWrite() {
        switch self {
        case .readiness(let readiness): Socket.shutdownWrite(readiness.fd)
        case .ring(let ring): Socket.shutdownWrite(ring.fd)
        case .memory(let memory): memory.shutdownWrite()
        case .tls(let tls): tls.belowShutdownWrite()
        }
    }

    // MARK: Closing

    /// The session above the bytes is over (TLS: close_notify sent, everything flushed): what is
    /// left is the bottom transport, which drains the peer before closing (a lingering close).
    var bottom: StreamTransport {
        if case .tls(let tls) = self { return tls.detach() }
        return self
    }

    /// `error` in the words of the layer it ended (a reset that was a server refusing the client
    /// certificate, with TLS).
    func explain(_ error: IOError) -> IOError {
        if case .tls(let tls) = self { return tls.session.explain(error) }
        return error
    }

    /// The connection closed: true when the descriptor can be released now, false when the kernel
    /// still reads a send (the connection releases it when that send completes). A layer says its
    /// last word if it can (TLS: close_notify) and is dropped: what is left is the bottom.
    mutating func close() -> Bool {
        switch self {
        case .readiness, .memory:
            return true
        case .ring(let ring):
            return ring.close()
        case .tls(let tls):
            self = tls.close()
            return self.close()
        }
    }

    /// Makes the coming close a reset instead of an orderly end: the peer's next read fails with
    /// ECONNRESET.
    func setResetOnClose() {
        switch self {
        case .readiness(let readiness): Socket.setResetOnClose(readiness.fd)
        case .ring(let ring): Socket.setResetOnClose(ring.fd)
        case .memory(let memory): memory.setResetOnClose()
        case .tls(let tls): tls.belowSetResetOnClose()
        }
    }

    /// Gives everything back: the loop's registration, the descriptor, the buffers.
    func release(from loop: EventLoop) {
        switch self {
        case .readiness(let readiness):
            loop.deregister(readiness.fd)
            Socket.close(readiness.fd)
        case .ring(let ring):
            loop.deregister(ring.fd)
            Socket.close(ring.fd)
            ring.releaseBuffers()
        case .memory(let memory):
            memory.close()
        case .tls(let tls):
            tls.belowRelease(from: loop)
        }
    }
}
