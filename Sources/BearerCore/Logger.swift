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

    /// The least severe level written. Shared by every logger made from this one (`with`), so that
    /// a new `log_level` (SIGHUP re-reads the config) reaches every component that was given one.
    package var level: Level { Level(rawValue: self.threshold.value.load(ordering: .relaxed)) ?? .info }
    package let sink: LogSink
    /// `key=value` pairs every line of this logger carries before its own, formatted once.
    private var context = ""
    private let threshold: Threshold

    private final class Threshold: Sendable {
        let value: Atomic<Int>

        init(_ level: Level) {
            self.value = Atomic(level.rawValue)
        }
    }

    package init(level: Level, sink: LogSink) {
        self.threshold = Threshold(level)
        self.sink = sink
    }

    /// Changes the level of this logger and of every logger made from it.
    package func changeLevel(to level: Level) {
        self.threshold.value.store(level.rawValue, ordering: .relaxed)
    }

    /// This logger with `key=value` on each of its lines, ahead of the line's own metadata: a
    /// component that serves one of several (a named session) says which on every line.
    package func with(_ key: String, _ value: String) -> Logger {
        var logger = self
        logger.context += " \(key)=\(logfmtValue(value))"
        return logger
    }

    /// A logger that drops everything (tests of pieces that log as a side effect).
    package static var silent: Logger { Logger(level: .error, sink: LogSink(discarding: ())) }

    package func log(
        _ level: Level,
        _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        guard level >= self.level else { return }
        self.sink.write(Self.format(level: level, message: message(), context: self.context, metadata: metadata()))
    }

    /// An info line printed whatever the level: the ready line (`listening on ADDR`) that scripts
    /// and tests wait for must appear even with `log_level = error`.
    package func announce(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) {
        self.sink.write(Self.format(level: .info, message: message, context: self.context, metadata: metadata))
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

    static func format(
        level: Level,
        message: String,
        context: String = "",
        metadata: KeyValuePairs<String, String>
    ) -> String {
        var line = formatTimestamp(wallClockSeconds())
        line += " "
        line += level.name
        line += " "
        line += message
        line += context
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
/// A descriptor is written by a `LogWriter`, from a thread of its own: a log that does not take bytes
/// (a pipe nobody reads) makes lines drop, counted, and never makes a caller wait. Each line is
/// queued whole, so lines from different event loops never interleave.
package final class LogSink: Sendable {
    private enum Destination {
        case fileDescriptor(LogWriter)
        case memory(Locked<[String]>)
        case discard
    }

    private let destination: Destination

    /// `closesDescriptor`: the descriptor is the sink's own (an access log file), closed with it.
    /// `whenFirstLosingLines`: see `LogWriter`.
    package init(
        fileDescriptor: Int32,
        capacity: Int = LogWriter.defaultCapacity,
        closesDescriptor: Bool = false,
        whenFirstLosingLines: (@Sendable () -> Void)? = nil
    ) {
        self.destination = .fileDescriptor(
            LogWriter(
                fileDescriptor: fileDescriptor,
                capacity: capacity,
                closesDescriptor: closesDescriptor,
                whenFirstLosingLines: whenFirstLosingLines
            )
        )
    }

    /// Keeps every line in memory; read them back with `capturedLines`.
    package init(capturing: ()) {
        self.destination = .memory(Locked([]))
    }

    package init(discarding: ()) {
        self.destination = .discard
    }

    deinit {
        if case .fileDescriptor(let writer) = self.destination { writer.finish() }
    }

    package static let standardError = LogSink(fileDescriptor: 2)

    package func write(_ line: String) {
        switch self.destination {
        case .discard:
            return
        case .memory(let lines):
            lines.withLock { $0.append(line) }
        case .fileDescriptor(let writer):
            var line = line
            line.withUTF8 { writer.write(UnsafeRawBufferPointer($0)) }
        }
    }

    /// Writes whole lines at once (a batch of access log lines).
    package func write(bytes: UnsafeRawBufferPointer) {
        switch self.destination {
        case .discard:
            return
        case .memory(let lines):
            let split = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { String($0) + "\n" }
            lines.withLock { $0 += split }
        case .fileDescriptor(let writer):
            writer.write(bytes)
        }
    }

    /// Lines that could not be written (`bearer_proxy_log_lines_dropped_total`).
    package var droppedLines: Int {
        if case .fileDescriptor(let writer) = self.destination { return writer.droppedLines }
        return 0
    }

    /// Bytes queued for the writer and not yet written (`bearer_proxy_log_queue_bytes`).
    package var queuedBytes: Int {
        if case .fileDescriptor(let writer) = self.destination { return writer.queuedBytes }
        return 0
    }

    /// Waits (at most `timeout`) until what was logged is written: before the process exits.
    package func flush(timeout: Duration = .seconds(2)) {
        if case .fileDescriptor(let writer) = self.destination { writer.flush(timeout: timeout) }
    }

    package var capturedLines: [String] {
        if case .memory(let lines) = self.destination { return lines.withLock { $0 } }
        return []
    }
}
