/// One side's HPACK dynamic table (RFC 7541 §2.3.2, §4): newest entry first, each entry's size its
/// name and value lengths plus 32, the oldest evicted while the total passes the maximum.
///
/// The entries' names and values live in one byte array (`bytes`), each entry two ranges of it, so
/// that looking an entry up or copying it out touches no array of its own: with two arrays an entry,
/// every field decoded from the table retained and released both (a sixth of a request's decoding).
/// Entries are kept newest last; the evicted prefix, entries and bytes, is dropped in batches so that
/// an eviction does not shift the arrays each time.
struct DynamicTable: Equatable {
    struct Entry: Equatable {
        var name: Range<Int>
        var value: Range<Int>
        var size: Int { self.name.count + self.value.count + 32 }
    }

    /// The names and values of the entries, oldest first, after an evicted prefix.
    private(set) var bytes: [UInt8] = []
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

    /// The entry at dynamic index `index`, 1 being the newest: its name and value as ranges of `bytes`.
    subscript(index: Int) -> Entry {
        self.entries[self.entries.count - index]
    }

    /// The table's entries newest first, as RFC 7541 Appendix C lists them (tests, diagnostics).
    var newestFirst: [(name: [UInt8], value: [UInt8])] {
        self.entries[self.oldest...].reversed().map { (Array(self.bytes[$0.name]), Array(self.bytes[$0.value])) }
    }

    /// Adds an entry, evicting the oldest ones to make room; an entry larger than the table empties it
    /// and is not added (§4.4).
    mutating func insert(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        let entrySize = name.count + value.count + 32
        self.evict(toFit: self.maxSize - entrySize)
        guard entrySize <= self.maxSize else { return }
        let nameStart = self.bytes.count
        self.bytes.append(contentsOf: name)
        let valueStart = self.bytes.count
        self.bytes.append(contentsOf: value)
        self.entries.append(Entry(name: nameStart..<valueStart, value: valueStart..<self.bytes.count))
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
            self.bytes.removeAll(keepingCapacity: true)
            self.oldest = 0
            return
        }
        // The evicted bytes are dropped once they outnumber the live ones (and a table's worth), or the
        // evicted entries do: the arrays stay within about twice what the table holds.
        let deadBytes = self.entries[self.oldest].name.lowerBound
        let manyDeadEntries = self.oldest > 32 && self.oldest * 2 > self.entries.count
        let manyDeadBytes = deadBytes > max(self.maxSize, 4096) && deadBytes * 2 > self.bytes.count
        guard manyDeadEntries || manyDeadBytes else { return }
        self.entries.removeFirst(self.oldest)
        self.oldest = 0
        self.bytes.removeFirst(deadBytes)
        for position in self.entries.indices {
            let entry = self.entries[position]
            self.entries[position] = Entry(
                name: entry.name.lowerBound - deadBytes..<entry.name.upperBound - deadBytes,
                value: entry.value.lowerBound - deadBytes..<entry.value.upperBound - deadBytes
            )
        }
    }
}
