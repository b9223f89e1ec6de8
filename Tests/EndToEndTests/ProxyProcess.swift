import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// The built `bearer-proxy` binary, run as a child process with its stderr captured.
///
/// Tests end only the processes they started, by PID, and always within a bounded wait.
final class ProxyProcess: @unchecked Sendable {
    let process: ChildProcess
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
    /// instead, which the test may leave unread (`standardError` stays empty). The child starts with
    /// no signal blocked (Swift Testing's threads block nearly every one, and a child would inherit
    /// that): spawnProcess sees to it, as a shell or systemd would.
    init(
        _ arguments: [String],
        environment: [String: String] = [:],
        inheritsEnvironment: Bool = true,
        standardInput: FileHandle? = nil,
        launcher: [String]? = nil,
        unreadStandardError: Pipe? = nil
    ) throws {
        let argv = (launcher.map { $0 + [Self.binaryURL.path] } ?? [Self.binaryURL.path]) + arguments
        var env = inheritsEnvironment ? ProcessInfo.processInfo.environment : [:]
        env["XDG_CONFIG_HOME"] = "/nonexistent/bearer-e2e-config"
        env.merge(environment) { _, given in given }
        let stdout = makeClosingPipe()
        let stderr = unreadStandardError == nil ? makeClosingPipe() : nil
        do {
            self.process = try ChildProcess(
                argv,
                stdin: standardInput?.fileDescriptor,
                stdout: stdout.write,
                stderr: stderr?.write ?? unreadStandardError!.fileHandleForWriting.fileDescriptor,
                environment: env
            )
        } catch {
            for fd in [stdout.read, stdout.write, stderr?.read, stderr?.write].compactMap({ $0 }) { close(fd) }
            throw error
        }
        close(stdout.write)
        // Only the child may hold the write end: the test's reader sees the end of the stream
        // when the child exits (Foundation's Process closed the parent's copy the same way).
        try? unreadStandardError?.fileHandleForWriting.close()
        self.readers = [Self.collect(stdout.read, into: self.output, ended: self.streamEnded) { $0.stdout += $1 }]
        if let stderr {
            close(stderr.write)
            self.readers.append(
                Self.collect(stderr.read, into: self.output, ended: self.streamEnded) { $0.stderr += $1 }
            )
        }
    }

    deinit {
        if self.process.isRunning {
            self.process.signal(SIGKILL)
            _ = self.process.waitUntilExit()
        }
        self.joinReaders()
    }

    /// Reads one of the child's streams with read(2) until it ends, on a thread of its own.
    ///
    /// The thread owns the descriptor and closes it after the last read: closed by anyone else, its
    /// number could be reused by a test's socket while the read still runs.
    private static func collect(
        _ fd: Int32,
        into output: Locked<CapturedOutput>,
        ended: DispatchSemaphore,
        append: @escaping @Sendable (inout CapturedOutput, String) -> Void
    ) -> pthread_t {
        spawnThread(name: "child-output") {
            readUntilEnd(fd) { text in output.withLock { append(&$0, text) } }
            close(fd)
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

    /// Waits (bounded) for the ready line of the main listener, or of `session`'s own, and returns
    /// the address it names; nil if the process ended first. The ready line is the program's start
    /// signal (the contract's), not log text.
    func waitUntilListening(session: String? = nil, timeout: Duration = .seconds(20)) -> String? {
        var address: String?
        _ = waitUntil(timeout: timeout) {
            for line in self.standardError.split(separator: "\n") where line.contains("listening on ") {
                guard line.contains(" session=") == (session != nil) else { continue }
                if let session, !line.contains(" session=\(session) ") { continue }
                address = String(line.components(separatedBy: "listening on ")[1].prefix { !$0.isWhitespace })
                return true
            }
            return !self.process.isRunning
        }
        return address
    }

    func signal(_ number: Int32) {
        self.process.signal(number)
    }

    /// Waits (bounded) for the process to end; nil if it did not.
    func waitForTermination(timeout: Duration = .seconds(20)) -> ChildTermination? {
        guard let termination = self.process.wait(timeout: timeout) else { return nil }
        // The child is gone: what it wrote is read once its streams end.
        self.joinReaders()
        return termination
    }

    /// Stops it as a service manager does (SIGTERM) and waits (bounded) for its end: its exit status,
    /// nil if it did not end. Its stderr is then complete: the log is flushed before the exit, so a
    /// test reads a log line here rather than wait for it while the process runs.
    func stop(timeout: Duration = .seconds(20)) -> Int32? {
        self.signal(SIGTERM)
        return self.waitForExit(timeout: timeout)
    }

    /// Waits (bounded) for the process to end: its exit status, or the shell's 128 + N when signal
    /// N killed it; nil if it did not end.
    func waitForExit(timeout: Duration = .seconds(20)) -> Int32? {
        self.waitForTermination(timeout: timeout)?.shellStatus
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

/// A fresh folder in the scratch space for one test's files (the files themselves are not created).
func temporaryDirectory() -> String {
    do {
        return try ScratchSpace.newDirectory("e2e")
    } catch {
        Issue.record("\(error)")
        return "/nonexistent/bearer-e2e"
    }
}

/// `contents` in a file called `name`, in a fresh folder of its own.
func temporaryFile(_ contents: String, name: String = "proxy.conf") -> String {
    let path = temporaryDirectory() + "/" + name
    if !FileManager.default.createFile(atPath: path, contents: Data(contents.utf8)) {
        Issue.record("cannot create the temporary file \(path)")
    }
    return path
}
