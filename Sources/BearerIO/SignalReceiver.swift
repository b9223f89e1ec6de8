import BearerCore
import Glibc

/// A signal the receiver thread took, and who sent it.
package struct ReceivedSignal: Equatable, Sendable {
    package var number: Int32
    /// `si_code == SI_KERNEL`: the kernel sent it to a whole process group — a terminal's Ctrl-C,
    /// Ctrl-\ or hangup reaches every process of the foreground group at once. Otherwise a process
    /// sent it with kill(2) (`SI_USER`, `senderPID` says who) or sigqueue(3).
    package var isFromKernel: Bool
    package var senderPID: pid_t

    package init(number: Int32, isFromKernel: Bool, senderPID: pid_t = 0) {
        self.number = number
        self.isFromKernel = isFromKernel
        self.senderPID = senderPID
    }

    package var name: String {
        switch self.number {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        case SIGQUIT: "SIGQUIT"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        default: "signal \(self.number)"
        }
    }
}

/// Takes signals on a thread of its own, one at a time, in the order they are pending.
///
/// The signals are blocked in the calling thread before anything else makes a thread (create the
/// receiver first thing in `main`: threads inherit the mask, and a log writer's thread would
/// otherwise take a SIGINT and die of it), and one thread takes them with `sigwaitinfo`: none is
/// lost, none lands in a thread in the middle of something, and each comes with `si_code`, which
/// tells a terminal's signal to the whole group from a `kill` meant for this process alone. A signal
/// this process ignores (`nohup`'s SIGHUP) stays ignored: the kernel discards it before it could be
/// waited for.
package struct SignalReceiver: Sendable {
    private let signals: [Int32]

    /// Blocks `signals` in the calling thread.
    package init(blocking signals: [Int32]) {
        self.signals = signals
        var set = Self.set(of: signals)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Starts the thread that takes the signals and hands each to `received`, on that thread.
    package func start(name: String = "signals", _ received: @escaping @Sendable (ReceivedSignal) -> Void) {
        let signals = self.signals
        _ = spawnThread(name: name) {
            var set = Self.set(of: signals)
            while true {
                var info = siginfo_t()
                // Retried when a signal outside the set was handled meanwhile (EINTR).
                guard let number = try? SystemCall.blocking("sigwaitinfo", { sigwaitinfo(&set, &info) }) else {
                    continue
                }
                received(
                    ReceivedSignal(
                        number: number,
                        isFromKernel: info.si_code == SI_KERNEL,
                        senderPID: info.si_code == SI_USER ? info._sifields._kill.si_pid : 0
                    )
                )
            }
        }
    }

    private static func set(of signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        return set
    }
}
