import Synchronization

/// Request body bytes held for replay across every connection, bounded by `replay_memory_limit`.
///
/// A body is kept until its response status is known, so that it can be sent again after a refresh;
/// thousands of parked uploads must not take the process's memory with them. Shared by all loops
/// (an atomic counter, no lock).
package final class ReplayMemoryBudget: Sendable {
    package let limit: Int
    private let inUse = Atomic<Int>(0)

    package init(limit: Int) {
        self.limit = limit
    }

    package var bytesInUse: Int { self.inUse.load(ordering: .relaxed) }

    /// Takes `bytes` from the budget; false (and nothing taken) when that would pass the limit.
    func reserve(_ bytes: Int) -> Bool {
        let total = self.inUse.add(bytes, ordering: .relaxed).newValue
        if total > self.limit {
            self.inUse.subtract(bytes, ordering: .relaxed)
            return false
        }
        return true
    }

    func release(_ bytes: Int) {
        if bytes > 0 { self.inUse.subtract(bytes, ordering: .relaxed) }
    }
}
