import Glibc

/// Reading and writing whole contents on a thread that may wait: a file, a pipe, the log's descriptor.
extension SystemCall {
    /// Reads `fd` to its end, or until more than `limit` bytes came: a result longer than `limit`
    /// means there was more (the caller decides whether that is an error).
    ///
    /// Key files come through here, so the bytes are read through one chunk that is zeroed before it
    /// is freed, into an array sized once from `sizeHint` (`st_size`): growing it would leave copies
    /// behind in freed memory.
    public static func readToEnd(_ fd: Int32, limit: Int, sizeHint: Int = 0) throws(SystemCallError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(max(sizeHint, 0), limit) + 1)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
        defer {
            explicit_bzero(chunk.baseAddress!, chunk.count)
            chunk.deallocate()
        }
        while bytes.count <= limit {
            let count = try Self.blocking("read") { Glibc.read(fd, chunk.baseAddress, chunk.count) }
            if count == 0 { break }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<count]))
        }
        return bytes
    }

    /// Writes all of `bytes`, however long the descriptor makes the thread wait (one left
    /// non-blocking is waited on with `poll`).
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
        var written = 0
        try Self.writeAll(fd, bytes, written: &written)
    }

    /// The same, counting in `written` what went out, so that a caller of a failed write knows what
    /// was lost.
    public static func writeAll(
        _ fd: Int32,
        _ bytes: UnsafeRawBufferPointer,
        written: inout Int
    ) throws(SystemCallError) {
        while written < bytes.count {
            let remaining = UnsafeRawBufferPointer(rebasing: bytes[written...])
            switch Self.retryingInterrupts({ Glibc.write(fd, remaining.baseAddress, remaining.count) }) {
            case .returned(0):
                // Nothing taken and no error: the device will take no more.
                throw SystemCallError(function: "write", errnoCode: EIO)
            case .returned(let count):
                written += count
            case .failed(errno: EAGAIN):
                var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = try Self.blocking("poll") { poll(&poller, 1, -1) }
            case .failed(let code):
                throw SystemCallError(function: "write", errnoCode: code)
            }
        }
    }

    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(SystemCallError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try Self.writeAll(fd, raw) } }.get()
    }
}
