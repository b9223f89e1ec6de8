/// One side's HPACK dynamic table (RFC 7541 §2.3.2, §4): newest entry first, each entry's size its
/// name and value lengths plus 32, the oldest evicted while the total passes the maximum.
///
/// Entries live in an array, newest last, with the evicted prefix dropped in batches so that an
/// eviction does not shift the array each time.
struct DynamicTable: Equatable {
    struct Entry: Equatable {
        var name: [UInt8]
        var value: [UInt8]
        var size: Int { self.name.count + self.value.count + 32 }
    }

    private var entries: [Entry] = []
    private var oldest = 0
    /// The sum of the entries' sizes (§4.1).
    private(set) var size = 0
    /// The size the table must stay within: the last size update (§4.2).
    private(set) var maxSize: Int

    init(maxSize: Int) {
        self.maxSize = maxSize
    }

    var count: Int { self.entries.count - self.oldest }

    /// The entry at dynamic index `index`, 1 being the newest.
    subscript(index: Int) -> Entry {
        self.entries[self.entries.count - index]
    }

    /// The table's entries newest first, as RFC 7541 Appendix C lists them (tests, diagnostics).
    var newestFirst: [Entry] { Array(self.entries[self.oldest...].reversed()) }

    /// Adds an entry, evicting the oldest ones to make room; an entry larger than the table empties it
    /// and is not added (§4.4).
    mutating func insert(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        let entrySize = name.count + value.count + 32
        self.evict(toFit: self.maxSize - entrySize)
        guard entrySize <= self.maxSize else { return }
        self.entries.append(Entry(name: Array(name), value: Array(value)))
        self.size += entrySize
    }

    /// Applies a dynamic table size update (§4.3, §6.3).
    mutating func resize(to maxSize: Int) {
        self.maxSize = maxSize
        self.evict(toFit: maxSize)
    }

    private mutating func evict(toFit target: Int) {
        while self.size > max(target, 0), self.oldest < self.entries.count {
            self.size -= self.entries[self.oldest].size
            self.oldest += 1
        }
        if self.oldest == self.entries.count {
            self.entries.removeAll(keepingCapacity: true)
            self.oldest = 0
        } else if self.oldest > 32 && self.oldest * 2 > self.entries.count {
            self.entries.removeFirst(self.oldest)
            self.oldest = 0
        }
    }
}
