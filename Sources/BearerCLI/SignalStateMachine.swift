import BearerIO
import Glibc

/// What a signal does, from the start of a proxy this process runs to its end: `bearer-proxy`'s
/// own, or `bearer-proxy run`'s, which has a program to pass signals on to.
///
/// The proxy: a signal during start-up ends the process at once (nothing is in flight); serving,
/// the first SIGTERM/SIGINT asks for the drain, SIGHUP re-reads the config and SIGUSR1 opens the
/// audit log's file again (logrotate's `postrotate`); draining, a second SIGTERM/SIGINT exits at once
/// (status 1), and SIGUSR1 still reopens (the last exchanges are audited too).
///
/// `run`: signals sent to it with kill(2) are meant for the program and are passed on; `run` keeps
/// serving until the program exits. A signal the kernel sent to the whole foreground process group
/// (the terminal's Ctrl-C, Ctrl-\, hangup: `si_code` SI_KERNEL) has reached the program already when
/// it shares `run`'s group, and is not sent a second time. Before the program runs, a signal ends
/// `run` (128 + N: nothing is in flight); after it exited, one sent with kill(2) ends the drain at
/// once with the program's status.
struct SignalStateMachine {
    enum State: Equatable {
        /// The proxy is starting. Valid transitions: .serving (the proxy), .spawning (`run`).
        case starting
        /// The proxy serves. Valid transitions: .stopping.
        case serving
        /// SIGTERM or SIGINT asked the proxy to stop; it drains. Final.
        case stopping
        /// `run`'s program is being started; signals meanwhile wait for its PID. Valid transitions:
        /// .running, .ended (it could not be started).
        case spawning(pending: [ReceivedSignal], sharesProcessGroup: Bool)
        /// The program runs, unreaped until `.ended`, so its PID stays its own. Valid transitions: .ended.
        case running(pid: pid_t, sharesProcessGroup: Bool)
        /// The program ended with `status` (`run`'s exit status); the proxy drains. Final.
        case ended(status: Int32, sharedProcessGroup: Bool)
    }

    enum SignalAction: Equatable {
        /// End the process now with this status, removing its unix socket files; the proxy says why.
        case exit(status: Int32, saying: ExitReason?)
        /// Drain and stop the proxy.
        case stop
        /// Re-read the config file and apply it.
        case reload
        /// Open the audit log's file again (after logrotate moved it).
        case reopenLogs
        /// Pass the signal on to the program.
        case forward(Int32, to: pid_t)
        /// The program is being started: the signal is kept for it.
        case keep
        /// Nothing: SIGHUP while the proxy starts or drains, or the terminal sent it to the program too.
        case none
    }

    /// What the proxy logs as it exits on a signal.
    enum ExitReason: Equatable {
        case signalDuringStartUp
        /// The operator does not want to wait for the drain.
        case secondSignal
    }

    /// Whether the process wraps a program (`run`): its signals are then the program's.
    let wrapsProgram: Bool
    private(set) var state = State.starting

    init(wrapsProgram: Bool) {
        self.wrapsProgram = wrapsProgram
    }

    mutating func signalReceived(_ signal: ReceivedSignal) -> SignalAction {
        switch self.state {
        case .starting:
            if self.wrapsProgram { return .exit(status: 128 + signal.number, saying: nil) }
            // A rotation while the proxy starts: the file it is about to open is the new one.
            if signal.number == SIGHUP || signal.number == SIGUSR1 { return .none }
            return .exit(status: 0, saying: .signalDuringStartUp)
        case .serving:
            if signal.number == SIGHUP { return .reload }
            if signal.number == SIGUSR1 { return .reopenLogs }
            self.state = .stopping
            return .stop
        case .stopping:
            if signal.number == SIGHUP { return .none }
            if signal.number == SIGUSR1 { return .reopenLogs }
            return .exit(status: 1, saying: .secondSignal)
        case .spawning(var pending, let shares):
            if shares && signal.isFromKernel { return .none }
            pending.append(signal)
            self.state = .spawning(pending: pending, sharesProcessGroup: shares)
            return .keep
        case .running(let pid, let shares):
            if shares && signal.isFromKernel { return .none }
            return .forward(signal.number, to: pid)
        case .ended(let status, let shared):
            // The Ctrl-C that ended the program reaches `run` too, maybe only now: not a second request.
            if shared && signal.isFromKernel { return .none }
            return .exit(status: status, saying: nil)
        }
    }

    /// The proxy (without a program) listens.
    mutating func proxyStarted() {
        guard case .starting = self.state, !self.wrapsProgram else {
            preconditionFailure("Invalid state: \(self.state)")
        }
        self.state = .serving
    }

    /// `run`'s proxy listens; its program is about to be started.
    mutating func spawnStarting(sharesProcessGroup: Bool) {
        guard case .starting = self.state, self.wrapsProgram else {
            preconditionFailure("Invalid state: \(self.state)")
        }
        self.state = .spawning(pending: [], sharesProcessGroup: sharesProcessGroup)
    }

    /// The program runs as `pid`; returns the signals that came while it was being started, to pass on.
    mutating func childStarted(pid: pid_t) -> [Int32] {
        guard case .spawning(let pending, let shares) = self.state else {
            preconditionFailure("Invalid state: \(self.state)")
        }
        self.state = .running(pid: pid, sharesProcessGroup: shares)
        return pending.map(\.number)
    }

    /// The program could not be started; `run` stops the proxy and exits with `status`.
    mutating func spawnFailed(status: Int32) {
        guard case .spawning(_, let shares) = self.state else { preconditionFailure("Invalid state: \(self.state)") }
        self.state = .ended(status: status, sharedProcessGroup: shares)
    }

    /// The program ended (it is not reaped yet: a signal decided before this is still its own).
    mutating func childEnded(status: Int32) {
        guard case .running(_, let shares) = self.state else { preconditionFailure("Invalid state: \(self.state)") }
        self.state = .ended(status: status, sharedProcessGroup: shares)
    }
}
