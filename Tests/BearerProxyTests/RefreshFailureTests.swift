import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Dispatch
import Foundation
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy
@testable import BearerSession

/// How requests learn that the session cannot get a token: a refresh that failed for good, a token
/// endpoint that does not answer (issue 32, points 3 and 4).
@Suite struct RefreshFailureTests {
    /// A request whose 401 comes back after the refresh failed for good gets the same sentence as the
    /// requests that waited for that refresh, not the upstream's own 401.
    @Test func aLate401GetsTheSameFailureAsTheParkedRequests() throws {
        let upstream = try HeldUpstream()
        defer { upstream.stop() }
        let fixture = try SessionFixture(tokenSettings: { $0.refreshTokens = ["rt-good"] }) { config, _ in
            config.upstream = try? HTTPURL.parse("http://127.0.0.1:\(upstream.port)").get()
            config.accessToken = Secret("stale-access-token")
            config.grantType = .refreshToken
            config.refreshToken = Secret("rt-revoked-secret")
        }
        let first = DispatchQueue(label: "first request")
        let second = DispatchQueue(label: "second request")
        let answers = Locked<[String: BlockingHTTPClient.Response]>([:])
        let address = fixture.address
        for (name, queue) in [("first", first), ("second", second)] {
            queue.async {
                let response = try? httpRequest(address, "GET /\(name) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                answers.withLock { $0[name] = response }
            }
        }
        // Both were sent with the stale token before any 401 came back.
        #expect(waitUntil { upstream.heldCount == 2 })
        upstream.answer(path: "/first")
        #expect(waitUntil { answers.withLock { $0["first"] } != nil })
        #expect(fixture.proxy.runtime.session.status.state == "failed")
        upstream.answer(path: "/second")
        #expect(waitUntil { answers.withLock { $0["second"] } != nil })
        let (firstAnswer, secondAnswer) = answers.withLock { ($0["first"], $0["second"]) }
        #expect(firstAnswer?.status == 401)
        #expect(firstAnswer?.text.contains("token refresh failed: the token endpoint answered invalid_grant") == true)
        #expect(secondAnswer?.status == 401)
        #expect(secondAnswer?.text == firstAnswer?.text, "the late 401 got the upstream's body")
        #expect(fixture.tokenServer.callCount == 1)
    }

    /// With the token endpoint down, start-up warns at once naming it and why, `/status` shows the
    /// failure, and a request that needs a token gets its 502 at once instead of waiting out
    /// refresh_timeout (a minute here, far beyond the client's patience).
    @Test func anUnreachableTokenEndpointFailsRequestsAtOnce() throws {
        let port = try ErrorPathTests.deadPort()
        let fixture = try SessionFixture { config, _ in
            config.tokenURL = try? HTTPURL.parse("http://127.0.0.1:\(port)/token").get()
            config.refreshTimeout = .seconds(60)
        }
        let session = fixture.proxy.runtime.session
        #expect(waitUntil { session.status.failure != nil })
        #expect(session.status.failure?.contains("127.0.0.1:\(port)") == true)
        #expect(session.status.failure?.contains("Connection refused") == true)
        for path in ["/a", "/b", "/c"] {
            let client = try BlockingHTTPClient(connectingTo: fixture.address, timeout: .seconds(10))
            client.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 502)
            #expect(response.text.contains("Connection refused"))
        }
        // The warning is logged on the session's loop after the status changed: once the proxy has
        // stopped (each loop's last task done), it is written.
        fixture.proxy.shutdown()
        let warning = fixture.logs.capturedLines.first { $0.contains(" warn token endpoint unreachable") }
        #expect(warning?.contains("127.0.0.1:\(port)") == true, "no warning naming the endpoint")
    }
}

extension RefreshFailureTests {
    /// Issue 32, point 2: a refusal's hint names what fits the grant; client_credentials has no
    /// refresh token file to replace.
    @Test func aRefusedClientSecretNamesTheConfigNotARefreshTokenFile() throws {
        let fixture = try SessionFixture { config, _ in config.clientSecret = Secret("a-wrong-secret") }
        let response = try fixture.get("/x")
        #expect(response.status == 401)
        #expect(response.text.contains("invalid_client"))
        #expect(response.text.contains("fix client_id and client_secret (or the client's key) in the config"))
        #expect(response.text.contains("SIGHUP (the proxy re-reads its config)"))
        #expect(!response.text.contains("refresh token"), "client_credentials has no refresh token: \(response.text)")
        fixture.expectNoSecretsInLogs(["a-wrong-secret"])
    }

    /// A refused refresh token is answered with the way to a new one: a login, or the file.
    @Test func aRefusedRefreshTokenNamesTheLoginAndTheFile() throws {
        let file = try ScratchSpace.newDirectory("remedy") + "/refresh-token"
        try "rt-revoked-secret\n".write(toFile: file, atomically: true, encoding: .utf8)
        let fixture = try SessionFixture(tokenSettings: { $0.refreshTokens = ["rt-good"] }) { config, _ in
            config.grantType = .refreshToken
            config.refreshTokenFile = file
        }
        let response = try fixture.get("/x")
        #expect(response.status == 401)
        #expect(response.text.contains("invalid_grant"))
        #expect(response.text.contains("run 'bearer-proxy login', or write a new refresh token to \(file)"))
    }

    @Test(arguments: [
        (GrantType.refreshToken, "invalid_grant", RejectionRemedy.newRefreshToken(file: "/f")),
        (.refreshToken, "invalid_client", .clientCredentials),
        (.clientCredentials, "invalid_client", .clientCredentials),
        (.clientCredentials, "invalid_grant", .clientCredentials),
        (.password, "invalid_grant", .userCredentials),
        (.jwtBearer, "invalid_grant", .assertion),
        (.clientCredentials, "invalid_scope", .scope),
    ])
    func theRemedyFollowsTheGrantAndTheError(grant: GrantType, code: String, remedy: RejectionRemedy) {
        #expect(RejectionRemedy(grant: grant, code: code, refreshTokenFile: "/f") == remedy)
    }
}

/// An upstream that holds every request until the test answers it, then answers 401: lets a test
/// decide when each 401 comes back.
final class HeldUpstream: @unchecked Sendable {
    private let listener: Int32
    let port: Int
    private let held = Locked<[(path: String, fd: Int32)]>([])
    private let accepting = DispatchQueue(label: "held upstream")

    init() throws {
        self.listener = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        self.port = Socket.localAddress(self.listener)!.port!
        // The listener is non-blocking: accept on a thread that waits with poll.
        self.accepting.async { [listener = self.listener, held = self.held] in
            while true {
                var pollFD = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&pollFD, 1, 10_000) > 0, pollFD.revents & Int16(POLLIN) != 0 else { return }
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                guard let path = Self.readRequestPath(client) else {
                    close(client)
                    continue
                }
                held.withLock { $0.append((path, client)) }
            }
        }
    }

    var heldCount: Int { self.held.withLock { $0.count } }

    /// Answers the held request for `path` with a 401.
    func answer(path: String) {
        guard
            let fd = self.held.withLock({ held -> Int32? in
                guard let index = held.firstIndex(where: { $0.path == path }) else { return nil }
                return held.remove(at: index).fd
            })
        else {
            Issue.record("no held request for \(path)")
            return
        }
        let body = #"{"error":"invalid_token","from":"the upstream"}"#
        let response =
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        _ = response.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        close(fd)
    }

    func stop() {
        shutdown(self.listener, Int32(SHUT_RDWR))
        for request in self.held.withLock({ $0 }) { close(request.fd) }
    }

    /// The request line's path, once the whole head arrived (blocking, bounded by a receive timeout).
    private static func readRequestPath(_ fd: Int32) -> String? {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !bytes.ends(with: Array("\r\n\r\n".utf8)) {
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            bytes += chunk[0..<count]
        }
        let requestLine = String(decoding: bytes.prefix { $0 != 0x0D }, as: UTF8.self)
        let parts = requestLine.split(separator: " ")
        return parts.count == 3 ? String(parts[1]) : nil
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        self.count >= suffix.count && Array(self[(self.count - suffix.count)...]) == suffix
    }
}
