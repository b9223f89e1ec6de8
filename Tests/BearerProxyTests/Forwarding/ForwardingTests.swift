import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerProxy

@Suite struct ForwardingTests {
    @Test func injectsTheTokenIntoOriginFormRequests() throws {
        let fixture = try ProxyFixture(upstreamPathPrefix: "/v2")
        let response = try fixture.get(
            "/items?page=2",
            headers: "Authorization: Bearer client-own\r\nX-Custom: kept\r\n"
        )
        #expect(response.status == 200)
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.target == "/v2/items?page=2")
        #expect(seen.headerValues("authorization") == ["Bearer \(ProxyFixture.token)"])
        #expect(seen.header("host") == "127.0.0.1:\(fixture.upstream.port)")
        #expect(seen.header("x-custom") == "kept")
        #expect(seen.header("via") == "1.1 bearer-proxy")
        #expect(response.header("via") == "1.1 bearer-proxy")
    }

    @Test func injectsIntoAbsoluteFormRequestsToTheUpstreamHost() throws {
        let fixture = try ProxyFixture(upstreamPathPrefix: "/v2")
        let authority = "127.0.0.1:\(fixture.upstream.port)"
        let response = try fixture.send(
            "GET http://\(authority)/v1/x HTTP/1.1\r\nHost: \(authority)\r\nProxy-Connection: keep-alive\r\n\r\n"
        )
        #expect(response.status == 200)
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.target == "/v1/x")
        #expect(seen.header("authorization") == "Bearer \(ProxyFixture.token)")
        #expect(seen.header("proxy-connection") == nil)
    }

    @Test func treatsAbsoluteFormNamingTheProxyAsOriginForm() throws {
        let fixture = try ProxyFixture(upstreamPathPrefix: "/api")
        for host in ["127.0.0.1", "localhost"] {
            let authority = "\(host):\(fixture.port)"
            let response = try fixture.send("GET http://\(authority)/v1/x HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
            #expect(response.status == 200)
            let seen = try #require(fixture.upstream.requests.last)
            #expect(seen.target == "/api/v1/x")
            #expect(seen.header("authorization") == "Bearer \(ProxyFixture.token)")
        }
        #expect(fixture.upstream.requests.count == 2)
    }

    @Test func injectsForHostsListedInInjectHosts() throws {
        let other = MockUpstream(group: mockGroup)
        try other.start()
        defer { other.stop() }
        let fixture = try ProxyFixture { $0.injectHosts = [.hostAndPort("127.0.0.1", other.port)] }
        let authority = "127.0.0.1:\(other.port)"
        _ = try fixture.send("GET http://\(authority)/x HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(other.requests.last?.header("authorization") == "Bearer \(ProxyFixture.token)")
        // The upstream itself is no longer in inject_hosts: no token for it.
        _ = try fixture.get("/y")
        #expect(fixture.upstream.requests.last?.header("authorization") == nil)
    }

    @Test func removesHopByHopFieldsBothWays() throws {
        let fixture = try ProxyFixture()
        let response = try fixture.get(
            "/hop",
            headers: "Connection: keep-alive, X-Hop\r\nX-Hop: secret\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n"
                + "Upgrade: websocket\r\nProxy-Authorization: Basic eA==\r\nTrailer: X-T\r\nX-End: kept\r\n"
        )
        #expect(response.status == 200)
        let seen = try #require(fixture.upstream.requests.last)
        for name in ["connection", "x-hop", "keep-alive", "te", "upgrade", "proxy-authorization", "trailer"] {
            #expect(seen.header(name) == nil, "\(name) was forwarded")
        }
        #expect(seen.header("x-end") == "kept")
    }

    @Test func removesHopByHopFieldsFromResponses() throws {
        let upstream = MockHTTPServer(group: mockGroup) { _ in
            MockResponse(
                status: 200,
                headers: [
                    ("Connection", "X-Private"), ("X-Private", "1"), ("Keep-Alive", "timeout=1"), ("X-Public", "2"),
                ],
                body: .fixed(Array("ok".utf8))
            )
        }
        try upstream.start()
        defer { upstream.stop() }
        let fixture = try ProxyFixture()
        let authority = "127.0.0.1:\(upstream.port)"
        let response = try fixture.send("GET http://\(authority)/ HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(response.status == 200)
        #expect(response.header("x-private") == nil)
        #expect(response.header("keep-alive") == nil)
        #expect(response.header("x-public") == "2")
        #expect(response.text == "ok")
    }

    @Test func reusesUpstreamConnectionsAcrossRequests() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        for index in 0..<20 {
            client.send("GET /r/\(index) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        // Separate client connections, one after another, share pooled upstream connections too.
        for index in 0..<10 {
            #expect(try fixture.get("/s/\(index)").status == 200)
        }
        #expect(fixture.upstream.requests.count == 30)
        #expect(fixture.upstream.server.acceptedConnections.load(ordering: .relaxed) <= 4)
    }

    @Test func forwardsChunkedRequestBodies() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n")
        client.send("6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.text == "hello world")
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.header("transfer-encoding") == "chunked")
        #expect(seen.body == Array("hello world".utf8))
    }

    @Test func decodesChunkedResponsesForHTTP10ClientsAndCloses() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send("GET /chunked/5000 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let raw = client.readToEnd()
        let text = String(decoding: raw, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(!text.lowercased().contains("transfer-encoding"))
        #expect(text.contains("Connection: close\r\n"))
        let headEnd = try #require(raw.firstRange(of: Array("\r\n\r\n".utf8)))
        #expect(countMockPatternMismatches(Array(raw[headEnd.upperBound...])) == 0)
    }

    @Test func keepsHTTP10ClientsAliveWhenAsked() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        for _ in 0..<3 {
            client.send("GET http://127.0.0.1:\(fixture.port)/ka HTTP/1.0\r\nProxy-Connection: keep-alive\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.header("connection") == "keep-alive")
        }
    }

    @Test func forwardsCloseDelimitedResponses() throws {
        let fixture = try ProxyFixture()
        let response = try fixture.get("/close/3000")
        #expect(response.header("transfer-encoding") == "chunked")
        #expect(response.body.count == 3000 && countMockPatternMismatches(response.body) == 0)
        fixture.expectStillServing()
    }

    @Test func headResponsesKeepContentLengthAndHaveNoBody() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send("HEAD /bytes/12345 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse(method: .head)
        #expect(response.header("content-length") == "12345")
        #expect(response.body.isEmpty)
        client.send("GET /status/204 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 204)
        client.send("GET /status/304 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 304)
        client.send("GET /after HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
    }

    /// On io_uring the kernel splits the client's sends as it likes; whichever completion brings the
    /// backlog down must wake the upstream's reading again (it once stalled half the time).
    @Test(arguments: IOBackend.allCases)
    func streamsA50MBResponse(io: IOBackend) throws {
        let fixture = try ProxyFixture { $0.io = io }
        #expect(fixture.proxy.usesIOUring == (io == .ioUring))
        let client = try fixture.client()
        client.send("GET /bytes/50000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.body.count == 50_000_000)
        #expect(countMockPatternMismatches(response.body) == 0)
    }

    @Test func relays100ContinueBeforeTheBodyIsSent() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send("PUT /echo HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        #expect(try client.readInformational() == 100)
        client.send("data")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "data")
    }

    @Test func servesOnIPv6Loopback() throws {
        let fixture = try ProxyFixture { $0.listen = [.hostPort(host: "::1", port: 0)] }
        #expect(fixture.address.description.hasPrefix("[::1]:"))
        let response = try httpRequest(fixture.address, "GET /v6 HTTP/1.1\r\nHost: [::1]:\(fixture.port)\r\n\r\n")
        #expect(response.status == 200)
        #expect(fixture.upstream.requests.last?.header("authorization") == "Bearer \(ProxyFixture.token)")
    }

    @Test func servesOnAUnixSocket() throws {
        let path = try ScratchSpace.newPath("proxy.sock")
        let fixture = try ProxyFixture { $0.listen = [.unix(path: path)] }
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let response = try httpRequest(.unix(path: path), "GET /via-unix HTTP/1.1\r\nHost: whatever.local\r\n\r\n")
        #expect(response.status == 200)
        #expect(fixture.upstream.requests.last?.header("authorization") == "Bearer \(ProxyFixture.token)")
        fixture.proxy.shutdown()
        #expect(stat(path, &info) != 0, "the socket file is removed on shutdown")
    }
}
