import BearerCore
import Glibc

/// Threads for work that blocks: taking a file lock, `getaddrinfo`, waiting for a token command.
///
/// Never on an event loop, and not on Dispatch's global queue either: that queue has about one
/// thread per core, and work blocked there delays everything queued behind it until Dispatch decides
/// to add a thread — about a second, longer than a refresh may take. (Seen: two blocked callers on a
/// 2-core machine held back a token request for 0.95 s.) The pool's threads start on first use and
/// live as long as the process; tasks run in the order they were queued.
///
/// A test on a stepped loop gives its components a settling pool instead (`init(settlingOn:)`):
/// no thread; each task runs on the test's thread when the loop has settled, one at a time, in the
/// order queued, so that what blocking work does and when its answer comes back does not depend
/// on the machine.
package final class BlockingWorkPool: @unchecked Sendable {
    /// The pool the proxy's components share.
    package static let shared = BlockingWorkPool(threadCount: 8, name: "bearer-blocking")

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Guarded by `mutex`.
    private var tasks: [@Sendable () -> Void] = []
    private var taskIndex = 0
    /// A settling pool's loop (nil: the pool has threads).
    private let settlingLoop: EventLoop?

    /// A pool whose tasks the stepped `loop` runs when it settles (`EventLoop.runUntilQuiescent`).
    package init(settlingOn loop: EventLoop) {
        precondition(loop.isStepped, "a settling pool runs on a stepped loop (EventLoop.stepped)")
        self.settlingLoop = loop
    }

    package init(threadCount: Int, name: String) {
        precondition(threadCount > 0)
        self.settlingLoop = nil
        self.mutex.initialize(to: pthread_mutex_t())
        self.condition.initialize(to: pthread_cond_t())
        pthread_mutex_init(self.mutex, nil)
        pthread_cond_init(self.condition, nil)
        for index in 0..<threadCount {
            let thread = spawnThread(name: "\(name)-\(index)") { [self] in self.work() }
            pthread_detach(thread)
        }
    }

    /// Runs `task` on one of the pool's threads, soon. Safe from any thread.
    package func execute(_ task: @escaping @Sendable () -> Void) {
        if let loop = self.settlingLoop {
            loop.executeWhenSettled(task)
            return
        }
        pthread_mutex_lock(self.mutex)
        self.tasks.append(task)
        pthread_cond_signal(self.condition)
        pthread_mutex_unlock(self.mutex)
    }

    private func work() {
        while true {
            pthread_mutex_lock(self.mutex)
            while self.taskIndex == self.tasks.count {
                pthread_cond_wait(self.condition, self.mutex)
            }
            let task = self.tasks[self.taskIndex]
            self.taskIndex += 1
            if self.taskIndex == self.tasks.count {
                self.tasks.removeAll(keepingCapacity: true)
                self.taskIndex = 0
            }
            pthread_mutex_unlock(self.mutex)
            task()
        }
    }
}
