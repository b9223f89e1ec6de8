import BearerIO
import Glibc

extension SignalWatcher {
    /// Starts `run`'s program, `argv`, on `run`'s own standard input, output and error, and passes it
    /// the signals from now on. `sharesProcessGroup`: it stays in `run`'s process group (with a
    /// terminal, the foreground one: it reads the terminal and gets its Ctrl-C); else it leads a
    /// group of its own, so that a signal to `run`'s whole group reaches it once, passed on by `run`.
    /// Signals `run` was started with ignored stay ignored.
    func spawn(
        _ argv: [String],
        environment: [String],
        sharesProcessGroup: Bool
    ) throws(SpawnFailure) -> pid_t {
        self.machine.withLock { $0.spawnStarting(sharesProcessGroup: sharesProcessGroup) }
        let pid: pid_t
        do throws(SpawnFailure) {
            pid = try spawnProcess(
                argv,
                stdin: STDIN_FILENO,
                stdout: STDOUT_FILENO,
                stderr: STDERR_FILENO,
                environment: environment,
                ownProcessGroup: !sharesProcessGroup,
                keepsIgnoredSignals: true
            )
        } catch {
            self.machine.withLock { $0.spawnFailed(status: error.shellStatus) }
            throw error
        }
        self.machine.withLock { machine in
            for number in machine.childStarted(pid: pid) { kill(pid, number) }
        }
        return pid
    }

    /// Waits for the program to end and returns `run`'s exit status: the program's, or 128 + N when
    /// signal N ended it.
    func waitForExit(_ pid: pid_t) -> Int32 {
        let status = waitUntilChildEnds(pid).shellStatus
        self.machine.withLock { $0.childEnded(status: status) }
        reapChild(pid)
        return status
    }

    /// Whether this process has a controlling terminal: then the program shares its process group.
    static var hasControllingTerminal: Bool {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }
}
