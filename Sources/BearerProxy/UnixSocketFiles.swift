import BearerCore
import Glibc

/// The unix socket files this process created, so that whatever ends the process removes them.
///
/// A signal may end the process at any moment of start-up, on another thread than the one binding.
/// Creating a file and recording it happen under one lock, and so do removing them all and exiting:
/// a file is either not created yet, or recorded and removed. Nothing else is ever unlinked, so a
/// socket another process listens on is never touched.
package final class UnixSocketFiles: Sendable {
    private let paths = Locked<[String]>([])

    package init() {}

    /// Runs `create`, which binds a socket at `path` (nil: not a unix socket), and records the path
    /// when it succeeds.
    package func create<Result, Failure: Error>(
        at path: String?,
        _ create: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try self.paths.withLock { paths throws(Failure) -> Result in
            let result = try create()
            if let path { paths.append(path) }
            return result
        }
    }

    /// Removes the file at `path` if this process created it.
    package func remove(_ path: String) {
        self.paths.withLock { paths in
            guard let index = paths.firstIndex(of: path) else { return }
            unlink(path)
            paths.remove(at: index)
        }
    }

    /// Removes every file created so far.
    package func removeAll() {
        self.paths.withLock { paths in
            for path in paths { unlink(path) }
            paths.removeAll()
        }
    }

    /// Removes every file created so far and ends the process with `status`, holding the lock until
    /// the end, so that no file can be created after the removal.
    ///
    /// `_exit`, not `exit`: this runs on a signal thread while other threads work, and `exit` would run
    /// the process's exit handlers and destructors under their feet (a crash, not an exit). The log's
    /// queue is written out first (for a bounded time: a log nobody reads does not hold the exit).
    package func removeAllAndExit(_ status: Int32) -> Never {
        LogSink.standardError.flush()
        self.paths.withLock { paths -> Never in
            for path in paths { unlink(path) }
            _exit(status)
        }
    }
}
