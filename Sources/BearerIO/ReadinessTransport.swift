import BearerCore
import CBearerLinux
import Glibc

/// Epoll's transport: the socket is read when it is readable and written at once, as far as the
/// kernel takes it; what it does not take waits for writability.
///
/// A value (the descriptor and one fact), kept in the connection's `StreamTransport`: nothing the
/// kernel holds points into it, and a value costs the data path no reference counting.
struct ReadinessTransport {
    let fd: Int32
    private(set) var waitsForWritable = false

    init(fd: Int32) {
        self.fd = fd
    }

    /// Reads what the socket has into `buffer`, at most `StreamConnection.readSize`.
    @inline(__always)
    func read(into buffer: inout ByteBuffer) throws(IOError) -> ReadProgress {
        let fd = self.fd
        var outcome: SystemCall.Outcome = .wouldBlock
        var failure: IOError?
        _ = buffer.writeWithUnsafeMutableBytes(minimumWritable: 16 * 1024) { tail -> Int in
            do throws(IOError) {
                outcome = try SystemCall.nonBlocking("read") {
                    Glibc.read(fd, tail.baseAddress, min(tail.count, StreamConnection.readSize))
                }
            } catch {
                failure = error
                return 0
            }
            if case .completed(let count) = outcome { return count }
            return 0
        }
        if let failure { throw failure }
        switch outcome {
        case .wouldBlock: return .wouldBlock
        case .completed(0): return .end
        case .completed(let count): return .bytes(count)
        }
    }

    /// Sends `bytes` straight from the caller's memory, as far as the kernel takes them now.
    @inline(__always)
    mutating func send(_ bytes: UnsafeRawBufferPointer) throws(IOError) -> Int {
        let fd = self.fd
        var offset = 0
        while offset < bytes.count {
            let remaining = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let outcome = try SystemCall.nonBlocking("send") {
                Glibc.send(fd, remaining.baseAddress, remaining.count, CBL_MSG_NOSIGNAL)
            }
            guard case .completed(let count) = outcome else {
                self.waitsForWritable = true
                return offset
            }
            offset += count
        }
        self.waitsForWritable = false
        return offset
    }

    /// Sends what `bytes` holds as far as the kernel takes it; the rest stays, and waits for writability.
    @inline(__always)
    mutating func send(_ bytes: inout ByteBuffer) throws(IOError) -> Int {
        let fd = self.fd
        var total = 0
        while !bytes.isEmpty {
            let outcome = try bytes.withUnsafeReadableBytes { raw throws(IOError) in
                try SystemCall.nonBlocking("send") { Glibc.send(fd, raw.baseAddress, raw.count, CBL_MSG_NOSIGNAL) }
            }
            guard case .completed(let count) = outcome else {
                self.waitsForWritable = true
                return total
            }
            bytes.moveReaderIndex(forwardBy: count)
            total += count
        }
        self.waitsForWritable = false
        return total
    }

    /// One non-blocking send; what the kernel does not take is dropped.
    func sendIfPossible(_ bytes: ByteBuffer) {
        guard !bytes.isEmpty else { return }
        let fd = self.fd
        _ = bytes.withUnsafeReadableBytes { raw in
            try? SystemCall.nonBlocking("send") { Glibc.send(fd, raw.baseAddress, raw.count, CBL_MSG_NOSIGNAL) }
        }
    }
}
