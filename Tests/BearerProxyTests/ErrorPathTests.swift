import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerProxy

@Suite struct ErrorPathTests {
    /// A port on 127.0.0.1 where nothing listens, and nothing will: a socket bound to it that never
    /// listens holds it for the rest of the run (a connection to it is refused), so that another
    /// test's listener, given the same free port by the kernel, cannot answer in its place.
    static func deadPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #expect(fd >= 0, "socket: errno \(errno)")
        let bound = SocketAddress(ipAddress: "127.0.0.1", port: 0)!.withSockAddr { Glibc.bind(fd, $0, $1) }
        #expect(bound == 0, "bind: errno \(errno)")
        heldPorts.withLock { $0.append(fd) }
        return try #require(Socket.localAddress(fd)?.port)
    }

    /// The sockets `deadPort` holds, open until the process ends.
    private static let heldPorts = Locked<[Int32]>([])

    @Test func answers502WhenTheUpstreamIsDown() throws {
        let port = try Self.deadPort()
        let fixture = try ProxyFixture { $0.upstream = try? HTTPURL.parse("http://127.0.0.1:\(port)").get() }
        let response = try fixture.get("/x")
        #expect(response.status == 502)
        #expect(response.text == "bearer-proxy: cannot connect to upstream 127.0.0.1:\(port): Connection refused\n")
        #expect(response.header("content-type") == "text/plain; charset=utf-8")
        // A failure the operator may have to act on (a dead API, a wrong port): warn, not info.
        #expect(
            fixture.logs.capturedLines.contains {
                $0.contains(" warn upstream connect failed upstream=127.0.0.1:\(port) error=")
            }
        )
    }

    @Test func answers502WhenTheUpstreamNameDoesNotResolve() throws {
        let fixture = try ProxyFixture()
        let response = try fixture.send(
            "GET http://no-such-host.invalid/x HTTP/1.1\r\nHost: no-such-host.invalid\r\n\r\n"
        )
        #expect(response.status == 502)
        #expect(response.text.hasPrefix("bearer-proxy: cannot resolve upstream no-such-host.invalid:80"))
        fixture.expectStillServing()
    }

    @Test func answers502OnAMalformedUpstreamResponse() throws {
        let garbage = MockHTTPServer(group: mockGroup) { request in
            switch request.path {
            case "/bad-chunks":
                MockResponse(
                    status: 200,
                    body: .raw(
                        Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".utf8),
                        thenClose: true
                    )
                )
            case "/two-lengths":
                MockResponse(
                    status: 200,
                    body: .raw(
                        Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".utf8),
                        thenClose: true
                    )
                )
            default:
                MockResponse(status: 200, body: .raw(Array("SSH-2.0-OpenSSH\r\n\r\n".utf8), thenClose: true))
            }
        }
        try garbage.start()
        defer { garbage.stop() }
        let fixture = try ProxyFixture { $0.upstream = try? HTTPURL.parse(garbage.baseURL).get() }
        for path in ["/garbage", "/two-lengths"] {
            let response = try fixture.get(path)
            #expect(response.status == 502, "\(path)")
            #expect(response.text.contains("malformed response"), "\(path)")
        }
        // Chunking that breaks after the head was sent: the client sees a cut response, not a complete one.
        let client = try fixture.client()
        client.send("GET /bad-chunks HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(throws: BlockingHTTPClient.ClientError.self) { try client.readResponse() }
    }

    @Test func cutsTheClientResponseWhenTheUpstreamResetsMidBody() throws {
        let resetting = MockHTTPServer(group: mockGroup) { _ in
            MockResponse(status: 200, body: .resetMidBody(length: 100_000, after: 5000))
        }
        try resetting.start()
        defer { resetting.stop() }
        let fixture = try ProxyFixture { $0.upstream = try? HTTPURL.parse(resetting.baseURL).get() }
        let client = try fixture.client()
        client.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(throws: BlockingHTTPClient.ClientError.truncated(received: 5000)) { try client.readResponse() }
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host header"),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
            "both Content-Length"
        ),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "unsupported transfer-coding"),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", 400, "obsolete line folding"),
        ("GARBAGE\r\n\r\n", 400, "malformed request line"),
    ])
    func answersMalformedRequestsAndCloses(raw: String, status: Int, fragment: String) throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send(raw)
        let response = try client.readResponse()
        #expect(response.status == status)
        #expect(response.text.contains(fragment))
        #expect(response.text.hasSuffix("\n") && response.text.split(separator: "\n").count == 1)
        #expect(response.header("connection") == "close")
        #expect(client.waitForClose())
        #expect(fixture.upstream.requests.isEmpty, "nothing malformed reaches the upstream")
        fixture.expectStillServing()
    }

    /// An upstream that closes every connection right after answering, without saying so: whether
    /// the pool heard of the close first or the request met the dead connection (and was resent:
    /// a GET), every request is answered. (ConnectionRegressionTests reach the resend branch every
    /// time, with an upstream that closes on the second request of a connection.)
    @Test func retriesOnAFreshConnectionWhenAPooledOneWasClosed() throws {
        let closing = MockHTTPServer(group: mockGroup) { _ in
            MockResponse(
                status: 200,
                body: .raw(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8), thenClose: true)
            )
        }
        try closing.start()
        defer { closing.stop() }
        let fixture = try ProxyFixture { $0.upstream = try? HTTPURL.parse(closing.baseURL).get() }
        let client = try fixture.client()
        for _ in 0..<5 {
            client.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(try client.readResponse().text == "ok")
        }
        #expect(closing.handledRequests.load(ordering: .relaxed) == 5)
    }

    @Test func answersOverCapacityWith503() throws {
        let fixture = try ProxyFixture { $0.maxConnections = 2 }
        let first = try fixture.client()
        let second = try fixture.client()
        #expect(waitUntil { fixture.proxy.runtime.openConnections.load(ordering: .relaxed) == 2 })
        let third = try fixture.client()
        third.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try third.readResponse()
        #expect(response.status == 503)
        #expect(response.text.contains("max_connections"))
        first.send("GET /ok HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try first.readResponse().status == 200)
        _ = second
    }
}
