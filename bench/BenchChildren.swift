import BearerCore
import BearerIO
import Glibc

/// The programs the bench started and has not ended yet (its proxies, nginx, mitmdump).
///
/// A terminal's Ctrl-C reaches the whole process group, children included; a SIGTERM or SIGHUP sent
/// to the bench alone (`kill PID`, a supervisor, a closed SSH session) does not, and without this
/// list the bench died while its proxies went on running, holding their ports. A listed process is
/// never reaped (`ChildProcess` keeps it a zombie while referenced), so its PID is still its own
/// when the signal comes.
enum BenchChildren {
    private static let running = Locked<[pid_t: ChildProcess]>([:])

    /// Starts `argv` (as `ChildProcess` does) and lists it until `ended`. `ownProcessGroup`: a
    /// terminal's Ctrl-C does not reach it (a run against your own stack reads its proxy's figures
    /// after the load stopped).
    static func start(
        _ argv: [String],
        stdout: Int32,
        stderr: Int32,
        ownProcessGroup: Bool = false
    ) throws(SpawnFailure) -> ChildProcess {
        let process = try ChildProcess(argv, stdout: stdout, stderr: stderr, ownProcessGroup: ownProcessGroup)
        Self.running.withLock { $0[process.pid] = process }
        return process
    }

    /// Takes an ended (or ending) child off the list.
    static func ended(_ process: ChildProcess) {
        _ = Self.running.withLock { $0.removeValue(forKey: process.pid) }
    }

    /// SIGTERM to every listed child, then SIGKILL to those still running after `timeout`.
    static func endAll(timeout: Duration) {
        let children = Self.running.withLock { Array($0.values) }
        for child in children { child.signal(SIGTERM) }
        let deadline = Instant.now() + timeout
        for child in children where child.wait(timeout: max(.zero, deadline - Instant.now())) == nil {
            child.signal(SIGKILL)
        }
    }
}
