import BearerCore
import Glibc

/// The time of a log line as RFC 3339 UTC with milliseconds (`2025-01-02T03:04:05.678Z`), written
/// as bytes: the date and the second are formatted once per second, the milliseconds each time.
/// The access log's and the audit log's, each loop's buffer its own.
struct LogTimestamp {
    /// `YYYY-MM-DDTHH:MM:SS.` for the second of the last line.
    private var secondPrefix: (second: Int, bytes: [UInt8]) = (-1, [])

    mutating func write(into buffer: inout ByteBuffer) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = Int(now.tv_sec)
        if second != self.secondPrefix.second {
            var seconds = time_t(second)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            var prefix = ByteBuffer()
            func pad(_ value: Int32, _ width: Int) {
                var digits = ByteBuffer()
                digits.writeDecimal(Int(value))
                for _ in digits.readableBytes..<width { prefix.writeByte(UInt8(ascii: "0")) }
                prefix.writeBuffer(digits)
            }
            pad(parts.tm_year + 1900, 4)
            prefix.writeByte(UInt8(ascii: "-"))
            pad(parts.tm_mon + 1, 2)
            prefix.writeByte(UInt8(ascii: "-"))
            pad(parts.tm_mday, 2)
            prefix.writeByte(UInt8(ascii: "T"))
            pad(parts.tm_hour, 2)
            prefix.writeByte(UInt8(ascii: ":"))
            pad(parts.tm_min, 2)
            prefix.writeByte(UInt8(ascii: ":"))
            pad(parts.tm_sec, 2)
            prefix.writeByte(UInt8(ascii: "."))
            self.secondPrefix = (second, prefix.readableBytesArray)
        }
        buffer.writeBytes(self.secondPrefix.bytes)
        let millis = Int(now.tv_nsec) / 1_000_000
        if millis < 100 { buffer.writeByte(UInt8(ascii: "0")) }
        if millis < 10 { buffer.writeByte(UInt8(ascii: "0")) }
        buffer.writeDecimal(millis)
        buffer.writeByte(UInt8(ascii: "Z"))
    }
}
