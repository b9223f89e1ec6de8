import BearerCore

/// A timer scheduled on an event loop; cancel it with `EventLoop.cancel(_:)`. (Public only for
/// `TimerScheduler`.)
public struct TimerID: Hashable, Sendable {
    let raw: UInt64
}

/// A min-heap of deadlines; cancelled timers are dropped lazily when they reach the top.
struct TimerHeap {
    private struct Entry {
        var deadline: Instant
        var id: UInt64
    }

    private var entries: [Entry] = []
    private var actions: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    var isEmpty: Bool { self.actions.isEmpty }
    /// Timers armed and not cancelled.
    var count: Int { self.actions.count }

    mutating func schedule(at deadline: Instant, _ action: @escaping () -> Void) -> TimerID {
        let id = self.nextID
        self.nextID += 1
        self.actions[id] = action
        self.entries.append(Entry(deadline: deadline, id: id))
        self.siftUp(self.entries.count - 1)
        return TimerID(raw: id)
    }

    mutating func cancel(_ timer: TimerID) {
        self.actions[timer.raw] = nil
        if self.actions.isEmpty { self.entries.removeAll(keepingCapacity: true) }
    }

    /// The earliest deadline of a live timer.
    mutating func nextDeadline() -> Instant? {
        while let top = self.entries.first {
            if self.actions[top.id] != nil { return top.deadline }
            self.popTop()
        }
        return nil
    }

    /// Removes and returns the actions of every timer due at `now`, earliest first.
    mutating func popDue(now: Instant) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = self.entries.first, top.deadline <= now {
            self.popTop()
            if let action = self.actions.removeValue(forKey: top.id) { due.append(action) }
        }
        return due
    }

    private mutating func popTop() {
        let last = self.entries.removeLast()
        if !self.entries.isEmpty {
            self.entries[0] = last
            self.siftDown(0)
        }
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            if self.entries[parent].deadline <= self.entries[child].deadline { break }
            self.entries.swapAt(parent, child)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        let count = self.entries.count
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < count && self.entries[left].deadline < self.entries[smallest].deadline { smallest = left }
            if right < count && self.entries[right].deadline < self.entries[smallest].deadline { smallest = right }
            if smallest == parent { return }
            self.entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
