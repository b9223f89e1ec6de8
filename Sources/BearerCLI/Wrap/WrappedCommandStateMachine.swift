import BearerIO
import Glibc

/// What `bearer-proxy run` does with a signal, from the proxy's start to its stop.
///
/// Signals sent to `run` with kill(2) are meant for the program it wraps and are passed on; `run`
/// itself keeps serving until the program exits. A signal the kernel sent to the whole foreground
/// process group (the terminal's Ctrl-C, Ctrl-\, hangup: `si_code` SI_KERNEL) has reached the
/// program already when it shares `run`'s group, and is not sent a second time. Before the program
/// runs, a signal ends `run` (nothing is in flight); after it exited, one sent with kill(2) ends the
/// drain at once.
struct WrappedCommandStateMachine {
    enum State: Equatable {
        /// The proxy is starting. Valid transitions: .spawning.
        case startingProxy
        /// The program is being started; signals meanwhile wait for its PID. Valid transitions:
        /// .running, .ended (it could not be started).
        case spawning(pending: [ReceivedSignal], sharesProcessGroup: Bool)
        /// The program runs, unreaped until `.ended`, so its PID stays its own. Valid transitions: .ended.
        case running(pid: pid_t, sharesProcessGroup: Bool)
        /// The program ended with `status` (`run`'s exit status); the proxy drains. Final.
        case ended(status: Int32, sharedProcessGroup: Bool)
    }

    enum SignalAction: Equatable {
        /// Pass the signal on to the program.
        case forward(Int32, to: pid_t)
        /// The program is not running: end `run` now with this status.
        case exit(status: Int32)
        /// The program is being started: the signal is kept for it.
        case keep
        /// The terminal sent it to the program too.
        case none
    }

    private(set) var state = State.startingProxy

    mutating func signalReceived(_ signal: ReceivedSignal) -> SignalAction {
        switch self.state {
        case .startingProxy:
            return .exit(status: 128 + signal.number)
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
            return .exit(status: status)
        }
    }

    /// The proxy listens; the program is about to be started.
    mutating func spawnStarting(sharesProcessGroup: Bool) {
        guard case .startingProxy = self.state else { preconditionFailure("Invalid state: \(self.state)") }
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
