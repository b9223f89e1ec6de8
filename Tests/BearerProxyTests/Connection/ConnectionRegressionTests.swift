import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Dispatch
import Glibc
import Testing

@testable import BearerProxy

/// Bugs found in the client connection, each pinned by what a client or the upstream sees.
@Suite struct ConnectionRegressionTests {
    /// An upstream that answers the first request on each connection and closes the connection,
    /// without answering, when a second one arrives on it: the race in which an upstream's idle
    /// timeout closes a pooled connection just as the proxy sends a request on it.
    final class ClosingOnSecondRequest: Sendable {
        let server: MockHTTPServer
        private let seen = Locked<[(method: String, path: String, sequence: Int)]>([])

        init() throws {
            let box = Locked<ClosingOnSecondRequest?>(nil)
            self.server = MockHTTPServer(group: mockGroup) { request in
                box.withLock { $0 }?.seen.withLock {
                    $0.append((request.method, request.path, request.sequenceOnConnection))
                }
                if request.sequenceOnConnection >= 2 { return MockResponse(status: 0, body: .raw([], thenClose: true)) }
                return .text(200, "ok")
            }
            box.withLock { $0 = self }
            try self.server.start()
        }

        deinit { self.server.stop() }

        /// How many times the upstream read a request for `path`.
        func count(_ path: String) -> Int { self.seen.withLock { $0.filter { $0.path == path }.count } }
    }

    private func fixture(_ upstream: ClosingOnSecondRequest) throws -> ProxyFixture {
        try ProxyFixture { $0.upstream = try? HTTPURL.parse(upstream.server.baseURL).get() }
    }

    @Test func anIdempotentRequestIsResentWhenItsPooledConnectionDies() throws {
        let upstream = try ClosingOnSecondRequest()
        let fixture = try self.fixture(upstream)
        let client = try fixture.client()
        client.send("GET /warm HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        client.send("GET /again HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        // Read once on the dead pooled connection, once more on a fresh one.
        #expect(upstream.count("/again") == 2)
        #expect(upstream.server.acceptedConnections.load(ordering: .relaxed) == 2)
    }

    @Test func aPostIsNotSentTwiceWhenItsPooledConnectionDies() throws {
        let upstream = try ClosingOnSecondRequest()
        let fixture = try self.fixture(upstream)
        let client = try fixture.client()
        client.send("GET /warm HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        client.send("POST /order HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello")
        let response = try client.readResponse()
        #expect(response.status == 502)
        #expect(response.text.contains("closed the connection before answering"))
        #expect(upstream.count("/order") == 1)
        fixture.expectStillServing()
    }

    @Test func aPostWithAnIdempotencyKeyIsResent() throws {
        let upstream = try ClosingOnSecondRequest()
        let fixture = try self.fixture(upstream)
        let client = try fixture.client()
        client.send("GET /warm HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        client.send(
            "POST /pay HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: 7f1c\r\nContent-Length: 5\r\n\r\nhello"
        )
        #expect(try client.readResponse().status == 200)
        #expect(upstream.count("/pay") == 2)
    }

    /// A client that pipelines requests the proxy answers itself and never reads its responses must
    /// not make the proxy buffer without bound: reading from it pauses, so its sends stall.
    @Test func pipelinedRequestsAnsweredByTheProxyAreBoundedWhenTheClientNeverReads() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        var small: Int32 = 64 * 1024
        setsockopt(client.fd, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let request = Array("GET /x HTTP/1.1\r\nHost: refused.example\r\n\r\n".utf8)
        let chunk = Array(repeating: request, count: 4096).flatMap { $0 }
        let limit = 64 * 1024 * 1024
        let flags = fcntl(client.fd, F_GETFL)
        _ = fcntl(client.fd, F_SETFL, flags | O_NONBLOCK)
        var sent = 0
        while sent < limit {
            let offset = sent % chunk.count
            let result = chunk[offset...].withUnsafeBytes {
                Glibc.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if result > 0 {
                sent += result
                continue
            }
            #expect(errno == EAGAIN, "send failed: errno \(errno)")
            guard errno == EAGAIN else { break }
            // Stalled: the proxy stopped reading if the socket stays unwritable for half a second.
            var descriptor = pollfd(fd: client.fd, events: Int16(POLLOUT), revents: 0)
            if poll(&descriptor, 1, 500) == 0 { break }
        }
        #expect(sent < limit / 2, "the proxy kept reading \(sent) bytes of requests whose answers nobody read")
        // Every request is answered, in order, once the client reads (reading starts first: the
        // proxy reads the rest of the last request only once its answers are taken).
        _ = fcntl(client.fd, F_SETFL, flags)
        let fd = client.fd
        let answers = Locked<[UInt8]>([])
        let reader = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                answers.withLock { $0 += buffer[0..<count] }
            }
            reader.signal()
        }
        let remainder = (request.count - sent % request.count) % request.count
        if remainder > 0 { client.send(Array(request.suffix(remainder))) }
        client.shutdownWrite()
        #expect(reader.wait(timeout: .now() + 30) == .success)
        let total = (sent + remainder) / request.count
        #expect(occurrences(of: "HTTP/1.1 403 ", in: answers.withLock { $0 }) == total)
        fixture.expectStillServing()
    }

    /// curl uploading 2 MiB with `Expect: 100-continue` after the token was revoked: the upstream
    /// refuses the head before any of the body left the client, so the proxy refreshes and resends
    /// the head, whatever replay_body_limit says.
    @Test func anExpectContinueUploadLargerThanTheReplayLimitIsRefreshedBeforeItsBody() throws {
        let fixture = try SessionFixture { config, _ in
            config.accessToken = Secret("revoked")
            config.replayBodyLimit = 1024
        }
        let client = try fixture.client()
        let size = 2 * 1024 * 1024
        client.send(
            "PUT /echo HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: \(size)\r\n\r\n"
        )
        #expect(try client.readInformational() == 100)
        let body = (0..<size).map(mockPatternByte)
        // The mock echoes once it has the whole body, so sending it all before reading cannot deadlock.
        client.send(body)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.body.count == size)
        #expect(countMockPatternMismatches(response.body) == 0)
        #expect(fixture.tokenServer.callCount == 1)
    }

    /// `http_proxy` set and the base URL naming the proxy by an accept_hosts name.
    @Test func absoluteFormNamingTheProxyByAnAcceptedHostIsOriginForm() throws {
        let fixture = try ProxyFixture(upstreamPathPrefix: "/api") {
            $0.otherHosts = .deny
            $0.acceptHosts = [.host("proxy.local")]
        }
        let authority = "proxy.local:\(fixture.port)"
        let response = try fixture.send("GET http://\(authority)/v1/x HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(response.status == 200)
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.target == "/api/v1/x")
        #expect(seen.header("authorization") == "Bearer \(ProxyFixture.token)")
    }

    /// `printf 'GET /a …GET /b …' | nc`: requests sent before the client's FIN are all answered.
    @Test func everyRequestPipelinedBeforeAHalfCloseIsAnswered() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send((0..<3).map { "GET /piped/\($0) HTTP/1.1\r\nHost: localhost\r\n\r\n" }.joined())
        client.shutdownWrite()
        for index in 0..<3 {
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text.contains("piped\\/\(index)"))
        }
        #expect(client.waitForClose())
        #expect(fixture.upstream.requests.map(\.target) == ["/piped/0", "/piped/1", "/piped/2"])
    }

    /// Node's undici ProxyAgent: `CONNECT` with `connection: close`, then plain requests inside.
    @Test func anUndiciTunnelKeepsServingDespiteConnectionCloseOnTheConnect() throws {
        let fixture = try ProxyFixture()
        let authority = "127.0.0.1:\(fixture.upstream.port)"
        let client = try fixture.client()
        client.send("CONNECT \(authority) HTTP/1.1\r\nhost: 127.0.0.1:\(fixture.port)\r\nconnection: close\r\n\r\n")
        #expect(try client.readResponse(method: .connect).status == 200)
        for index in 0..<3 {
            client.send("GET /undici/\(index) HTTP/1.1\r\nhost: \(authority)\r\nconnection: keep-alive\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(fixture.upstream.requests.last?.target == "/undici/\(index)")
            #expect(fixture.upstream.requests.last?.header("authorization") == "Bearer \(ProxyFixture.token)")
        }
        // Inside the tunnel each request has its own keep-alive rules.
        client.send("GET /undici/last HTTP/1.1\r\nhost: \(authority)\r\nconnection: close\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(client.waitForClose())
    }
}

/// How many times `text` occurs in `bytes` (fast enough on megabytes in a debug build).
func occurrences(of text: String, in bytes: [UInt8]) -> Int {
    let needle = Array(text.utf8)
    return bytes.withUnsafeBufferPointer { haystack in
        guard haystack.count >= needle.count, let first = needle.first else { return 0 }
        var count = 0
        var index = 0
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first && needle.indices.allSatisfy({ haystack[index + $0] == needle[$0] }) {
                count += 1
                index += needle.count
            } else {
                index += 1
            }
        }
        return count
    }
}
