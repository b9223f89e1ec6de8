import BearerCore
import BearerIO
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
    private let output = Locked<CapturedOutput>(CapturedOutput())
    private var readers: [pthread_t] = []
    /// Signalled by each reader once its stream has ended.
    private let streamEnded = DispatchSemaphore(value: 0)

    /// What the child wrote so far.
    private struct CapturedOutput {
        var stderr = ""
        var stdout = ""
    }

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
    /// terminal the tests were started from). With `unreadStandardError`, stderr goes into that pipe
    /// instead, which the test may leave unread (`standardError` stays empty).
    init(
        _ arguments: [String],
        environment: [String: String] = [:],
        inheritsEnvironment: Bool = true,
        standardInput: FileHandle = .nullDevice,
        launcher: [String]? = nil,
        unreadStandardError: Pipe? = nil
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
        self.process.standardError = unreadStandardError ?? self.stderrPipe
        self.process.standardOutput = self.stdoutPipe
        // A child inherits its parent thread's signal mask, and Swift Testing's threads block nearly
        // every signal: spawn with none blocked, as a shell or systemd would, or SIGTERM would be held
        // back until the proxy itself chose to wait for it.
        var none = sigset_t()
        sigemptyset(&none)
        var previous = sigset_t()
        pthread_sigmask(SIG_SETMASK, &none, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try self.process.run()
        self.readers = [Self.collect(self.stdoutPipe, into: self.output, ended: self.streamEnded) { $0.stdout += $1 }]
        if unreadStandardError == nil {
            self.readers.append(
                Self.collect(self.stderrPipe, into: self.output, ended: self.streamEnded) { $0.stderr += $1 }
            )
        }
    }

    deinit {
        if self.process.isRunning {
            kill(self.process.processIdentifier, SIGKILL)
            self.process.waitUntilExit()
        }
        self.joinReaders()
    }

    /// Reads one of the child's streams with read(2) until it ends, on a thread of its own.
    ///
    /// The thread holds the pipe, so its descriptor stays open until the last read: a
    /// `readabilityHandler` could still be reading when the handle was closed and its number reused
    /// by a test's socket, and Foundation ends the process on the error that read gets.
    private static func collect(
        _ pipe: Pipe,
        into output: Locked<CapturedOutput>,
        ended: DispatchSemaphore,
        append: @escaping @Sendable (inout CapturedOutput, String) -> Void
    ) -> pthread_t {
        spawnThread(name: "child-output") {
            readUntilEnd(pipe.fileHandleForReading.fileDescriptor) { text in output.withLock { append(&$0, text) } }
            ended.signal()
        }
    }

    /// Joins the readers once both streams ended, waiting at most a few seconds: a grandchild that
    /// kept the pipes open leaves its reader running (it still owns its pipe and ends with it).
    private func joinReaders(timeout: Duration = .seconds(5)) {
        guard !self.readers.isEmpty else { return }
        let deadline = DispatchTime.now() + .nanoseconds(Int(timeout.nanoseconds))
        for _ in self.readers {
            guard self.streamEnded.wait(timeout: deadline) == .success else { return }
        }
        self.readers.forEach(joinThread)
        self.readers = []
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
        // The child is gone: what it wrote is read once its streams end.
        self.joinReaders()
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

/// Reads `fd` until it ends, passing on what arrives.
func readUntilEnd(_ fd: Int32, _ received: (String) -> Void) {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return }
        received(String(decoding: buffer[..<count], as: UTF8.self))
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
