import BearerCore
import BearerHTTP
import BearerIO
import Glibc

/// One event loop's access log lines, formatted as bytes into a buffer and written in batches.
///
/// A line per request must cost the request path almost nothing: no `String`, no formatting
/// through Foundation, no lock and no `write(2)` per line. Lines collect here and go to the sink
/// once per loop turn (or when 64 KiB have gathered), in one write under the sink's lock, so lines
/// of different loops never interleave. Confined to its loop.
final class AccessLogBuffer {
    private let sink: LogSink
    private unowned(unsafe) let loop: EventLoop
    @exclusivity(unchecked) private var buffer = ByteBuffer()
    @exclusivity(unchecked) private var isFlushScheduled = false
    @exclusivity(unchecked) private var timestamp = LogTimestamp()
    /// With named sessions each line says which session the request was for (`session=`).
    private let namesSessions: Bool

    static let flushThreshold = 64 * 1024
    /// Longer paths are cut in the log (with `…`): a line stays readable, a buffer stays bounded.
    static let pathLimit = 512

    /// `loop` outlives its buffer (the loop context holds both).
    init(sink: LogSink, loop: EventLoop, namesSessions: Bool = false) {
        self.sink = sink
        self.loop = loop
        self.namesSessions = namesSessions
    }

    /// `time info request method=… host=… path=… status=… bytes=… duration_ms=… replayed=yes|no`,
    /// with named sessions ` session=NAME` after the host (`-`: no session's, an other host).
    ///
    /// The same shape as every other line of the log (time, level, constant message, metadata), so
    /// that one parser reads a stream that holds both. The level is always info: a request answered is
    /// routine whatever its status, and what went wrong behind a 4xx or 5xx the proxy made itself has a
    /// warn line of its own (upstream connect failed, CONNECT refused, a refresh that failed); a level
    /// by status would say it twice and bury real warnings under clients' 404s.
    func append(
        head: RequestHead?,
        host: [UInt8]?,
        session: [UInt8]? = nil,
        status: Int,
        bodyBytes: Int,
        duration: Duration,
        replayed: Bool,
        isHTTP2: Bool = false,
        grpcStatus: Int? = nil
    ) {
        self.timestamp.write(into: &self.buffer)
        self.buffer.writeStaticString(" info request method=")
        if let head {
            head.bytes.withUnsafeBytes { self.writeValue(UnsafeRawBufferPointer(rebasing: $0[head.methodRange])) }
        } else {
            self.buffer.writeByte(UInt8(ascii: "-"))
        }
        self.buffer.writeStaticString(" host=")
        if let host {
            host.withUnsafeBytes { self.writeValue($0) }
        } else if let head, let authority = head.hostAuthority {
            head.bytes.withUnsafeBytes { self.writeValue(UnsafeRawBufferPointer(rebasing: $0[authority.host])) }
        } else {
            self.buffer.writeByte(UInt8(ascii: "-"))
        }
        if self.namesSessions {
            self.buffer.writeStaticString(" session=")
            if let session { self.buffer.writeBytes(session) } else { self.buffer.writeByte(UInt8(ascii: "-")) }
        }
        self.buffer.writeStaticString(" path=")
        if let head {
            head.bytes.withUnsafeBytes { raw in
                let target = head.target
                let shown = target.lowerBound..<min(target.upperBound, target.lowerBound + Self.pathLimit)
                self.writeValue(UnsafeRawBufferPointer(rebasing: raw[shown]), cut: shown != target)
            }
        } else {
            self.buffer.writeByte(UInt8(ascii: "-"))
        }
        self.buffer.writeStaticString(" status=")
        self.buffer.writeDecimal(status)
        self.buffer.writeStaticString(" bytes=")
        self.buffer.writeDecimal(max(bodyBytes, 0))
        self.buffer.writeStaticString(" duration_ms=")
        let hundredths = Int(max(duration.nanoseconds, 0) / 10_000)
        self.buffer.writeDecimal(hundredths / 100)
        self.buffer.writeByte(UInt8(ascii: "."))
        if hundredths % 100 < 10 { self.buffer.writeByte(UInt8(ascii: "0")) }
        self.buffer.writeDecimal(hundredths % 100)
        self.buffer.writeStaticString(replayed ? " replayed=yes" : " replayed=no")
        self.buffer.writeStaticString(isHTTP2 ? " protocol=h2" : " protocol=http/1.1")
        if let grpcStatus {
            self.buffer.writeStaticString(" grpc_status=")
            self.buffer.writeDecimal(grpcStatus)
        }
        self.buffer.writeByte(0x0A)
        self.lineEnded()
    }

    /// A line of another shape (the audit log's, `AuditLogBuffer`), batched the same way: `write`
    /// writes it whole, newline included, after the time it is given.
    func appendLine(_ write: (inout ByteBuffer, inout LogTimestamp) -> Void) {
        write(&self.buffer, &self.timestamp)
        self.lineEnded()
    }

    private func lineEnded() {
        if self.buffer.readableBytes >= Self.flushThreshold {
            self.flush()
        } else if !self.isFlushScheduled {
            self.isFlushScheduled = true
            self.loop.defer { self.flush() }
        }
    }

    /// Writes what has gathered.
    func flush() {
        self.isFlushScheduled = false
        guard !self.buffer.isEmpty else { return }
        self.buffer.withUnsafeReadableBytes { self.sink.write(bytes: $0) }
        self.buffer.clear()
    }

    /// A logfmt value: as is when it is plain, else quoted with `"`, `\`, and control bytes escaped.
    private func writeValue(_ bytes: UnsafeRawBufferPointer, cut: Bool = false) {
        if bytes.isEmpty {
            self.buffer.writeStaticString("\"\"")
            return
        }
        let needsQuotes = cut || bytes.contains { $0 <= 0x20 || $0 == 0x22 || $0 == 0x3D || $0 == 0x5C || $0 == 0x7F }
        guard needsQuotes else {
            self.buffer.writeBytes(bytes)
            return
        }
        self.buffer.writeByte(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): self.buffer.writeStaticString("\\\"")
            case UInt8(ascii: "\\"): self.buffer.writeStaticString("\\\\")
            case 0x0A: self.buffer.writeStaticString("\\n")
            case 0x0D: self.buffer.writeStaticString("\\r")
            case 0x09: self.buffer.writeStaticString("\\t")
            case 0x00..<0x20, 0x7F:
                self.buffer.writeStaticString("\\u{")
                self.buffer.writeHexadecimal(Int(byte))
                self.buffer.writeByte(UInt8(ascii: "}"))
            default: self.buffer.writeByte(byte)
            }
        }
        if cut { self.buffer.writeStaticString("…") }
        self.buffer.writeByte(UInt8(ascii: "\""))
    }
}

@available(*, unavailable)
extension AccessLogBuffer: Sendable {}
