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
    /// Its end, as an event to wait for.
    private let exit: ChildExit

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
        self.exit = ChildExit(pid: self.pid)
    }

    deinit {
        if self.seenEnd.withLock({ $0 }) != nil { reapChild(self.pid) }
    }

    /// How the child ended, or nil while it runs. Never blocks.
    package var termination: ChildTermination? {
        self.seenEnd.withLock { seen in
            if let seen { return seen }
            seen = ChildTermination(waitingFor: self.pid, flags: WNOHANG)
            return seen
        }
    }

    package var isRunning: Bool { self.termination == nil }

    /// Waits at most `timeout` for the child to end; nil if it still runs.
    package func wait(timeout: Duration) -> ChildTermination? {
        if let termination = self.termination { return termination }
        guard let termination = self.exit.wait(until: Instant.now() + timeout) else { return nil }
        self.seenEnd.withLock { $0 = termination }
        return termination
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
