import CBearerLinux
import Glibc
import Synchronization

/// A fixed set of event loops, one thread each.
package final class EventLoopGroup: Sendable {
    package let loops: [EventLoop]
    private let nextIndex = Atomic<Int>(0)

    package init(count: Int, name: String = "bearer-loop") {
        precondition(count > 0)
        // OpenSSL writes to sockets with write(2), which raises SIGPIPE on a connection the peer
        // closed; the error must come back as EPIPE instead of killing the process.
        signal(SIGPIPE, SIG_IGN)
        self.loops = (0..<count).map { EventLoop(index: $0) }
        for loop in self.loops {
            loop.start(name: "\(name)-\(loop.index)")
        }
    }

    /// Loops in turn, for spreading work that has no loop of its own yet.
    package func next() -> EventLoop {
        let index = self.nextIndex.add(1, ordering: .relaxed).newValue
        return self.loops[index % self.loops.count]
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
