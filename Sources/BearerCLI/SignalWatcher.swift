import BearerCore
import BearerIO
import BearerProxy
import Dispatch
import Glibc

/// The signals of a process that runs a proxy, `bearer-proxy`'s or `bearer-proxy run`'s, from the
/// start to the end; `SignalStateMachine` decides what each one does, this class does it.
///
/// The signals are blocked in the main thread before anything is created and one thread takes them
/// (`SignalReceiver`): none can find the process half-built with nobody to clean up (the unix socket
/// files made so far are removed on every exit it causes). Under `run` the program's signals are
/// passed on under the lock that also records the program's end, and the program is reaped only after
/// that record: so a signal is sent while its PID is still the program's (alive or a zombie), never to
/// a process that got the PID after it (`SignalWatcher+Program`).
final class SignalWatcher: Sendable {
    /// What the proxy takes: the three a service manager and a shell's user send, and logrotate's SIGUSR1.
    static let proxySignals = [SIGTERM, SIGINT, SIGHUP, SIGUSR1]
    /// What `run` takes and passes on: the proxy's three, and SIGQUIT, SIGUSR1 and SIGUSR2, whose
    /// default would end `run` under its program's feet (a JVM prints its threads on SIGQUIT and goes on).
    static let programSignals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2]

    let socketFiles = UnixSocketFiles()
    let machine: Locked<SignalStateMachine>
    private let stopRequested = DispatchSemaphore(value: 0)
    /// SIGHUP's and SIGUSR1's work and the log, once the proxy serves.
    private let serving = Locked<(reload: @Sendable () -> Void, reopen: @Sendable () -> Void, logger: Logger)?>(nil)
    private let startupLogger = Logger(level: .info, sink: .standardError)

    private init(wrapsProgram: Bool) {
        self.machine = Locked(SignalStateMachine(wrapsProgram: wrapsProgram))
    }

    /// Blocks the signals in the calling thread (call it before anything creates a thread) and starts
    /// the thread that takes them. `wrapsProgram`: `run`'s, which passes them on to its program.
    static func start(wrapsProgram: Bool) -> SignalWatcher {
        let receiver = SignalReceiver(blocking: wrapsProgram ? Self.programSignals : Self.proxySignals)
        let watcher = SignalWatcher(wrapsProgram: wrapsProgram)
        receiver.start { watcher.received($0) }
        return watcher
    }

    /// Ctrl-C and SIGTERM end the process at once, even when the parent started it with them blocked
    /// (threads made later inherit this mask): the commands that run no proxy.
    static func letStopSignalsEndTheProcess() {
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
    }

    /// The proxy (without a program) is up: SIGTERM and SIGINT now stop it gracefully, SIGHUP runs
    /// `reload`, SIGUSR1 `reopen`.
    func serving(
        logger: Logger,
        reopen: @escaping @Sendable () -> Void,
        reload: @escaping @Sendable () -> Void
    ) {
        self.serving.withLock { $0 = (reload, reopen, logger) }
        self.machine.withLock { $0.proxyStarted() }
    }

    /// Returns once SIGTERM or SIGINT asked the serving proxy to stop.
    func waitForStopRequest() {
        self.stopRequested.wait()
    }

    private func received(_ signal: ReceivedSignal) {
        let action = self.machine.withLock { machine -> SignalStateMachine.SignalAction in
            let action = machine.signalReceived(signal)
            // Under the lock: see the type's doc.
            if case .forward(let number, let pid) = action { kill(pid, number) }
            return action
        }
        switch action {
        case .exit(let status, let reason):
            switch reason {
            case .signalDuringStartUp:
                self.startupLogger.info("stopping: signal during start-up", ["signal": signal.name])
            case .secondSignal:
                let logger = self.serving.withLock { $0?.logger } ?? self.startupLogger
                logger.warn("second signal: exiting now without waiting for in-flight requests")
            case nil:
                break
            }
            self.socketFiles.removeAllAndExit(status)
        case .stop:
            self.stopRequested.signal()
        case .reload:
            self.serving.withLock { $0?.reload }?()
        case .reopenLogs:
            self.serving.withLock { $0?.reopen }?()
        case .forward, .keep, .none:
            break
        }
    }
}
