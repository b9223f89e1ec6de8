import BearerCore
import BearerHTTP2
import BearerIO
import Glibc

/// One HTTP/2 connection read and written with blocking calls on a thread of its own: what the
/// `grpc` scenario's mock upstream and load generator share. The project's own frame parser and
/// serializer; the connection machine (server or client) is the owner's.
final class BlockingH2Socket {
    let fd: Int32
    var parser: HTTP2FrameParser
    private var inbound = ByteBuffer(capacity: 64 * 1024)
    var outbound = ByteBuffer(capacity: 64 * 1024)
    /// The peer's SETTINGS_MAX_FRAME_SIZE as the machine knows it.
    var maxFrameSize = HTTP2.defaultMaxFrameSize

    /// `fd`: a connected socket, made blocking here.
    init(fd: Int32, parser: HTTP2FrameParser) {
        self.fd = fd
        self.parser = parser
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // A peer that stops answering ends the connection rather than the bench.
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(self.fd) }

    func write(_ frames: [HTTP2Frame]) {
        for frame in frames { HTTP2FrameSerializer.write(frame, maxFrameSize: self.maxFrameSize, into: &self.outbound) }
    }

    func writeData(streamID: UInt32, endStream: Bool, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes {
            HTTP2FrameSerializer.writeData(streamID: streamID, endStream: endStream, $0, into: &self.outbound)
        }
    }

    /// Writes what was queued, whole; false when the peer is gone.
    func flush() -> Bool {
        defer { self.outbound.clear() }
        return self.outbound.withUnsafeReadableBytes { bytes in
            var sent = 0
            while sent < bytes.count {
                let count = Glibc.send(self.fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                sent += count
            }
            return true
        }
    }

    /// Reads once (blocking) and hands each whole frame's event to `handle` (a DATA frame's
    /// bytes are not looked at: its payload's size is the event's); false when the peer closed or
    /// broke the framing.
    func readEvents(_ handle: (HTTP2FrameParserEvent) -> Void) -> Bool {
        self.inbound.discardReadBytes()
        var received = 0
        _ = self.inbound.writeWithUnsafeMutableBytes(minimumWritable: 64 * 1024) { buffer in
            received = Glibc.recv(self.fd, buffer.baseAddress, buffer.count, 0)
            return max(received, 0)
        }
        guard received > 0 else { return false }
        while true {
            let event: HTTP2FrameParserEvent
            do {
                event = try self.inbound.parseNext { bytes throws(HTTP2ConnectionError) in try self.parser.next(bytes) }
            } catch {
                return false
            }
            if case .needMore = event.kind { return true }
            handle(event)
        }
    }
}
