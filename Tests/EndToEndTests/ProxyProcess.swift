import BearerCore
import Foundation
import Glibc
import Synchronization
import Testing

/// The built `bearer-proxy` binary, run as a child process with its stderr captured.
///
/// Tests end only the processes they started, by PID, and always within a bounded wait.
final class ProxyProcess: @unchecked Sendable {
    let process = Process()
    private let stderrPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let output = Locked<(stderr: String, stdout: String)>(("", ""))

    /// `.build/debug/bearer-proxy`, next to the test bundle.
    static var binaryURL: URL {
        let testBinary = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        )
        return testBinary.deletingLastPathComponent().appendingPathComponent("bearer-proxy")
    }

    /// `launcher` runs the binary through another program (`sh -c 'ulimit …; exec "$0" "$@"'`).
    /// The child gets this process's environment plus `environment`, or `environment` alone when
    /// `inheritsEnvironment` is false; XDG_CONFIG_HOME points nowhere unless given, so that a
    /// developer's own ~/.config/bearer-proxy/proxy.conf never leaks into a test. It reads
    /// `standardInput` (default: nothing, so a child that would ask a question never waits on the
    /// terminal the tests were started from).
    init(
        _ arguments: [String],
        environment: [String: String] = [:],
        inheritsEnvironment: Bool = true,
        standardInput: FileHandle = .nullDevice,
        launcher: [String]? = nil
    ) throws {
        if let launcher {
            self.process.executableURL = URL(fileURLWithPath: launcher[0])
            self.process.arguments = Array(launcher.dropFirst()) + [Self.binaryURL.path] + arguments
        } else {
            self.process.executableURL = Self.binaryURL
            self.process.arguments = arguments
        }
        var env = inheritsEnvironment ? ProcessInfo.processInfo.environment : [:]
        env["XDG_CONFIG_HOME"] = "/nonexistent/bearer-e2e-config"
        env.merge(environment) { _, given in given }
        self.process.environment = env
        self.process.standardInput = standardInput
        self.process.standardError = self.stderrPipe
        self.process.standardOutput = self.stdoutPipe
        self.stderrPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            self?.output.withLock { $0.stderr += text }
        }
        self.stdoutPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            self?.output.withLock { $0.stdout += text }
        }
        // A child inherits its parent thread's signal mask, and Swift Testing's threads block nearly
        // every signal: spawn with none blocked, as a shell or systemd would, or SIGTERM would be held
        // back until the proxy itself chose to wait for it.
        var none = sigset_t()
        sigemptyset(&none)
        var previous = sigset_t()
        pthread_sigmask(SIG_SETMASK, &none, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try self.process.run()
    }

    deinit {
        if self.process.isRunning {
            kill(self.process.processIdentifier, SIGKILL)
            self.process.waitUntilExit()
        }
    }

    var standardError: String { self.output.withLock { $0.stderr } }
    var standardOutput: String { self.output.withLock { $0.stdout } }

    /// Waits (bounded) for the ready line and returns the address it names.
    func waitUntilListening(timeout: Duration = .seconds(20)) -> String? {
        let deadline = Instant.now() + timeout
        while Instant.now() < deadline {
            let text = self.standardError
            if let range = text.range(of: "listening on ") {
                let rest = text[range.upperBound...]
                return String(rest.prefix { !$0.isWhitespace })
            }
            if !self.process.isRunning { return nil }
            usleep(10_000)
        }
        return nil
    }

    func signal(_ number: Int32) {
        kill(self.process.processIdentifier, number)
    }

    /// Waits (bounded) for the process to exit; nil if it did not.
    func waitForExit(timeout: Duration = .seconds(20)) -> Int32? {
        let deadline = Instant.now() + timeout
        while self.process.isRunning && Instant.now() < deadline { usleep(10_000) }
        if self.process.isRunning { return nil }
        // Collect what is still in the pipes (the child is gone, so these reads end).
        for (pipe, isError) in [(self.stderrPipe, true), (self.stdoutPipe, false)] {
            pipe.fileHandleForReading.readabilityHandler = nil
            let rest = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            self.output.withLock { isError ? ($0.stderr += rest) : ($0.stdout += rest) }
        }
        return self.process.terminationStatus
    }

    /// Runs the binary to completion (for --check, --help, bad configs).
    static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        inheritsEnvironment: Bool = true
    ) throws -> (status: Int32?, stdout: String, stderr: String) {
        let child = try ProxyProcess(arguments, environment: environment, inheritsEnvironment: inheritsEnvironment)
        let status = child.waitForExit()
        return (status, child.standardOutput, child.standardError)
    }
}

func temporaryFile(_ contents: String, name: String = "proxy.conf") -> String {
    let directory = NSTemporaryDirectory() + "bearer-e2e-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let path = directory + "/" + name
    if !FileManager.default.createFile(atPath: path, contents: Data(contents.utf8)) {
        Issue.record("cannot create the temporary file \(path)")
    }
    return path
}
