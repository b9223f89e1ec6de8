import Glibc

/// A value behind a pthread mutex: the shared state of the few objects several threads touch.
///
/// Used instead of `Synchronization.Mutex` because Swift's `Mutex` locks with a futex that
/// ThreadSanitizer cannot see, so every access it protects is reported as a race; pthread mutexes
/// are intercepted, which keeps `swift test --sanitize=thread` meaningful. Uncontended, both cost
/// about the same (a few atomic instructions).
package final class Locked<Value>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    package init(_ value: Value) {
        self.value = value
        self.mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(self.mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }

    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        return try body(&self.value)
    }
}
