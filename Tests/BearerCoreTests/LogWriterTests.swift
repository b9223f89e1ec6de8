import Dispatch
import Glibc
import Testing

@testable import BearerCore

/// A log on a descriptor never makes its caller wait: what the log does not take is dropped, counted,
/// and said so once it takes bytes again.
@Suite struct LogWriterTests {
    /// A pipe: `read` end, `write` end.
    static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(Glibc.pipe(&fds) == 0)
        return (fds[0], fds[1])
    }

    /// Reads `fd` on a thread of its own until it ends, into the returned text.
    static func startReading(_ fd: Int32) -> (text: Locked<String>, thread: pthread_t) {
        let text = Locked("")
        let thread = spawnThread(name: "pipe-reader") {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while let count = try? SystemCall.blocking("read", { read(fd, &buffer, buffer.count) }), count > 0 {
                let piece = String(decoding: buffer[..<count], as: UTF8.self)
                text.withLock { $0 += piece }
            }
        }
        return (text, thread)
    }

    static func write(_ line: String, to writer: LogWriter) {
        var line = line
        line.withUTF8 { writer.write(UnsafeRawBufferPointer($0)) }
    }

    static func line(_ number: Int) -> String {
        "2026-12-01T00:00:00.000Z info line number=\(number) \(String(repeating: "x", count: 60))\n"
    }

    static func numbers(_ lines: some Sequence<Substring>) -> [Int] {
        lines.compactMap { $0.split(separator: "number=").last?.split(separator: " ").first.flatMap { Int($0) } }
    }

    @Test func dropsAndCountsWhatAPipeNobodyReadsCannotTakeThenSaysSo() throws {
        let pipe = try Self.pipe()
        defer { close(pipe.read) }
        let log = LogWriter(fileDescriptor: pipe.write, capacity: 64 * 1024, closesDescriptor: true)
        // Five times what the pipe and the queue hold together, from another thread: if a write
        // waited for the log, that thread would never finish.
        let finished = DispatchSemaphore(value: 0)
        let caller = spawnThread(name: "log-caller") {
            for number in 0..<5_000 { Self.write(Self.line(number), to: log) }
            finished.signal()
        }
        #expect(finished.wait(timeout: .now() + 20) == .success, "a log write waited for the pipe")
        joinThread(caller)
        let dropped = log.droppedLines
        #expect(dropped > 2_000)
        #expect(fcntl(pipe.write, F_GETFL) & O_NONBLOCK == 0, "the descriptor was made non-blocking")

        // Someone reads again; once the queue has room, the next line comes after the notice.
        let reader = Self.startReading(pipe.read)
        #expect(log.flush(timeout: .seconds(20)))
        Self.write("2026-12-01T00:00:01.000Z info after\n", to: log)
        log.finish()
        joinThread(reader.thread)  // the pipe ends once the writer wrote everything and closed it
        let lines = reader.text.withLock { $0 }.split(separator: "\n")
        // Accepted lines arrive whole and in order, and a notice stands wherever lines are missing,
        // naming exactly how many.
        var next = 0
        for line in lines.dropLast() {
            if line.contains(" warn log lines dropped: the log was not taking them fast enough lines=") {
                next += Int(line.split(separator: "lines=").last!)!
            } else {
                #expect(Self.numbers([line]) == [next], "\(line)")
                next += 1
            }
        }
        #expect(next == 5_000)
        #expect(lines.last == "2026-12-01T00:00:01.000Z info after")
        #expect(log.droppedLines == dropped)
    }

    /// A descriptor the proxy inherited non-blocking: the writer waits for it on its own thread, and
    /// a log that keeps up, however slowly, loses nothing.
    @Test func waitsForANonBlockingDescriptorOnItsOwnThread() throws {
        let pipe = try Self.pipe()
        defer { close(pipe.read) }
        _ = fcntl(pipe.write, F_SETFL, fcntl(pipe.write, F_GETFL) | O_NONBLOCK)
        let log = LogWriter(fileDescriptor: pipe.write, capacity: 1 << 20, closesDescriptor: true)
        for number in 0..<3_000 { Self.write(Self.line(number), to: log) }
        let reader = Self.startReading(pipe.read)
        log.finish()
        joinThread(reader.thread)
        #expect(Self.numbers(reader.text.withLock { $0 }.split(separator: "\n")) == Array(0..<3_000))
        #expect(log.droppedLines == 0)
    }
}
