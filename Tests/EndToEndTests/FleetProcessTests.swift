import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// Built `bearer-proxy` processes sharing one session through a real redis-server, in front of one
/// mock API whose token server rotates refresh tokens and revokes the family on reuse.
final class ProxyFleet: ServingProxies {
    let redis: RedisServerProcess
    let authority = MockTokenAuthority()
    let tokenServer: MockTokenServer
    let upstream: MockUpstream
    let initialToken: String

    static let seed = "rt-fleet-seed-e2e"
    static let clientSecret = "fleet-e2e-client-secret"
    static let storePassword = "fleet-e2e-store-pw"

    override init() throws {
        self.redis = try RedisServerProcess(configuration: ["--requirepass", Self.storePassword])
        let settings = MockTokenServer.Settings.refreshTokenGrant(
            seed: Self.seed,
            clientID: "fleet",
            clientSecret: Self.clientSecret
        )
        self.tokenServer = MockTokenServer(group: e2eMockGroup, authority: self.authority, settings: settings)
        try self.tokenServer.start()
        self.upstream = MockUpstream(group: e2eMockGroup, authority: self.authority, recordsRequests: false)
        try self.upstream.start()
        self.initialToken = self.authority.issue(lifetime: nil)
        try super.init()
    }

    deinit {
        for process in self.processes where process.process.isRunning { process.signal(SIGKILL) }
        self.upstream.stop()
        self.tokenServer.stop()
        self.redis.kill()
    }

    /// Secrets reach the processes through the environment, as an operator's would.
    var environment: [String: String] {
        [
            "FLEET_TOKEN": self.initialToken, "FLEET_REFRESH": Self.seed, "FLEET_SECRET": Self.clientSecret,
            "FLEET_REDIS_PASSWORD": Self.storePassword,
        ]
    }

    func start(count: Int, extra: String = "") throws {
        for _ in 0..<count {
            let config = temporaryFile(
                """
                listen = 127.0.0.1:0
                admin_listen = 127.0.0.1:0
                upstream = \(self.upstream.baseURL)
                access_token = ${FLEET_TOKEN}
                token_url = \(self.tokenServer.url)
                grant_type = refresh_token
                refresh_token = ${FLEET_REFRESH}
                client_id = fleet
                client_secret = ${FLEET_SECRET}
                session_store = redis://:${FLEET_REDIS_PASSWORD}@127.0.0.1:\(self.redis.port)
                session_name = e2e
                client_idle_timeout = 10m
                workers = 2
                log_level = debug
                \(extra)
                """
            )
            try self.startProxy(config: config, environment: self.environment)
        }
    }

    func storeStatus(_ index: Int) throws -> [String: Any] {
        (try self.status(index)["session_store"] as? [String: Any]) ?? [:]
    }

    var secrets: [String] {
        [Self.seed, Self.clientSecret, Self.storePassword] + self.tokenServer.issuedRefreshTokenList
            + (1...max(self.authority.issuedCount, 1)).map { "\(self.authority.prefix)\($0)" }
    }
}

@Suite(.requires(.redisServer))
struct FleetProcessTests {
    @Test func threeProxiesThreeHundredClientsFiveRevocationsFiveTokenCalls() throws {
        let fleet = try ProxyFleet()
        try fleet.start(count: 3)
        #expect(
            waitUntil { (try? (0..<3).allSatisfy { try fleet.storeStatus($0)["subscribed"] as? Bool == true }) == true }
        )
        let clients = try (0..<300).map { index in
            try BlockingHTTPClient(connectingTo: fleet.addresses[index % 3])
        }
        var statuses: [Int: Int] = [:]
        func batch(_ name: String, revokingMidway: Bool = false) throws {
            for (index, client) in clients.enumerated() {
                client.send("GET /\(name)/\(index) HTTP/1.1\r\nHost: \(fleet.addresses[index % 3])\r\n\r\n")
            }
            // Revoked while the batch is in flight: some requests went out with the old token already.
            if revokingMidway { fleet.authority.revokeAll() }
            for client in clients { statuses[try client.readResponse().status, default: 0] += 1 }
        }
        try batch("warm")
        for round in 1...5 {
            try batch("round-\(round)", revokingMidway: true)
            try batch("after-\(round)")
            #expect(fleet.tokenServer.callCount == round, "round \(round)")
        }
        #expect(statuses == [200: 300 * 11], "clients saw \(statuses)")
        #expect(fleet.tokenServer.callCount == 5)
        #expect(fleet.tokenServer.reuseDetections.load(ordering: .relaxed) == 0)
        let generations = try (0..<3).map { try fleet.storeStatus($0)["generation"] as? Int }
        #expect(generations == [5, 5, 5])
        for process in fleet.processes {
            process.signal(SIGTERM)
            #expect(process.waitForExit() == 0)
            let words = Set(
                process.standardError.split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "-" }).map(
                    String.init
                )
            )
            for secret in fleet.secrets { #expect(!words.contains(secret), "\(secret) in a proxy's log") }
            #expect(!process.standardError.contains(ProxyFleet.storePassword))
        }
    }

    @Test func aProxyKilledHoldingTheLockDelaysTheOthersOnlyUntilTheLockExpires() throws {
        let fleet = try ProxyFleet()
        try fleet.start(count: 2, extra: "refresh_timeout = 2s")
        #expect(
            waitUntil { (try? (0..<2).allSatisfy { try fleet.storeStatus($0)["subscribed"] as? Bool == true }) == true }
        )
        fleet.tokenServer.update { $0.failure = .hang }
        fleet.authority.revokeAll()
        let stuck = try BlockingHTTPClient(connectingTo: fleet.addresses[0])
        stuck.send("GET /stuck HTTP/1.1\r\nHost: \(fleet.addresses[0])\r\n\r\n")
        #expect(waitUntil { fleet.tokenServer.answeredCallCount == 1 })
        fleet.processes[0].signal(SIGKILL)
        #expect(fleet.processes[0].waitForExit() != nil)
        fleet.tokenServer.update { $0.failure = .none }
        // The survivor finds the dead holder's lock, waits for it to expire, then refreshes itself.
        let first = try fleet.get("/survivor", through: 1)
        #expect([200, 504].contains(first.status), "\(first.status): \(first.text)")
        #expect(try fleet.get("/survivor-again", through: 1).status == 200)
        #expect(fleet.tokenServer.callCount == 2)
        #expect(fleet.tokenServer.reuseDetections.load(ordering: .relaxed) == 0)
        #expect(try fleet.storeStatus(1)["generation"] as? Int == 1)
    }
}
