import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Synchronization

/// The real `bearer-proxy` binary, run as a child with a generated config; its /proc figures.
final class ChildProxy: @unchecked Sendable {
    let process: ChildProcess
    private let output = Locked<String>("")
    /// The config the bench wrote for this proxy (nil: the user's own, given as it is).
    let configPath: String?

    /// `bearer-proxy` next to this executable, unless given.
    static func locateBinary(_ given: String?) -> String? {
        if let given { return FileManager.default.isExecutableFile(atPath: given) ? given : nil }
        let own =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let candidate = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("bearer-proxy")
            .path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
    }

    /// The proxy with `config` written to a file of its own (removed by `stop`).
    convenience init(binary: String, config: String) throws {
        let path = try ScratchSpace.newDirectory("proxy") + "/proxy.conf"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        try self.init(binary: binary, arguments: ["--config", path], ownConfig: path)
    }

    /// The proxy with `arguments`; `ownConfig`: the config file the bench wrote for it, removed by
    /// `stop` (a user's own config is never removed). In a process group of its own when it runs
    /// the user's config (`BenchChildren.start`).
    init(binary: String, arguments: [String], ownConfig: String? = nil) throws {
        self.configPath = ownConfig
        let errors = makeClosingPipe()
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer {
            close(null)
            close(errors.write)
        }
        do {
            self.process = try BenchChildren.start(
                [binary] + arguments,
                stdout: null,
                stderr: errors.write,
                ownProcessGroup: ownConfig == nil
            )
        } catch {
            close(errors.read)
            throw error
        }
        // The reader owns the pipe's end and closes it once the proxy's stderr ends.
        let output = self.output
        _ = spawnThread(name: "proxy-stderr") {
            readUntilEnd(errors.read) { text in output.withLock { Self.append(text, to: &$0) } }
            close(errors.read)
        }
    }

    var pid: Int32 { self.process.pid }

    /// What is kept of the proxy's stderr: its start (the start lines, `listening on`) and its last
    /// lines (why it stopped). A user's config may log a line per request (`access_log = stderr`),
    /// which a long run must not keep whole in memory.
    static let keptHead = 64 * 1024
    static let keptTail = 16 * 1024

    static func append(_ text: String, to output: inout String) {
        output += text
        guard output.utf8.count > Self.keptHead + 2 * Self.keptTail else { return }
        let bytes = Array(output.utf8)
        output =
            String(decoding: bytes.prefix(Self.keptHead), as: UTF8.self) + "\n[…]\n"
            + String(decoding: bytes.suffix(Self.keptTail), as: UTF8.self)
    }

    /// The admin listener's port from the start line's `admin=127.0.0.1:PORT` (after `waitForPort`).
    var adminPort: Int? {
        guard let range = self.standardError.range(of: "admin=127.0.0.1:") else { return nil }
        return Int(self.standardError[range.upperBound...].prefix { $0.isNumber })
    }
    var standardError: String { self.output.withLock { $0 } }

    /// The port from the `listening on` line, waiting at most `timeout`.
    func waitForPort(timeout: Duration = .seconds(20)) -> Int? {
        let deadline = Instant.now() + timeout
        while Instant.now() < deadline && self.process.isRunning {
            let text = self.standardError
            if let range = text.range(of: "listening on 127.0.0.1:") {
                return Int(text[range.upperBound...].prefix { $0.isNumber })
            }
            usleep(10_000)
        }
        return nil
    }

    /// Ends the proxy and removes its config, also when it had exited by itself.
    func stop() {
        if self.process.isRunning {
            kill(self.pid, SIGTERM)
            if self.process.wait(timeout: .seconds(15)) == nil { kill(self.pid, SIGKILL) }
        }
        _ = self.process.waitUntilExit()
        BenchChildren.ended(self.process)
        if let configPath = self.configPath {
            try? FileManager.default.removeItem(
                atPath: URL(fileURLWithPath: configPath).deletingLastPathComponent().path
            )
        }
    }

    /// CPU seconds used so far (user + system), from /proc/PID/stat.
    var cpuSeconds: Double {
        guard let text = try? String(contentsOfFile: "/proc/\(self.pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3, utime 14, stime 15 (1-based in proc(5)).
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Peak resident memory (VmHWM) and current (VmRSS), in MiB.
    var memory: (peakMiB: Double, currentMiB: Double) {
        guard let text = try? String(contentsOfFile: "/proc/\(self.pid)/status", encoding: .utf8) else { return (0, 0) }
        func value(_ key: String) -> Double {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
            return (Double(line.split(separator: " ").dropFirst().first { !$0.isEmpty } ?? "0") ?? 0) / 1024
        }
        return (value("VmHWM:"), value("VmRSS:"))
    }
}

/// Lets this process (and its children) hold many connections.
func raiseFileDescriptorLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}
