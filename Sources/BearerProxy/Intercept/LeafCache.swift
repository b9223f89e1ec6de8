/// Which hosts have a leaf certificate, and which are being issued one: the state of
/// `InterceptCertificates`, as a value (events in, actions out; no clock of its own, no I/O).
///
/// A leaf is used until `renewAfter`; from then until it expires a request still gets it, and starts
/// one renewal in the background, so no handshake waits for a renewal. An expired or missing leaf is
/// issued once for all who ask meanwhile: the first request starts the issuance, the others wait for
/// it. At most `capacity` hosts are kept; a new one beyond that evicts the least recently used.
struct LeafCache<Leaf, Waiter> {
    struct Entry {
        var leaf: Leaf
        /// Seconds since 1970 from which the leaf is renewed.
        var renewAfter: Int64
        /// Seconds since 1970 from which the leaf is no longer used at all (a little before its notAfter).
        var expiresAt: Int64
        /// When it was last used, on `useCounter`'s scale.
        var lastUse: UInt64
    }

    let capacity: Int
    private(set) var entries: [String: Entry] = [:]
    /// Hosts being issued a leaf, with who waits for it (empty for a background renewal).
    private(set) var issuing: [String: [Waiter]] = [:]
    /// Counts uses, to order entries by recency without reading a clock.
    private var useCounter: UInt64 = 0

    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    /// The hot path: the host's leaf before its renewal is due.
    mutating func freshLeaf(for host: String, now: Int64) -> Leaf? {
        guard let index = self.entries.index(forKey: host), now < self.entries.values[index].renewAfter else {
            return nil
        }
        self.useCounter &+= 1
        self.entries.values[index].lastUse = self.useCounter
        return self.entries.values[index].leaf
    }

    enum RequestAction {
        /// Hand this leaf to the waiter.
        case use(Leaf)
        /// Hand this leaf to the waiter, and start the host's renewal (nobody waits for it).
        case useAndRenew(Leaf)
        /// The waiter waits for the issuance in flight.
        case wait
        /// The waiter waits; start the host's issuance.
        case issue
    }

    mutating func leafRequested(for host: String, by waiter: Waiter, now: Int64) -> RequestAction {
        if let leaf = self.freshLeaf(for: host, now: now) { return .use(leaf) }
        if let index = self.entries.index(forKey: host), now < self.entries.values[index].expiresAt {
            self.useCounter &+= 1
            self.entries.values[index].lastUse = self.useCounter
            let leaf = self.entries.values[index].leaf
            if self.issuing[host] != nil { return .use(leaf) }
            self.issuing[host] = []
            return .useAndRenew(leaf)
        }
        if self.issuing[host] != nil {
            self.issuing[host]!.append(waiter)
            return .wait
        }
        self.issuing[host] = [waiter]
        return .issue
    }

    /// Keeps the new leaf (evicting the least recently used host when full); returns who waited for it.
    mutating func leafIssued(_ leaf: Leaf, for host: String, renewAfter: Int64, expiresAt: Int64) -> [Waiter] {
        if self.entries[host] == nil && self.entries.count >= self.capacity,
            let oldest = self.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
        {
            self.entries.removeValue(forKey: oldest)
        }
        self.useCounter &+= 1
        self.entries[host] = Entry(leaf: leaf, renewAfter: renewAfter, expiresAt: expiresAt, lastUse: self.useCounter)
        return self.issuing.removeValue(forKey: host) ?? []
    }

    /// Returns who waited; the next request tries again (a failure is not cached).
    mutating func issuanceFailed(for host: String) -> [Waiter] {
        self.issuing.removeValue(forKey: host) ?? []
    }
}
