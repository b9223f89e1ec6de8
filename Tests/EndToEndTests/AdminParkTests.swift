import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Testing

/// Admin `POST /refresh?park=1`: an expiry storm on demand. The refresh starts at once and every
/// request that needs the token meanwhile waits for the new one, as after a 401; plain
/// `POST /refresh` lets requests go on with the current token (docs/operations.md, "Admin endpoints").
@Suite struct AdminParkTests {
    /// A token endpoint slow enough (2 s) that the requests below are sent while its call runs.
    static let delay = Duration.seconds(2)

    /// The mocks and one proxy in front of them (`ServingProxies`: its listener, admin and /status).
    final class Stack: ServingProxies {
        let tokenServer: MockTokenServer
        let upstream: MockUpstream

        override init() throws {
            let authority = MockTokenAuthority()
            var settings = MockTokenServer.Settings()
            settings.clientID = "park-client"
            settings.clientSecret = "park-secret"
            self.tokenServer = MockTokenServer(group: e2eMockGroup, authority: authority, settings: settings)
            self.upstream = MockUpstream(group: e2eMockGroup, authority: authority)
            try super.init()
            try self.tokenServer.start()
            try self.upstream.start()
            let config = temporaryFile(
                """
                listen = 127.0.0.1:0
                admin_listen = 127.0.0.1:0
                upstream = \(self.upstream.baseURL)
                token_url = \(self.tokenServer.url)
                grant_type = client_credentials
                client_id = park-client
                client_secret = park-secret
                """
            )
            try self.startProxy(config: config, environment: [:])
            // The start-up token, before the slow endpoint's storms.
            #expect(waitUntil { (try? self.status())?["token_generation"] as? Int == 1 })
            self.tokenServer.update { $0.delay = AdminParkTests.delay }
        }

        var main: SocketAddress { self.addresses[0] }
        var admin: SocketAddress { self.admins[0] }

        func stop() {
            _ = self.processes[0].stop()
            self.upstream.stop()
            self.tokenServer.stop()
        }

        func status() throws -> [String: Any] { try self.status(0) }

        /// Sends `POST /refresh` with `query` on a connection of its own; its answer is read later.
        func startRefresh(_ query: String) throws -> BlockingHTTPClient {
            let client = try BlockingHTTPClient(connectingTo: self.admin)
            client.send("POST /refresh\(query) HTTP/1.1\r\nHost: \(self.admin)\r\nContent-Length: 0\r\n\r\n")
            return client
        }

        /// Sends `count` requests, each on its own connection, without reading the answers.
        func send(_ count: Int) throws -> [BlockingHTTPClient] {
            try (0..<count).map { index in
                let client = try BlockingHTTPClient(connectingTo: self.main)
                client.send("GET /during/\(index) HTTP/1.1\r\nHost: \(self.main)\r\n\r\n")
                return client
            }
        }

        /// The Authorization headers the upstream saw for the requests to /during/….
        var tokensSeenDuring: [String] {
            self.upstream.requests.filter { $0.target.hasPrefix("/during/") }.compactMap { $0.header("authorization") }
        }
    }

    @Test func requestsDuringAParkedRefreshWaitForItAndCarryTheNewToken() throws {
        let stack = try Stack()
        defer { stack.stop() }
        let callsBefore = stack.tokenServer.callCount
        let refresh = try stack.startRefresh("?park=1")
        #expect(waitUntil { (try? stack.status())?["state"] as? String == "refreshing" })
        let clients = try stack.send(5)
        // They park: the proxy holds all five, and none has reached the upstream yet.
        #expect(waitUntil { (try? stack.status())?["parked_requests"] as? Int == 5 })
        #expect(stack.tokensSeenDuring.isEmpty)
        let answer = try refresh.readResponse(method: .post)
        #expect(answer.status == 200)
        #expect(answer.text.contains(#""token_generation":2"#))
        for client in clients { #expect(try client.readResponse().status == 200) }
        let newToken = "Bearer mock-access-2"
        #expect(stack.tokensSeenDuring == Array(repeating: newToken, count: 5))
        #expect(stack.tokenServer.callCount == callsBefore + 1, "one token call for the storm")
        // /status names the refresh: what started it, how long it took, how many waited.
        let last = try #require(try stack.status()["last_refresh"] as? [String: Any])
        #expect(last["trigger"] as? String == "admin-park")
        #expect(last["waiting_requests"] as? Int == 5)
        #expect((last["duration_s"] as? Double ?? 0) >= AdminParkTests.delay.seconds * 0.9)
        #expect(try stack.status()["token_endpoint"] as? String == stack.tokenServer.url)
    }

    /// Without park=1 the refresh runs in the background: requests go on with the current token.
    @Test func aPlainRefreshLetsRequestsGoOnWithTheCurrentToken() throws {
        let stack = try Stack()
        defer { stack.stop() }
        let refresh = try stack.startRefresh("")
        #expect(waitUntil { (try? stack.status())?["state"] as? String == "refreshing" })
        let clients = try stack.send(2)
        for client in clients { #expect(try client.readResponse().status == 200) }
        #expect(stack.tokensSeenDuring == ["Bearer mock-access-1", "Bearer mock-access-1"])
        #expect(try refresh.readResponse(method: .post).status == 200)
    }

    @Test func parkIsRefusedOnLogoutAndTakesOnlyTheValueOne() throws {
        let stack = try Stack()
        defer { stack.stop() }
        for target in ["/logout?park=1", "/refresh?park=yes", "/refresh?park=1&other=2"] {
            let answer = try httpRequest(
                stack.admin,
                "POST \(target) HTTP/1.1\r\nHost: \(stack.admin)\r\nContent-Length: 0\r\n\r\n",
                method: .post
            )
            #expect(answer.status == 400, "\(target)")
        }
        #expect(try stack.status()["token_generation"] as? Int == 1, "nothing was refreshed or logged out")
    }
}
