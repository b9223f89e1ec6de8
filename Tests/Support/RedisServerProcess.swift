import BearerCore
import BearerIO
import Dispatch
import Foundation
import Glibc

/// A real `redis-server` (Debian's package) for tests and the bench: on a free 127.0.0.1 port, with
/// no persistence, ended by its PID.
///
/// `stop()` and `start()` again keep the port, so a proxy sees the same store go away and come back.
/// The server is spawned with no signal blocked: a child inherits its parent thread's signal mask
/// through exec, and the worker threads tests run on block SIGTERM, which would leave a server
/// that cannot be stopped.
package final class RedisServerProcess: @unchecked Sendable {
    package struct StartError: Error, CustomStringConvertible {
        package var description: String
    }

    /// TLS material for `rediss://`: the server presents `certificateFile`; clients are not asked for one.
    package struct TLSFiles: Sendable {
        package var certificateFile: String
        package var keyFile: String
        package var caFile: String

        package init(certificateFile: String, keyFile: String, caFile: String) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.caFile = caFile
        }
    }

    private struct Running {
        var pid: pid_t
        var exited = false
        /// Reads the output and reaps the server; joined once the server is gone.
        var collector: pthread_t?
    }

    package let port: Int
    private let arguments: [String]
    private let state = Locked<(running: Running?, output: String)>((nil, ""))
    private let changed = DispatchSemaphore(value: 0)

    /// `redis-server` on PATH (or in /usr/bin, /usr/sbin); nil when it is not installed.
    package static var executable: String? {
        ExternalTool.redisServer.isInstalled ? ExternalTool.redisServer.program : nil
    }

    /// Starts a server and waits (bounded) until it accepts connections. `configuration` adds
    /// directives (`--requirepass pw`, `--user name on >pw …`); `tls` serves TLS only.
    package init(configuration: [String] = [], tls: TLSFiles? = nil) throws {
        self.port = try freeLoopbackPort()
        var arguments = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"]
        if let tls {
            arguments += [
                "--port", "0", "--tls-port", "\(self.port)", "--tls-cert-file", tls.certificateFile,
                "--tls-key-file", tls.keyFile, "--tls-ca-cert-file", tls.caFile, "--tls-auth-clients", "no",
            ]
        } else {
            arguments += ["--port", "\(self.port)"]
        }
        self.arguments = arguments + configuration
        try self.start()
    }

    deinit {
        self.kill()
    }

    package var pid: pid_t? { self.state.withLock { $0.running.flatMap { $0.exited ? nil : $0.pid } } }
    package var isRunning: Bool { self.pid != nil }
    /// What the server printed since it last started (its log), for a test failure's message.
    package var output: String { self.state.withLock { $0.output } }

    /// Starts the server (again) on its port and waits until it accepts connections.
    package func start(timeout: Duration = .seconds(20)) throws {
        guard let executable = Self.executable else {
            throw StartError(description: ExternalTool.redisServer.skipReason)
        }
        precondition(!self.isRunning, "redis-server is already running")
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw StartError(description: "pipe failed: \(errno)") }
        // Close-on-exec, so other children never hold the pipe open (the dup2 in the child clears it there).
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let pid: pid_t
        do throws(SpawnFailure) {
            pid = try spawnProcess([executable] + self.arguments, stdout: fds[1], stderr: fds[1])
        } catch {
            close(fds[0])
            close(fds[1])
            throw StartError(description: "cannot run \(executable): \(error.reason)")
        }
        close(fds[1])
        self.joinCollector()
        self.state.withLock { $0 = (Running(pid: pid), "") }
        let collector = self.collect(pid: pid, output: fds[0])
        self.state.withLock { $0.running?.collector = collector }
        let deadline = DispatchTime.now() + .nanoseconds(Int(timeout.nanoseconds))
        while !self.output.contains("Ready to accept connections") {
            guard self.isRunning, self.changed.wait(timeout: deadline) == .success else {
                let output = self.output
                self.kill()
                throw StartError(description: "redis-server did not start on port \(self.port): \(output.suffix(500))")
            }
        }
    }

    /// Ends the server by its PID (SIGTERM, then SIGKILL after a bounded wait) and waits for its exit.
    package func stop() {
        self.end(signal: SIGTERM)
    }

    /// Ends the server at once (SIGKILL): a crash, as far as its clients can tell.
    package func kill() {
        self.end(signal: SIGKILL)
    }

    /// Freezes the server (SIGSTOP): connections stay open and nothing is answered, as with a hung host.
    package func pause() {
        if let pid = self.pid { Glibc.kill(pid, SIGSTOP) }
    }

    /// Lets a paused server run again (SIGCONT).
    package func resume() {
        if let pid = self.pid { Glibc.kill(pid, SIGCONT) }
    }

    private func end(signal: Int32) {
        defer { self.joinCollector() }
        guard let pid = self.pid else { return }
        Glibc.kill(pid, signal)
        Glibc.kill(pid, SIGCONT)
        let deadline = DispatchTime.now() + .seconds(10)
        while self.isRunning {
            if self.changed.wait(timeout: deadline) == .timedOut {
                Glibc.kill(pid, SIGKILL)
                while self.isRunning { _ = self.changed.wait(timeout: .now() + .seconds(1)) }
            }
        }
    }

    /// Reads the server's output until it closes, then reaps the server: on a thread of its own,
    /// as blocking reads must be. It holds the state, not `self`: `deinit` waits for the exit it records.
    private func collect(pid: pid_t, output fd: Int32) -> pthread_t {
        let state = self.state
        let changed = self.changed
        return spawnThread(name: "redis-output") {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while let count = try? SystemCall.blocking("read", { read(fd, &buffer, buffer.count) }), count > 0 {
                state.withLock { $0.output += String(decoding: buffer[..<count], as: UTF8.self) }
                changed.signal()
            }
            close(fd)
            var status: Int32 = 0
            _ = try? SystemCall.blocking("waitpid") { waitpid(pid, &status, 0) }
            state.withLock { if $0.running?.pid == pid { $0.running?.exited = true } }
            changed.signal()
        }
    }

    /// Waits for the collector of a server that is gone (it ends right after reaping it).
    private func joinCollector() {
        let collector = self.state.withLock { state -> pthread_t? in
            guard let running = state.running, running.exited else { return nil }
            defer { state.running?.collector = nil }
            return running.collector
        }
        if let collector { joinThread(collector) }
    }
}
