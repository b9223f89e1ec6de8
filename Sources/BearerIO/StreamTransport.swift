import BearerCore

/// How a stream connection's bytes cross into the kernel: `ReadinessTransport` (epoll says when,
/// read(2) and send(2) move the bytes) or `RingTransport` (io_uring receives and sends). The loop
/// decides which; the connection above owns the buffers and the lifecycle, and TLS, when there is
/// some, sits between the two and looks the same over either.
///
/// An enum rather than a protocol existential: the connection switches once per operation and
/// every call is direct, which keeps the plain data path as cheap as when one class did it all
/// (a witness call per `pendingWriteBytes` cost about 100 instructions a request). Every system
/// call of a transport goes through `SystemCall`. Confined to the connection's loop.
enum StreamTransport {
    case readiness(ReadinessTransport)
    case ring(RingTransport)

    /// The transport cannot send more until epoll reports the socket writable.
    var waitsForWritable: Bool {
        switch self {
        case .readiness(let readiness): readiness.waitsForWritable
        case .ring(let ring): ring.waitsForWritable
        }
    }

    /// Whether epoll's readable events are how this transport reads (else the ring delivers bytes).
    var readsOnReadiness: Bool {
        if case .readiness = self { return true }
        return false
    }

    /// One last non-blocking attempt to send `bytes` (a TLS alert or close_notify before a close);
    /// whatever the kernel does not take at once is dropped.
    func sendIfPossible(_ bytes: ByteBuffer) {
        switch self {
        case .readiness(let readiness): readiness.sendIfPossible(bytes)
        case .ring(let ring): ring.sendIfPossible(bytes)
        }
    }

    /// Whether the connection wants the peer's bytes now: the ring arms or cancels its receive
    /// (readiness follows from the epoll interest).
    func setReceiving(_ wanted: Bool) {
        if case .ring(let ring) = self { ring.setReceiving(wanted) }
    }

    /// The connection closed: true when the descriptor can be released now, false when the kernel
    /// still reads a send (the connection releases it when that send completes).
    func close() -> Bool {
        switch self {
        case .readiness: true
        case .ring(let ring): ring.close()
        }
    }

    /// The descriptor is released: give back any buffer the transport holds.
    func releaseBuffers() {
        if case .ring(let ring) = self { ring.releaseBuffers() }
    }
}

/// What a read did.
enum ReadProgress: Equatable {
    case bytes(Int)
    /// The peer's end of the stream.
    case end
    case wouldBlock
}

/// What a ring send's completion means for the connection.
enum SendCompletion: Equatable {
    /// Part of the buffer went; the rest is on its way.
    case resent
    case waitsForWritable
    /// All of it went: the connection may hand over what it buffered meanwhile.
    case drained
}
