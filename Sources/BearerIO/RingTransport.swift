import BearerCore
import CBearerLinux
import Glibc

/// io_uring's transport: the loop's multishot receive delivers the peer's bytes (the connection is
/// the ring receiver), and sends go through the ring, one at a time per socket, with the bytes kept
/// untouched until the kernel has read them. The loop submits every send of a turn with one
/// `io_uring_enter`. Epoll still says when a socket whose send met a full buffer is writable again.
/// Confined to its loop.
final class RingTransport {
    let fd: Int32
    /// Strong, as `StreamConnection.loop` is (why there): used, it costs no reference counting.
    let loop: EventLoop
    /// The bytes of the send the ring is carrying: untouched until it completes (the kernel reads
    /// them), then given back. Empty when no send is in flight.
    @exclusivity(unchecked) private var sendBuffer = ByteBuffer()
    @exclusivity(unchecked) private var sending: Sending = .idle
    /// Set by a flush that left `writableNotificationBytes` or more pending.
    @exclusivity(unchecked) private var wakesOwnerWhenDrained = false

    /// Owners pause reading while `pendingWriteBytes` is far above this, after a `flush()`. A flush
    /// that leaves at least this much pending marks the stream so that the send completion that
    /// brings it below wakes the owner (`streamWritable`), however the kernel split the sends.
    static let writableNotificationBytes = 64 * 1024

    /// Where `sendBuffer` is.
    private enum Sending {
        case idle
        /// The ring is carrying it: one send at a time per socket.
        case inFlight
        /// The last send stopped on a full socket buffer: it goes again once the socket is writable.
        case waitsForWritable
    }

    init(fd: Int32, loop: EventLoop) {
        self.fd = fd
        self.loop = loop
    }

    var waitsForWritable: Bool { self.sending == .waitsForWritable }
    /// Bytes handed to the kernel that it may still be reading.
    var bytesInFlight: Int { self.sendBuffer.readableBytes }

    /// Hands what is buffered to the ring as one send, unless one is in flight (its completion sends
    /// the rest); returns how many bytes went to the ring.
    func send(_ bytes: inout ByteBuffer) -> Int {
        guard self.sending == .idle, !bytes.isEmpty else { return 0 }
        swap(&self.sendBuffer, &bytes)
        self.submit()
        return self.sendBuffer.readableBytes
    }

    /// Nothing is in flight or waiting: everything handed over is sent.
    var isIdle: Bool { self.sending == .idle }

    private func submit() {
        self.sending = .inFlight
        self.sendBuffer.withUnsafeReadableBytes { self.loop.startSending(self.fd, $0) }
    }

    /// The ring finished a send: `result` bytes went, or a negative errno.
    func sendCompleted(_ result: Int32) throws(IOError) -> SendCompletion {
        self.sending = .idle
        if result < 0 {
            guard result == -EAGAIN else { throw IOError(errnoCode: -result, function: "send") }
            // The socket's buffer is full: send the rest once epoll says it is writable.
            self.sending = .waitsForWritable
            return .waitsForWritable
        }
        self.sendBuffer.moveReaderIndex(forwardBy: Int(result))
        if !self.sendBuffer.isEmpty {
            self.submit()
            return .resent
        }
        self.releaseBuffers()
        return .drained
    }

    /// A send completed after the connection closed.
    func sendEnded() {
        self.sending = .idle
    }

    /// Epoll says the socket is writable again: the send that met a full buffer goes again.
    func socketWritable() {
        guard self.sending == .waitsForWritable else { return }
        self.submit()
    }

    /// One non-blocking send(2) when no ring send is in flight; what the kernel does not take is dropped.
    func sendIfPossible(_ bytes: ByteBuffer) {
        guard self.sending == .idle, !bytes.isEmpty else { return }
        _ = bytes.withUnsafeReadableBytes { raw in
            try? SystemCall.nonBlocking("send") { Glibc.send(self.fd, raw.baseAddress, raw.count, CBL_MSG_NOSIGNAL) }
        }
    }

    /// A flush left `pendingWriteBytes` to send.
    func flushLeft(pendingWriteBytes: Int) {
        if pendingWriteBytes >= Self.writableNotificationBytes { self.wakesOwnerWhenDrained = true }
    }

    /// Whether this completion brought what is pending below the mark a flush left above it, so the
    /// owner, which paused the other side, hears `streamWritable`.
    func shouldWakeOwner(pendingWriteBytes: Int) -> Bool {
        guard self.wakesOwnerWhenDrained && pendingWriteBytes < Self.writableNotificationBytes else { return false }
        self.wakesOwnerWhenDrained = false
        return true
    }

    /// Arms or cancels the loop's receive for this socket.
    func setReceiving(_ wanted: Bool) {
        if wanted { self.loop.startReceiving(self.fd) } else { self.loop.stopReceiving(self.fd) }
    }

    /// Whether the descriptor can be released now (no send in flight).
    func close() -> Bool {
        guard self.sending == .inFlight else { return true }
        // The kernel still reads the send's bytes: the socket closes when the send has ended.
        self.loop.stopReceiving(self.fd)
        self.loop.cancelSending(self.fd)
        return false
    }

    /// Gives the send buffer back to the loop.
    func releaseBuffers() {
        if self.sendBuffer.capacity > 0 {
            self.loop.returnBuffer(from: &self.sendBuffer)
        }
    }
}

@available(*, unavailable)
extension RingTransport: Sendable {}
