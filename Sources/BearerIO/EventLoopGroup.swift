import BearerCore
import CBearerLinux
import Glibc
import Synchronization

/// A fixed set of event loops, one thread each.
package final class EventLoopGroup: Sendable {
    package let loops: [EventLoop]

    package init(
        count: Int,
        name: String = "bearer-loop",
        clock: any TimeSource = SystemTimeSource(),
        io: IOBackend = .epoll
    ) {
        precondition(count > 0)
        // OpenSSL writes to sockets with write(2), which raises SIGPIPE on a connection the peer
        // closed; the error must come back as EPIPE instead of killing the process.
        signal(SIGPIPE, SIG_IGN)
        self.loops = (0..<count).map { EventLoop(index: $0, clock: clock, io: io) }
        for loop in self.loops {
            loop.start(name: "\(name)-\(loop.index)")
        }
    }

    /// A group of one stepped loop (`EventLoop.stepped`), which the calling thread runs: for tests
    /// that start components made for a group (the proxy, the mock servers) on it.
    package init(stepped loop: EventLoop) {
        precondition(loop.isStepped, "a group of a stepped loop")
        self.loops = [loop]
    }

    package func shutdown() {
        for loop in self.loops {
            loop.shutdown()
        }
    }

    /// The number of cores this process may run on.
    package static var coreCount: Int {
        let count = Int(cbl_cpu_count())
        return count > 0 ? count : max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }
}
