import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Testing

@testable import BearerProxy

/// Several proxies in one process sharing one session through redis-server: what issue 12's
/// "Behaviour to show" asks, seen as the clients, the token endpoint and the API see it.
@Suite(.requires(.redisServer))
struct FleetTests {
    /// The store's connections run on the proxy's loops: with io_uring they receive through the ring.
    @Test(arguments: IOBackend.allCases)
    func oneTokenCallPerRevocationForTheWholeFleetAndNoClient401s(io: IOBackend) throws {
        let fleet = try FleetFixture(proxies: 3) { $0.io = io }
        #expect(fleet.proxies.allSatisfy { $0.usesIOUring == (io == .ioUring) }, "the loops use the other backend")
        #expect(fleet.waitUntilConnected())
        #expect(try fleet.burst(clients: 30, path: "/warm") == [200: 30])
        for round in 1...5 {
            fleet.authority.revokeAll()
            #expect(try fleet.burst(clients: 60, path: "/round-\(round)") == [200: 60], "round \(round)")
            #expect(fleet.tokenServer.callCount == round, "round \(round)")
        }
        #expect(fleet.tokenServer.reuseDetections.load(ordering: .relaxed) == 0)
    }

    @Test func twentyRotationsNeverTripReuseDetection() throws {
        let fleet = try FleetFixture(proxies: 3)
        #expect(fleet.waitUntilConnected())
        for round in 1...20 {
            fleet.authority.revokeAll()
            #expect(try fleet.burst(clients: 9, path: "/rotation-\(round)") == [200: 9], "round \(round)")
        }
        #expect(fleet.tokenServer.callCount == 20)
        #expect(fleet.tokenServer.reuseDetections.load(ordering: .relaxed) == 0)
        // Each call spent the refresh token the one before got.
        let spent = fleet.tokenServer.recordedCalls.compactMap(\.presentedRefreshToken)
        #expect(spent == [FleetFixture.seedRefreshToken] + fleet.tokenServer.issuedRefreshTokenList.dropLast())
    }

    @Test func aProxyStartedLaterAdoptsTheStoredTokenWithoutATokenCall() throws {
        let fleet = try FleetFixture(proxies: 1, startWithToken: false)
        #expect(try fleet.get("/first", through: 0).status == 200)
        #expect(fleet.tokenServer.callCount == 1)
        try fleet.addProxy()
        #expect(try fleet.get("/late", through: 1).status == 200)
        #expect(fleet.tokenServer.callCount == 1)
        #expect(fleet.warnings("token adopted from the session store", proxy: 1) == 1)
        #expect(try fleet.tokenSentUpstream(through: 0) == fleet.tokenSentUpstream(through: 1))
    }

    @Test func aProxyThatMissedAPublicationReplaysWithTheStoredTokenWithoutACall() throws {
        let fleet = try FleetFixture(proxies: 2)
        #expect(fleet.waitUntilConnected())
        fleet.authority.revokeAll()
        #expect(try fleet.get("/a", through: 0).status == 200)
        #expect(fleet.tokenServer.callCount == 1)
        // Whether proxy 1 adopted from the publication already or learns it from its 401: no second call.
        #expect(try fleet.get("/b", through: 1).status == 200)
        #expect(fleet.tokenServer.callCount == 1)
        #expect(fleet.upstream.rejected.load(ordering: .relaxed) <= 2)
    }

    @Test func withTheStoreDownTrafficFlowsAndARefreshHappensHereWithOneWarning() throws {
        let fleet = try FleetFixture(proxies: 1, rotation: false)
        #expect(fleet.waitUntilConnected())
        fleet.redis.stop()
        #expect(try fleet.get("/cached", through: 0).status == 200)
        #expect(fleet.tokenServer.callCount == 0)
        for round in 1...2 {
            fleet.authority.revokeAll()
            #expect(try fleet.burst(clients: 10, path: "/outage-\(round)") == [200: 10])
        }
        #expect(fleet.tokenServer.callCount == 2)
        #expect(fleet.warnings("refreshing in this process (session_store_fallback = local)", proxy: 0) == 1)
    }

    @Test func withTheStoreDownAndFallbackFailRefreshesAnswer502NamingTheStore() throws {
        let fleet = try FleetFixture(proxies: 1) {
            $0.sessionStore.fallback = .fail
            $0.refreshTimeout = .seconds(1)
        }
        #expect(fleet.waitUntilConnected())
        fleet.redis.stop()
        #expect(try fleet.get("/cached", through: 0).status == 200)
        fleet.authority.revokeAll()
        let response = try fleet.get("/needs-refresh", through: 0)
        #expect(response.status == 502)
        #expect(
            response.text.contains("session store redis://:<redacted>@127.0.0.1:\(fleet.redis.port)"),
            "\(response.text)"
        )
        #expect(response.text.contains("session_store_fallback = fail"))
        #expect(!response.text.contains(FleetFixture.storePassword))
        #expect(fleet.tokenServer.callCount == 0)
    }

    @Test func whenTheStoreReturnsTheFleetConvergesOnOneGeneration() throws {
        let fleet = try FleetFixture(proxies: 2, rotation: false)
        #expect(fleet.waitUntilConnected())
        fleet.redis.stop()
        fleet.authority.revokeAll()
        // Cut off from each other, both refresh on their own: two tokens in use.
        #expect(try fleet.get("/alone-0", through: 0).status == 200)
        #expect(try fleet.get("/alone-1", through: 1).status == 200)
        #expect(fleet.tokenServer.callCount == 2)
        #expect(try fleet.tokenSentUpstream(through: 0) != fleet.tokenSentUpstream(through: 1))
        try fleet.redis.start()
        #expect(
            waitUntil {
                let generations = fleet.proxies.compactMap { $0.runtime.session.sessionStore?.status.generation }
                return Set(generations).count == 1 && generations[0] > 0
                    && (try? fleet.tokenSentUpstream(through: 0)) == (try? fleet.tokenSentUpstream(through: 1))
            }
        )
        #expect(try fleet.burst(clients: 10, path: "/together") == [200: 10])
        #expect(fleet.tokenServer.callCount == 2)
    }

    @Test func aLockHolderThatDiesMidRefreshHoldsTheOthersOnlyUntilTheLockExpires() throws {
        let fleet = try FleetFixture(proxies: 2) { $0.refreshTimeout = .seconds(2) }
        #expect(fleet.waitUntilConnected())
        fleet.tokenServer.update { $0.failure = .hang }
        fleet.authority.revokeAll()
        let holder = try BlockingHTTPClient(connectingTo: fleet.proxies[0].boundAddresses[0])
        holder.send("GET /stuck HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(fleet.waitForTokenCalls(1))
        fleet.tokenServer.update { $0.failure = .none }
        fleet.proxies[0].shutdown()
        // The other proxy waits for the dead holder's lock, then refreshes itself; nothing waits forever.
        let first = try fleet.get("/after-death", through: 1)
        #expect([200, 504].contains(first.status), "\(first.status) \(first.text)")
        #expect(try fleet.get("/later", through: 1).status == 200)
        #expect(fleet.tokenServer.callCount == 2)
        #expect(fleet.tokenServer.reuseDetections.load(ordering: .relaxed) == 0)
    }

    @Test func statusShowsTheStoreWithoutItsPasswordAndNothingSecretIsLogged() throws {
        let fleet = try FleetFixture(proxies: 2)
        #expect(fleet.waitUntilConnected())
        for round in 1...3 {
            fleet.authority.revokeAll()
            #expect(try fleet.burst(clients: 6, path: "/audit-\(round)") == [200: 6])
        }
        let admin = try #require(fleet.proxies[1].adminAddress)
        let status = try httpRequest(admin, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:\(admin.port!)\r\n\r\n")
        #expect(status.status == 200)
        #expect(
            status.text.contains(#""store" : "redis:\/\/:<redacted>@127.0.0.1:\#(fleet.redis.port)""#),
            "\(status.text)"
        )
        #expect(status.text.contains(#""name" : "fleet-test""#))
        #expect(status.text.contains(#""state" : "connected""#))
        let metrics = try httpRequest(admin, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(admin.port!)\r\n\r\n")
        #expect(metrics.text.contains(#"bearer_proxy_session_store_operations_total{operation="lock"}"#))
        #expect(metrics.text.contains("bearer_proxy_session_store_up 1"))
        #expect(metrics.text.contains(#"bearer_proxy_token_refreshes_total{result="adopted"}"#))
        let secrets = fleet.secrets
        for text in [status.text, metrics.text] + fleet.logs.flatMap(\.capturedLines) {
            for secret in secrets { #expect(!text.contains(secret), "a secret in: \(text)") }
        }
    }
}

extension FleetFixture {
    func waitForTokenCalls(_ count: Int) -> Bool {
        waitUntil { self.tokenServer.answeredCallCount >= count }
    }
}
