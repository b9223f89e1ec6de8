import Testing

@testable import BearerProxy

/// The leaf cache's machine, with strings for leaves and numbers for waiters: no certificates, no
/// threads, time as an input.
@Suite struct LeafCacheTests {
    typealias Cache = LeafCache<String, Int>

    /// Issues `leaf` for `host` at `now`, valid 30 "seconds": renewed from 20, expired from 29.
    func issued(_ cache: inout Cache, _ host: String, _ leaf: String, now: Int64 = 0) -> [Int] {
        cache.leafIssued(leaf, for: host, renewAfter: now + 20, expiresAt: now + 29)
    }

    @Test func theFirstRequestIssuesAndTheOthersWaitForIt() {
        var cache = Cache(capacity: 4)
        #expect(cache.freshLeaf(for: "a", now: 0) == nil)
        #expect(cache.leafRequested(for: "a", by: 1, now: 0).isIssue)
        #expect(cache.leafRequested(for: "a", by: 2, now: 0).isWait)
        #expect(cache.leafRequested(for: "a", by: 3, now: 1).isWait)
        #expect(cache.leafRequested(for: "b", by: 4, now: 1).isIssue)
        #expect(self.issued(&cache, "a", "leaf-a") == [1, 2, 3])
        #expect(cache.freshLeaf(for: "a", now: 2) == "leaf-a")
        #expect(cache.leafRequested(for: "a", by: 5, now: 2).leaf == "leaf-a")
        #expect(cache.issuanceFailed(for: "b") == [4])
        #expect(cache.issuing.isEmpty)
        // A failure is not kept: the next request issues again.
        #expect(cache.leafRequested(for: "b", by: 6, now: 3).isIssue)
    }

    @Test func aLeafDueForRenewalIsStillHandedOutWhileOneRenewalRuns() {
        var cache = Cache(capacity: 4)
        _ = self.issued(&cache, "a", "old")
        #expect(cache.freshLeaf(for: "a", now: 19) == "old")
        #expect(cache.freshLeaf(for: "a", now: 20) == nil)
        guard case .useAndRenew("old") = cache.leafRequested(for: "a", by: 1, now: 20) else {
            Issue.record("expected the old leaf and a renewal")
            return
        }
        guard case .use("old") = cache.leafRequested(for: "a", by: 2, now: 21) else {
            Issue.record("expected the old leaf, and no second renewal")
            return
        }
        #expect(cache.issuing["a"] == [])
        #expect(cache.leafIssued("new", for: "a", renewAfter: 40, expiresAt: 49) == [])
        #expect(cache.freshLeaf(for: "a", now: 21) == "new")
    }

    @Test func anExpiredLeafIsNeverHandedOut() {
        var cache = Cache(capacity: 4)
        _ = self.issued(&cache, "a", "old")
        #expect(cache.leafRequested(for: "a", by: 1, now: 29).isIssue)
        #expect(cache.leafRequested(for: "a", by: 2, now: 29).isWait)
        #expect(self.issued(&cache, "a", "new", now: 29) == [1, 2])
    }

    @Test func aFullCacheEvictsTheLeastRecentlyUsedHost() {
        var cache = Cache(capacity: 3)
        _ = self.issued(&cache, "a", "leaf-a")
        _ = self.issued(&cache, "b", "leaf-b")
        _ = self.issued(&cache, "c", "leaf-c")
        #expect(cache.freshLeaf(for: "a", now: 1) == "leaf-a")
        _ = cache.leafRequested(for: "b", by: 1, now: 1)
        _ = self.issued(&cache, "d", "leaf-d")
        #expect(Set(cache.entries.keys) == ["a", "b", "d"])
        // Replacing a kept host's leaf evicts nobody.
        _ = self.issued(&cache, "a", "leaf-a2")
        #expect(Set(cache.entries.keys) == ["a", "b", "d"])
        #expect(cache.entries.count == 3)
    }
}

extension LeafCache.RequestAction {
    var isIssue: Bool {
        if case .issue = self { return true }
        return false
    }
    var isWait: Bool {
        if case .wait = self { return true }
        return false
    }
    var leaf: Leaf? {
        if case .use(let leaf) = self { return leaf }
        return nil
    }
}
