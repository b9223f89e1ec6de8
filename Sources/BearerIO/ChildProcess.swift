import BearerCore
import CBearerLinux
import Glibc

/// A program started with `spawnProcess`, watched until it ends: what the tests, the bench and
/// `bearer-proxy login`'s browser opener use instead of Foundation's `Process`.
///
/// Why not `Process`: on Linux (swift-corelibs-foundation up to Swift 6.3) `Process.run()` looks for
/// the highest open descriptor by copying whole `dirent` records out of `/proc/self/fd`, over-reads
/// glibc's buffer, and now and then crashes the process (swift-corelibs-foundation PR #5472): the
/// test suite, which starts hundreds of programs, crashed that way in CI.
///
/// The child is left unreaped once it has ended (a zombie, `WNOWAIT`) until this object goes away,
/// so its PID cannot be given to another process while anyone may still signal it.
package final class ChildProcess: Sendable {
    package let pid: pid_t
    /// How it ended, once seen.
    private let seenEnd = Locked<ChildTermination?>(nil)

    /// Starts `argv` as `spawnProcess` does (argv[0] searched in PATH when it has no slash).
    package init(
        _ argv: [String],
        stdin: Int32? = nil,
        stdout: Int32,
        stderr: Int32,
        environment: [String: String]? = nil,
        directory: String? = nil,
        ownProcessGroup: Bool = false
    ) throws(SpawnFailure) {
        self.pid = try spawnProcess(
            argv,
            stdin: stdin,
            stdout: stdout,
            stderr: stderr,
            environment: environment.map { $0.map { "\($0.key)=\($0.value)" } },
            directory: directory,
            ownProcessGroup: ownProcessGroup
        )
    }

    deinit {
        if self.seenEnd.withLock({ $0 }) != nil { reapChild(self.pid) }
    }

    /// How the child ended, or nil while it runs. Never blocks.
    package var termination: ChildTermination? {
        self.seenEnd.withLock { seen in
            if let seen { return seen }
            var info = siginfo_t()
            // WNOHANG: 0 with si_pid 0 while the child runs; WNOWAIT: it stays a zombie (see above).
            let result = waitid(P_PID, id_t(self.pid), &info, WEXITED | WNOHANG | WNOWAIT)
            guard result == 0, info._sifields._sigchld.si_pid == self.pid else { return nil }
            let status = info._sifields._sigchld.si_status
            seen = info.si_code == CLD_EXITED ? .exited(status: status) : .killed(signal: status)
            return seen
        }
    }

    package var isRunning: Bool { self.termination == nil }

    /// Waits at most `timeout` for the child to end; nil if it still runs.
    package func wait(timeout: Duration) -> ChildTermination? {
        let deadline = Instant.now() + timeout
        while true {
            if let termination = self.termination { return termination }
            if Instant.now() >= deadline { return nil }
            usleep(5_000)
        }
    }

    /// Waits for the child to end, however long that takes.
    package func waitUntilExit() -> ChildTermination {
        let termination = waitUntilChildEnds(self.pid)
        self.seenEnd.withLock { $0 = termination }
        return termination
    }

    /// Sends `signal` unless the child is known to have ended (its PID is still its own: see above).
    package func signal(_ signal: Int32) {
        kill(self.pid, signal)
    }
}

/// A pipe whose two descriptors are closed on exec, so no other child inherits them; the end a
/// child gets is duplicated onto its 0, 1 or 2 by `spawnProcess`, which clears that flag there.
package func makeClosingPipe() -> (read: Int32, write: Int32) {
    var descriptors: [Int32] = [-1, -1]
    let result = cbl_pipe_cloexec(&descriptors)
    precondition(result == 0, "pipe2 failed: \(String(cString: strerror(errno)))")
    return (descriptors[0], descriptors[1])
}
