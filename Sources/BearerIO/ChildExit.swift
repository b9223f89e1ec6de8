import BearerCore
import CBearerLinux
import Dispatch
import Glibc

/// A child's end as an event, waited for with a deadline.
///
/// A pidfd (`pidfd_open`, Linux 5.3) turns readable when the child ends, and poll(2) waits on it until
/// the deadline. Where the kernel or a sandbox refuses pidfd_open, a thread of its own blocks in
/// waitid(2) and signals. Either way a waiter wakes when the child ends or the deadline passes, never
/// to look again a few milliseconds later.
///
/// The child is never reaped here (`WNOWAIT`): its owner reaps it once it is done with the PID, so a
/// signal sent meanwhile cannot reach a process that got the PID after it. Make one right after the
/// spawn, while the child is certainly unreaped.
package final class ChildExit: Sendable {
    private let pid: pid_t
    private let event: Event

    private enum Event {
        /// Readable once the child has ended.
        case pidfd(Int32)
        /// The waitid thread's finding, and its signal; passed on by each waiter it wakes.
        case thread(Locked<ChildTermination?>, DispatchSemaphore)
    }

    /// `usesPIDFD` false: the thread, as where pidfd_open is refused (tests of that way).
    package init(pid: pid_t, usesPIDFD: Bool = true) {
        self.pid = pid
        let fd = usesPIDFD ? cbl_pidfd_open(pid) : -1
        if fd >= 0 {
            self.event = .pidfd(fd)
            return
        }
        let seen = Locked<ChildTermination?>(nil)
        let ended = DispatchSemaphore(value: 0)
        self.event = .thread(seen, ended)
        let thread = spawnThread(name: "child-\(pid)") {
            // nil when the owner reaped the child first (it saw the end itself): it waits no more either.
            let termination = ChildTermination(waitingFor: pid)
            seen.withLock { $0 = termination }
            ended.signal()
        }
        pthread_detach(thread)
    }

    deinit {
        if case .pidfd(let fd) = self.event { close(fd) }
    }

    /// How the child ended, once it has, waiting at most until `deadline`; nil if it still runs then.
    package func wait(until deadline: Instant) -> ChildTermination? {
        switch self.event {
        case .pidfd(let fd):
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // The time left is computed on each try (a signal must not restart the whole wait), in
            // whole milliseconds rounded up: never waking before the deadline.
            _ = try? SystemCall.blocking("poll") {
                let nanoseconds = max(0, (deadline - Instant.now()).nanoseconds)
                return poll(&descriptor, 1, Int32(clamping: (nanoseconds + 999_999) / 1_000_000))
            }
            // Readable, or the deadline: either way waitid says whether it has ended.
            return ChildTermination(waitingFor: self.pid, flags: WNOHANG)
        case .thread(let seen, let ended):
            guard ended.wait(until: deadline) else { return nil }
            ended.signal()
            return seen.withLock { $0 }
        }
    }

}
