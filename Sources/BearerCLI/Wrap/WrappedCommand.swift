import BearerCore
import BearerIO
import BearerProxy
import Glibc

/// `bearer-proxy run`'s program: started with the proxy's environment, passed the signals `run`
/// receives (`WrappedCommandStateMachine` decides), and waited for.
///
/// A signal is passed on under the lock that also records the program's end, and the program is
/// reaped only after that record: so a signal is sent while its PID is still the program's (alive or
/// a zombie), never to a process that got the PID after it.
final class WrappedCommand: Sendable {
    /// What `run` takes and passes on: the three a shell's user sends (and the contract names), and
    /// SIGQUIT, SIGUSR1 and SIGUSR2, whose default would end `run` under its program's feet (a JVM
    /// prints its threads on SIGQUIT and goes on).
    static let signals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2]

    private let machine = Locked(WrappedCommandStateMachine())
    let socketFiles: UnixSocketFiles

    private init(socketFiles: UnixSocketFiles) {
        self.socketFiles = socketFiles
    }

    /// Blocks the signals and starts taking them: call it first, before anything makes a thread.
    static func start(socketFiles: UnixSocketFiles) -> WrappedCommand {
        let receiver = SignalReceiver(blocking: Self.signals)
        let command = WrappedCommand(socketFiles: socketFiles)
        receiver.start { command.received($0) }
        return command
    }

    private func received(_ signal: ReceivedSignal) {
        let action = self.machine.withLock { machine -> WrappedCommandStateMachine.SignalAction in
            let action = machine.signalReceived(signal)
            // Under the lock: see the type's doc.
            if case .forward(let number, let pid) = action { kill(pid, number) }
            return action
        }
        switch action {
        case .exit(let status): self.socketFiles.removeAllAndExit(status)
        case .forward, .keep, .none: break
        }
    }

    /// Starts `argv` on `run`'s own standard input, output and error. `sharesProcessGroup`: it stays
    /// in `run`'s process group (with a terminal, the foreground one: it reads the terminal and gets
    /// its Ctrl-C); else it leads a group of its own, so that a signal to `run`'s whole group reaches
    /// it once, passed on by `run`. Signals `run` was started with ignored stay ignored.
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
