import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Testing

@testable import BearerConfig
@testable import BearerSession

/// A token endpoint that rotates refresh tokens and detects reuse, as identity providers do: a
/// refresh token spent twice revokes the whole family. Counts its calls.
final class RotatingTokenEndpoint: Sendable {
    private struct State {
        var calls = 0
        var spent: Set<String> = []
        var reuses = 0
        var next = 1
        var hangs = false
    }

    private let state = Locked(State())
    let waiter = EventWaiter()

    var calls: Int { self.state.withLock { $0.calls } }
    var reuses: Int { self.state.withLock { $0.reuses } }

    /// Calls after this one never answer (a holder stuck, then killed, mid-refresh).
    func hang() { self.state.withLock { $0.hangs = true } }

    var fetch: SessionStore.Fetch {
        { refreshToken, completion in
            let outcome = self.state.withLock { state -> TokenFetchOutcome? in
                state.calls += 1
                if state.hangs { return nil }
                let spent = refreshToken?.reveal() ?? "rt-0"
                if !state.spent.insert(spent).inserted { state.reuses += 1 }
                let number = state.next
                state.next += 1
                return .token(
                    FetchedToken(
                        accessToken: Secret("tok-\(number)"),
                        expiresIn: .seconds(3600),
                        refreshToken: Secret("rt-\(number)")
                    )
                )
            }
            self.waiter.signal()
            if let outcome { completion(outcome) }
        }
    }
}

/// One proxy's view of the fleet: a SessionStore with what it adopted and how its refreshes ended.
final class FleetMember: Sendable {
    let store: SessionStore
    private let adopted = Locked<[StoredSession]>([])
    private let results = Locked<[SessionStore.RefreshResult]>([])
    private let current = Locked<String?>(nil)
    let waiter = EventWaiter()

    init(
        _ endpoint: RedisEndpoint,
        name: String = "test",
        fallback: SessionStoreFallback = .local,
        lockTimeout: Duration = .seconds(5),
        logger: Logger = .silent
    ) {
        self.store = SessionStore(
            endpoint: endpoint,
            name: name,
            fallback: fallback,
            lockTimeout: lockTimeout,
            commandTimeout: .seconds(2),
            loop: redisTestGroup.loops[0],
            connector: OutboundConnector(tls: nil, connectTimeout: .seconds(2)),
            logger: logger
        )
        self.store.start { stored in
            self.current.withLock { $0 = stored.accessToken.reveal() }
            self.adopted.withLock { $0.append(stored) }
            self.waiter.signal()
        }
    }

    deinit { self.store.stop() }

    var adoptions: [StoredSession] { self.adopted.withLock { $0 } }
    var refreshResults: [SessionStore.RefreshResult] { self.results.withLock { $0 } }

    /// The token this member uses now: what its last refresh or adoption left it with.
    var currentToken: Secret<String>? { self.current.withLock { $0 }.map { Secret($0) } }

    func refresh(_ endpoint: RotatingTokenEndpoint) {
        self.refresh(endpoint, replacing: self.currentToken)
    }

    /// Refreshes because `rejected` was turned away. Tests of proxies rejected "together" take every
    /// member's token before the first refresh starts: read later, a member may already hold the
    /// token another one just published, and refreshing that would be a second, genuine expiry.
    func refresh(_ endpoint: RotatingTokenEndpoint, replacing rejected: Secret<String>?) {
        self.store.refresh(replacing: rejected, fetch: endpoint.fetch) { result in
            if let token = result.token { self.current.withLock { $0 = token } }
            self.results.withLock { $0.append(result) }
            self.waiter.signal()
        }
    }

    /// Waits (bounded) for `count` refresh results and returns the last one's access token.
    func waitForResults(_ count: Int) -> Bool {
        self.waiter.wait { self.refreshResults.count >= count }
    }

    /// Waits (bounded) until the store's status satisfies `condition` (status changes signal nothing: polled).
    func waitForStatus(_ condition: (SessionStoreStatus) -> Bool) -> Bool {
        waitUntil { condition(self.store.status) }
    }

    func waitUntilConnected() -> Bool {
        self.waitForStatus { $0.state == "connected" && $0.isSubscribed }
    }
}

extension SessionStore.RefreshResult {
    /// The token this result leaves the proxy with.
    var token: String? {
        switch self {
        case .adopted(let stored), .refreshed(let stored, _): stored.accessToken.reveal()
        case .fetchFailed, .fetchedAlone, .stopped: nil
        }
    }

    var isOwnRefresh: Bool {
        if case .refreshed = self { return true }
        return false
    }
}

/// The fleet protocol against a real Redis: several SessionStores in one process stand for several
/// proxies; the token endpoint is a counting fake with rotation and reuse detection.
@Suite(.requires(.redisServer))
struct SessionStoreTests {
    @Test func proxiesNeedingARefreshTogetherMakeOneTokenCall() throws {
        let redis = try startRedis()
        let endpoint = RotatingTokenEndpoint()
        let fleet = (0..<3).map { _ in FleetMember(.local(redis)) }
        for member in fleet { #expect(member.waitUntilConnected()) }
        let rejected = fleet.map(\.currentToken)
        for (member, token) in zip(fleet, rejected) { member.refresh(endpoint, replacing: token) }
        for member in fleet { #expect(member.waitForResults(1)) }
        #expect(endpoint.calls == 1)
        #expect(fleet.map { $0.refreshResults.last?.token } == ["tok-1", "tok-1", "tok-1"])
        #expect(fleet.filter { $0.refreshResults.last?.isOwnRefresh == true }.count == 1)
    }

    @Test func twentyRotationsNeverSpendARefreshTokenTwice() throws {
        let redis = try startRedis()
        let endpoint = RotatingTokenEndpoint()
        let fleet = (0..<3).map { _ in FleetMember(.local(redis)) }
        for member in fleet { #expect(member.waitUntilConnected()) }
        for round in 1...20 {
            // Every proxy sees its token rejected at about the same time.
            let rejected = fleet.map(\.currentToken)
            for (member, token) in zip(fleet, rejected) { member.refresh(endpoint, replacing: token) }
            for member in fleet { #expect(member.waitForResults(round)) }
            let tokens = Set(fleet.compactMap { $0.refreshResults.last?.token })
            #expect(tokens == ["tok-\(round)"], "round \(round)")
        }
        #expect(endpoint.calls == 20)
        #expect(endpoint.reuses == 0)
    }

    @Test func aProxyStartedLaterAdoptsTheStoredToken() throws {
        let redis = try startRedis()
        let endpoint = RotatingTokenEndpoint()
        let first = FleetMember(.local(redis))
        first.refresh(endpoint)
        #expect(first.waitForResults(1))
        let late = FleetMember(.local(redis))
        #expect(late.waiter.wait { !late.adoptions.isEmpty })
        #expect(late.adoptions.map { $0.accessToken.reveal() } == ["tok-1"])
        #expect(late.adoptions.first?.refreshToken?.reveal() == "rt-1")
        #expect(endpoint.calls == 1)
    }

    @Test func theOthersAdoptAPublishedTokenWithoutAskingForIt() throws {
        let redis = try startRedis()
        let endpoint = RotatingTokenEndpoint()
        let fleet = (0..<3).map { _ in FleetMember(.local(redis)) }
        for member in fleet { #expect(member.waitUntilConnected()) }
        fleet[0].refresh(endpoint)
        for member in fleet.dropFirst() {
            #expect(member.waiter.wait { member.adoptions.map { $0.accessToken.reveal() } == ["tok-1"] })
        }
        #expect(endpoint.calls == 1)
    }

    @Test func withoutPubSubPermissionTheOthersPollTheStore() throws {
        // An ACL user allowed the proxy's keys but no channel: SUBSCRIBE is refused, polling takes over.
        let redis = try startRedis(configuration: [
            "--user", "fleet", "on", ">pw", "~bearer-proxy:*", "resetchannels", "+@all",
        ])
        let endpoint = RotatingTokenEndpoint()
        let fleet = (0..<2).map { _ in FleetMember(.local(redis, password: "pw", username: "fleet")) }
        for member in fleet { #expect(member.waitForStatus { $0.state == "connected" }) }
        fleet[0].refresh(endpoint)
        #expect(fleet[0].waitForResults(1))
        #expect(fleet[1].waiter.wait { fleet[1].adoptions.map { $0.accessToken.reveal() } == ["tok-1"] })
        #expect(!fleet[1].store.status.isSubscribed)
    }

    /// docs/fleet.md's Redis user, copied from its fleet setup as a reader would: enough for every command
    /// the fleet sends (the write script's included), pub/sub included, and nothing else.
    @Test func theReadmesRedisUserIsAllTheFleetNeeds() throws {
        let readme = try String(
            contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/fleet.md").path,
            encoding: .utf8
        )
        let line = try #require(
            readme.split(separator: "\n").first { $0.hasPrefix("    user bearer-proxy on ") },
            "docs/fleet.md shows no Redis user for the fleet"
        )
        let words = line.split(separator: " ").dropFirst().map(String.init)
        let redis = try startRedis(configuration: ["--user"] + words + ["--user", "default", "off"])
        let endpoint = RedisEndpoint.local(redis, password: "change-this-password", username: "bearer-proxy")
        let tokens = RotatingTokenEndpoint()
        let fleet = (0..<2).map { _ in FleetMember(endpoint) }
        for member in fleet { #expect(member.waitUntilConnected()) }
        fleet[0].refresh(tokens)
        #expect(fleet[0].waitForResults(1))
        #expect(fleet[0].refreshResults.last?.isOwnRefresh == true)
        #expect(fleet[1].waiter.wait { fleet[1].adoptions.map { $0.accessToken.reveal() } == ["tok-1"] })
        fleet[1].refresh(tokens)
        #expect(fleet[1].waitForResults(1))
        #expect(fleet[1].refreshResults.last?.token == "tok-2")
        for member in fleet { #expect(member.store.status.errors.isEmpty, "\(member.store.status.errors)") }
        // The keepalive's PING (every 30 s, too slow to wait for here) is allowed too.
        let probe = RedisHarness(endpoint)
        #expect(probe.run(RESPCommand("PING")) == .success(.simpleString("PONG")))
        // The user reaches nothing but the fleet's keys.
        guard case .failure(.reply(let message)) = probe.run(RESPCommand("GET", "other-key")) else {
            Issue.record("docs/fleet.md's user reaches keys outside bearer-proxy:*")
            return
        }
        #expect(message.hasPrefix("NOPERM"))
    }

    @Test func aHolderThatDiesMidRefreshBlocksTheOthersOnlyUntilItsLockExpires() throws {
        let redis = try startRedis()
        let endpoint = RotatingTokenEndpoint()
        // The lock must outlive the test's own steps up to the EXISTS below, however loaded the machine.
        let holder = FleetMember(.local(redis), lockTimeout: .seconds(3))
        let other = FleetMember(.local(redis), lockTimeout: .seconds(3))
        #expect(holder.waitUntilConnected() && other.waitUntilConnected())
        endpoint.hang()
        holder.refresh(endpoint)
        #expect(endpoint.waiter.wait { endpoint.calls == 1 })
        holder.store.stop()
        let probe = RedisHarness(.local(redis))
        #expect(probe.run(RESPCommand("EXISTS", "bearer-proxy:{test}:lock")) == .success(.integer(1)))
        let working = RotatingTokenEndpoint()
        other.refresh(working)
        #expect(other.waitForResults(1))
        #expect(other.refreshResults.last?.token == "tok-1")
        #expect(working.calls == 1)
    }

    /// A proxy stopping (SIGTERM) while its refresh waits must not fall back to a token call of its own:
    /// it would spend the fleet's refresh token and store nothing.
    @Test func stoppingWhileARefreshWaitsEndsItWithoutATokenCall() throws {
        let redis = try startRedis()
        let probe = RedisHarness(.local(redis))
        #expect(
            probe.run(RESPCommand("SET", "bearer-proxy:{test}:lock", "another-proxy", "PX", "60000"))
                == .success(.simpleString("OK"))
        )
        let endpoint = RotatingTokenEndpoint()
        let member = FleetMember(.local(redis))
        member.refresh(endpoint)
        #expect(member.waitForStatus { $0.operations["lock", default: 0] >= 2 }, "the refresh never waited")
        member.store.stop()
        #expect(member.waitForResults(1))
        guard case .stopped = member.refreshResults.last else {
            Issue.record(
                "expected the refresh to end as stopped, got \(String(describing: member.refreshResults.last))"
            )
            return
        }
        #expect(endpoint.calls == 0)
    }

    @Test func anUnreachableStoreIsReportedByNameWithoutItsPassword() throws {
        let redis = try startRedis(configuration: ["--requirepass", "store-pw-31"])
        let member = FleetMember(.local(redis, password: "store-pw-31"), fallback: .fail)
        #expect(member.waitUntilConnected())
        redis.stop()
        #expect(member.waitForStatus { $0.state == "unreachable" })
        let endpoint = RotatingTokenEndpoint()
        member.refresh(endpoint)
        #expect(member.waitForResults(1))
        guard case .fetchFailed(.transient(let reason, _)) = member.refreshResults.last else {
            Issue.record("expected the store to be unavailable, got \(String(describing: member.refreshResults.last))")
            return
        }
        #expect(reason.hasSuffix("(session_store_fallback = fail)"))
        #expect(endpoint.calls == 0, "with fallback = fail no token call is made")
        #expect(reason.contains("redis://:<redacted>@127.0.0.1:\(redis.port)"))
        #expect(!reason.contains("store-pw-31"))
        #expect(member.store.status.lastError != nil)
        #expect(member.store.status.errors["lock", default: 0] >= 1)
    }

    @Test func aTokenGotDuringAnOutageIsStoredWhenTheStoreReturns() throws {
        let redis = try startRedis()
        let endpoint = RotatingTokenEndpoint()
        let member = FleetMember(.local(redis))
        member.refresh(endpoint)
        #expect(member.waitForResults(1))
        redis.stop()
        #expect(member.waitForStatus { $0.state == "unreachable" })
        member.store.refreshedLocally(
            StoredSession(generation: 0, accessToken: Secret("tok-local"), refreshToken: Secret("rt-local"))
        )
        try redis.start()
        let probe = RedisHarness(.local(redis))
        #expect(
            waitUntil {
                probe.run(RESPCommand("HGET", "bearer-proxy:{test}:session", "access_token"))
                    == .success(.bulkString(Array("tok-local".utf8)))
            }
        )
        #expect(
            probe.run(RESPCommand("HGET", "bearer-proxy:{test}:session", "refresh_token"))
                == .success(.bulkString(Array("rt-local".utf8)))
        )
        #expect(
            probe.run(RESPCommand("HGET", "bearer-proxy:{test}:session", "generation"))
                == .success(.bulkString(Array("2".utf8)))
        )
    }

    @Test func aRestartedEmptyStoreGetsTheFleetsTokenBackAndEveryoneAgrees() throws {
        let redis = try startRedis()
        let endpoint = RotatingTokenEndpoint()
        let fleet = (0..<3).map { _ in FleetMember(.local(redis)) }
        for member in fleet { #expect(member.waitUntilConnected()) }
        fleet[0].refresh(endpoint)
        #expect(fleet[0].waitForResults(1))
        for member in fleet.dropFirst() { #expect(member.waiter.wait { !member.adoptions.isEmpty }) }
        redis.stop()
        try redis.start()
        for member in fleet { #expect(member.waitForStatus { $0.generation == 2 }) }
        let probe = RedisHarness(.local(redis))
        #expect(
            probe.run(RESPCommand("HGET", "bearer-proxy:{test}:session", "access_token"))
                == .success(.bulkString(Array("tok-1".utf8)))
        )
        #expect(endpoint.calls == 1)
    }

    @Test func nothingSecretIsLogged() throws {
        let redis = try startRedis(configuration: ["--requirepass", "log-secret-pw"])
        let logs = LogSink(capturing: ())
        let logger = Logger(level: .debug, sink: logs)
        let endpoint = RotatingTokenEndpoint()
        let fleet = (0..<2).map { _ in FleetMember(.local(redis, password: "log-secret-pw"), logger: logger) }
        for member in fleet { #expect(member.waitUntilConnected()) }
        for round in 1...3 {
            fleet[0].refresh(endpoint)
            #expect(fleet[0].waitForResults(round))
        }
        redis.stop()
        #expect(fleet[0].waitForStatus { $0.state == "unreachable" })
        let lines = logs.capturedLines
        #expect(lines.contains { $0.contains("adopted the token another proxy stored") })
        for line in lines {
            for secret in ["log-secret-pw", "tok-1", "tok-2", "tok-3", "rt-1", "rt-2", "rt-3"] {
                #expect(!line.contains(secret), "\(line)")
            }
        }
    }
}
