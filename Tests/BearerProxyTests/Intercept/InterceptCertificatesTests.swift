import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerCrypto
@testable import BearerProxy

/// Issuance work held until the test lets it run: what "concurrent" means, made exact.
final class HeldIssuances: Sendable {
    private let tasks = Locked<[@Sendable () -> Void]>([])

    var count: Int { self.tasks.withLock { $0.count } }

    func enqueue(_ task: @escaping @Sendable () -> Void) {
        self.tasks.withLock { $0.append(task) }
    }

    /// Runs what is queued now (not what those tasks queue).
    func runAll() {
        let queued = self.tasks.withLock { tasks in
            defer { tasks.removeAll() }
            return tasks
        }
        for task in queued { task() }
    }
}

/// A wall clock the test moves.
final class ManualWallClock: Sendable {
    private let seconds: Locked<Int64>
    init(_ start: Int64) { self.seconds = Locked(start) }
    func now() -> Int64 { self.seconds.withLock { $0 } }
    func advance(days: Int64) { self.seconds.withLock { $0 += days * 86_400 } }
}

@Suite struct InterceptCertificatesTests {
    let clock = ManualWallClock(wallClockEpochSeconds())
    let held = HeldIssuances()

    func certificates(
        _ hosts: String = "api.test, 127.0.0.1, *.corp.test",
        capacity: Int = 8
    ) throws
        -> InterceptCertificates
    {
        let directory = temporaryCADirectory()
        let (ca, _) = try LocalCA.open(
            CAFiles(directory: directory),
            permitting: patterns(hosts),
            now: self.clock.now()
        )
        let clock = self.clock
        let held = self.held
        return InterceptCertificates(
            authority: ca,
            rootFile: CAFiles(directory: directory).root,
            capacity: capacity,
            wallClock: { clock.now() },
            runIssuance: { held.enqueue($0) },
            logger: .silent
        )
    }

    /// Asks for `host` from `loop` and collects the results.
    func request(
        _ certificates: InterceptCertificates,
        _ host: String,
        on loop: EventLoop,
        into results: Locked<[Result<TLSContext, LeafIssuanceError>]>
    ) {
        loop.execute {
            certificates.context(forHost: host, on: loop) { result in
                loop.assertInEventLoop()
                results.withLock { $0.append(result) }
            }
        }
    }

    @Test func concurrentFirstRequestsForOneHostShareOneIssuance() throws {
        let certificates = try self.certificates()
        let results = Locked<[Result<TLSContext, LeafIssuanceError>]>([])
        for index in 0..<20 { self.request(certificates, "api.test", on: mockGroup.loops[index % 2], into: results) }
        #expect(waitUntil { self.held.count == 1 && certificates.cachedContext(forHost: "api.test") == nil })
        // Every request is in before the one issuance runs (each was made on its loop before the count settled).
        #expect(waitUntil { mockGroup.loops.allSatisfy { loop in Self.drained(loop) } })
        self.held.runAll()
        #expect(waitUntil { results.withLock { $0.count } == 20 })
        let contexts = results.withLock { $0 }.compactMap { try? $0.get() }
        #expect(contexts.count == 20)
        #expect(Set(contexts.map(ObjectIdentifier.init)).count == 1)
        #expect(certificates.leavesIssued == 1)
        #expect(certificates.cachedContext(forHost: "api.test") === contexts.first)
        #expect(self.held.count == 0)
    }

    @Test func eachHostHasItsOwnLeaf() throws {
        let certificates = try self.certificates()
        let results = Locked<[Result<TLSContext, LeafIssuanceError>]>([])
        for host in ["api.test", "a.corp.test", "127.0.0.1"] {
            self.request(certificates, host, on: mockGroup.loops[0], into: results)
        }
        #expect(waitUntil { self.held.count == 3 })
        self.held.runAll()
        #expect(waitUntil { results.withLock { $0.count } == 3 })
        #expect(certificates.leavesIssued == 3)
        let cached = ["api.test", "a.corp.test", "127.0.0.1"].compactMap { certificates.cachedContext(forHost: $0) }
        #expect(Set(cached.map(ObjectIdentifier.init)).count == 3)
    }

    @Test func aHostOutsideTheConstraintsGetsAnErrorAndNoLeaf() throws {
        let certificates = try self.certificates()
        let results = Locked<[Result<TLSContext, LeafIssuanceError>]>([])
        self.request(certificates, "other.test", on: mockGroup.loops[0], into: results)
        self.request(certificates, "bad host", on: mockGroup.loops[0], into: results)
        #expect(waitUntil { self.held.count == 1 })
        self.held.runAll()
        #expect(waitUntil { results.withLock { $0.count } == 2 })
        let errors = results.withLock { $0 }.compactMap { result -> String? in
            guard case .failure(let error) = result else { return nil }
            return error.description
        }
        #expect(
            Set(errors) == [
                "cannot make a certificate for 'bad host'",
                "the local CA's name constraints do not permit other.test (bearer-proxy ca --renew)",
            ]
        )
        #expect(certificates.leavesIssued == 0)
        // A failure is not cached: the next request tries again.
        self.request(certificates, "other.test", on: mockGroup.loops[0], into: results)
        #expect(waitUntil { self.held.count == 1 })
    }

    @Test func aLeafIsRenewedInTheBackgroundAheadOfItsExpiry() throws {
        let certificates = try self.certificates()
        let results = Locked<[Result<TLSContext, LeafIssuanceError>]>([])
        self.request(certificates, "api.test", on: mockGroup.loops[0], into: results)
        #expect(waitUntil { self.held.count == 1 })
        self.held.runAll()
        #expect(waitUntil { results.withLock { $0.count } == 1 })
        let first = try #require(certificates.cachedContext(forHost: "api.test"))

        self.clock.advance(days: 19)
        #expect(certificates.cachedContext(forHost: "api.test") === first)
        // Two thirds of 30 days: the hot path sends the tunnel to the slow path, which still gets the
        // old leaf at once, and one renewal starts.
        self.clock.advance(days: 2)
        #expect(certificates.cachedContext(forHost: "api.test") == nil)
        self.request(certificates, "api.test", on: mockGroup.loops[0], into: results)
        self.request(certificates, "api.test", on: mockGroup.loops[1], into: results)
        #expect(waitUntil { results.withLock { $0.count } == 3 })
        #expect(results.withLock { $0 }.allSatisfy { (try? $0.get()) === first })
        #expect(self.held.count == 1)
        self.held.runAll()
        let renewed = try #require(certificates.cachedContext(forHost: "api.test"))
        #expect(renewed !== first)
        #expect(certificates.leavesIssued == 2)

        // A leaf past its expiry is never handed out: the request waits for a new one.
        self.clock.advance(days: 31)
        self.request(certificates, "api.test", on: mockGroup.loops[0], into: results)
        #expect(waitUntil { self.held.count == 1 })
        #expect(results.withLock { $0.count } == 3)
        self.held.runAll()
        #expect(waitUntil { results.withLock { $0.count } == 4 })
        #expect(certificates.leavesIssued == 3)
    }

    @Test func theCacheKeepsAtMostItsCapacityAndEvictsTheLeastRecentlyUsed() throws {
        let certificates = try self.certificates(capacity: 2)
        let results = Locked<[Result<TLSContext, LeafIssuanceError>]>([])
        func issue(_ host: String) {
            let before = results.withLock { $0.count }
            self.request(certificates, host, on: mockGroup.loops[0], into: results)
            #expect(waitUntil { self.held.count == 1 })
            self.held.runAll()
            #expect(waitUntil { results.withLock { $0.count } == before + 1 })
        }
        issue("a.corp.test")
        issue("b.corp.test")
        #expect(certificates.cachedContext(forHost: "a.corp.test") != nil)  // a is now the more recent
        issue("c.corp.test")
        #expect(certificates.cachedContext(forHost: "b.corp.test") == nil)
        #expect(certificates.cachedContext(forHost: "a.corp.test") != nil)
        #expect(certificates.cachedContext(forHost: "c.corp.test") != nil)
        #expect(certificates.leavesIssued == 3)
    }

    /// Whether every task queued on `loop` before this call has run.
    static func drained(_ loop: EventLoop) -> Bool {
        let done = Locked(false)
        loop.execute { done.withLock { $0 = true } }
        return waitUntil { done.withLock { $0 } }
    }
}

/// A leaf the proxy serves, seen by a TLS client that is not our code.
@Suite struct InterceptedLeafTests {
    @Test(.requires(.curl))
    func curlTrustingOnlyCaPemAcceptsALeafAndGetsTheIntermediateInTheHandshake() throws {
        let files = CAFiles(directory: temporaryCADirectory())
        let ca = try LocalCA.open(
            files,
            permitting: patterns("api.test, 127.0.0.1, *.corp.test"),
            now: wallClockEpochSeconds()
        ).ca
        for host in ["api.test", "127.0.0.1"] {
            let certificates = InterceptCertificates(authority: ca, rootFile: files.root, logger: .silent)
            let context = try #require(Self.issue(certificates, host))
            let upstream = MockUpstream(group: mockGroup, tls: context)
            try upstream.start()
            defer { upstream.stop() }
            let outcome = try ExternalTools.curl(trusting: files.root, host: host, port: upstream.port)
            #expect(outcome.standardOutput == "200", "\(host): \(outcome.standardError)")
            // ca.pem is all curl knows: the intermediate came in the handshake.
            #expect(outcome.standardError.contains("ALPN: server accepted http/1.1"), "\(outcome.standardError)")
        }
    }

    /// The context for `host`, issued on the blocking pool and handed back on a loop.
    static func issue(_ certificates: InterceptCertificates, _ host: String) -> TLSContext? {
        let result = Locked<TLSContext?>(nil)
        let loop = mockGroup.loops[0]
        loop.execute {
            certificates.context(forHost: host, on: loop) { outcome in result.withLock { $0 = try? outcome.get() } }
        }
        _ = waitUntil { result.withLock { $0 } != nil }
        return result.withLock { $0 }
    }
}
