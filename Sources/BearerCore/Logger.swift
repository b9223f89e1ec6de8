import Glibc
import Synchronization

/// A leveled logger writing one line per event: time, level, a constant message, then `key=value` metadata.
///
/// Messages are constant sentences and data goes in metadata, so lines are easy to grep and never
/// interpolate a secret by accident (a `Secret` prints as `<redacted>` anyway). Components receive a
/// logger; they do not make one.
package struct Logger: Sendable {
    package enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warn, error

        package static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        package var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warn: "warn"
            case .error: "error"
            }
        }

        package init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name }) else { return nil }
            self = level
        }
    }

    package var level: Level
    package let sink: LogSink

    package init(level: Level, sink: LogSink) {
        self.level = level
        self.sink = sink
    }

    /// A logger that drops everything (tests of pieces that log as a side effect).
    package static var silent: Logger { Logger(level: .error, sink: LogSink(discarding: ())) }

    package func log(
        _ level: Level,
        _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        guard level >= self.level else { return }
        self.sink.write(Self.format(level: level, message: message(), metadata: metadata()))
    }

    /// An info line printed whatever the level: the ready line (`listening on ADDR`) that scripts
    /// and tests wait for must appear even with `log_level = error`.
    package func announce(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) {
        self.sink.write(Self.format(level: .info, message: message, metadata: metadata))
    }

    package func debug(
        _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        self.log(.debug, message(), metadata())
    }

    package func info(
        _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        self.log(.info, message(), metadata())
    }

    package func warn(
        _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        self.log(.warn, message(), metadata())
    }

    package func error(
        _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        self.log(.error, message(), metadata())
    }

    static func format(level: Level, message: String, metadata: KeyValuePairs<String, String>) -> String {
        var line = formatTimestamp(wallClockSeconds())
        line += " "
        line += level.name
        line += " "
        line += message
        for (key, value) in metadata {
            line += " "
            line += key
            line += "="
            line += logfmtValue(value)
        }
        line += "\n"
        return line
    }
}

/// Quotes a logfmt value when it holds a space, a quote, an equals sign or a control character.
package func logfmtValue(_ value: String) -> String {
    if value.isEmpty { return "\"\"" }
    let needsQuotes = value.utf8.contains { $0 <= 0x20 || $0 == 0x22 || $0 == 0x3D || $0 == 0x5C || $0 == 0x7F }
    if !needsQuotes { return value }
    var quoted = "\""
    for scalar in value.unicodeScalars {
        switch scalar {
        case "\"": quoted += "\\\""
        case "\\": quoted += "\\\\"
        case "\n": quoted += "\\n"
        case "\r": quoted += "\\r"
        case "\t": quoted += "\\t"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                quoted += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                quoted.unicodeScalars.append(scalar)
            }
        }
    }
    quoted += "\""
    return quoted
}

/// `2026-11-30T07:45:17.123Z` without Foundation.
package func formatTimestamp(_ secondsSinceEpoch: Double) -> String {
    var seconds = time_t(secondsSinceEpoch)
    let millis = Int((secondsSinceEpoch - Double(seconds)) * 1000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func pad(_ value: Int32, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
        + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
}

/// Where log lines go: a file descriptor (stderr, an access log file), or memory for tests.
///
/// Writes are serialized by a lock so lines from different event loops never interleave.
package final class LogSink: Sendable {
    private enum Destination {
        case fileDescriptor(Int32)
        case memory
        case discard
    }

    private let destination: Destination
    private let state = Locked<[String]>([])

    package init(fileDescriptor: Int32) {
        self.destination = .fileDescriptor(fileDescriptor)
    }

    /// Keeps every line in memory; read them back with `capturedLines`.
    package init(capturing: ()) {
        self.destination = .memory
    }

    package init(discarding: ()) {
        self.destination = .discard
    }

    package static let standardError = LogSink(fileDescriptor: 2)

    package func write(_ line: String) {
        switch self.destination {
        case .discard:
            return
        case .memory:
            self.state.withLock { $0.append(line) }
        case .fileDescriptor(let fd):
            self.state.withLock { _ in
                var line = line
                line.withUTF8 { bytes in
                    var offset = 0
                    while offset < bytes.count {
                        let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                        if written < 0 {
                            if errno == EINTR { continue }
                            return
                        }
                        offset += written
                    }
                }
            }
        }
    }

    /// Writes whole lines at once (a batch of access log lines): one `write(2)` under the lock.
    package func write(bytes: UnsafeRawBufferPointer) {
        switch self.destination {
        case .discard:
            return
        case .memory:
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { String($0) + "\n" }
            self.state.withLock { $0 += lines }
        case .fileDescriptor(let fd):
            self.state.withLock { _ in
                var offset = 0
                while offset < bytes.count {
                    let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return
                    }
                    offset += written
                }
            }
        }
    }

    package var capturedLines: [String] {
        self.state.withLock { $0 }
    }
}
