import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// The proxy on each I/O backend: the same behaviour whether bytes come through io_uring's
/// receives (the default) or `read(2)` on epoll's readiness. (The kernel of the machines this
/// project runs on allows io_uring; a proxy that fell back to epoll fails the io_uring cases rather
/// than passing them without testing anything.)
@Suite struct IOBackendTests {
    func fixture(_ io: IOBackend) throws -> ProxyFixture {
        let fixture = try ProxyFixture { $0.io = io }
        #expect(fixture.proxy.usesIOUring == (io == .ioUring), "the loops use the other backend")
        return fixture
    }

    @Test func theDefaultIsIOUring() {
        #expect(Configuration().io == .ioUring)
    }

    @Test(arguments: IOBackend.allCases)
    func forwardsPipelinedRequestsAndStreamsLargeBodiesBothWays(io: IOBackend) throws {
        let fixture = try self.fixture(io)
        let client = try fixture.client()
        var pipeline = ""
        for index in 0..<5 { pipeline += "GET /p/\(index) HTTP/1.1\r\nHost: localhost\r\n\r\n" }
        pipeline += "GET /bytes/3000000 HTTP/1.1\r\nHost: localhost\r\n\r\n"
        client.send(pipeline)
        for index in 0..<5 {
            #expect(try client.readResponse().text.contains("\"target\":\"\\/p\\/\(index)\""))
        }
        let large = try client.readResponse()
        #expect(large.body.count == 3_000_000)
        #expect(countMockPatternMismatches(large.body) == 0)

        let body = (0..<1_000_000).map(mockPatternByte)
        client.send(Array("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000\r\n\r\n".utf8) + body)
        let echoed = try client.readResponse()
        #expect(echoed.body == body)
        client.send(
            "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        )
        #expect(try client.readResponse().text == "hello")
        #expect(fixture.upstream.requests.allSatisfy { $0.header("authorization") == "Bearer \(ProxyFixture.token)" })
    }

    /// Uploads far above the watermarks: the upstream's sends complete in whatever pieces the kernel
    /// takes, and each time the backlog drains the client's reading must resume.
    @Test(arguments: IOBackend.allCases)
    func streamsA16MBUploadAndItsEcho(io: IOBackend) throws {
        let fixture = try self.fixture(io)
        let client = try fixture.client()
        let body = (0..<16_000_000).map(mockPatternByte)
        client.send(Array("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 16000000\r\n\r\n".utf8) + body)
        let echoed = try client.readResponse()
        #expect(echoed.body.count == body.count)
        #expect(countMockPatternMismatches(echoed.body) == 0)
    }

    @Test(arguments: IOBackend.allCases)
    func answersWhatCameBeforeAHalfCloseAndSeesResets(io: IOBackend) throws {
        let fixture = try self.fixture(io)
        let client = try fixture.client()
        client.send("GET /slow/100 HTTP/1.1\r\nHost: localhost\r\n\r\nGET /after HTTP/1.1\r\nHost: localhost\r\n\r\n")
        client.shutdownWrite()
        #expect(try client.readResponse().text == "slow\n")
        #expect(try client.readResponse().status == 200)
        #expect(client.waitForClose())

        let resetting = try fixture.client()
        resetting.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\nabc")
        #expect(waitUntil { fixture.upstream.server.acceptedConnections.load(ordering: .relaxed) >= 1 })
        resetting.reset()
        fixture.expectStillServing()
        #expect(waitUntil { fixture.proxy.runtime.openConnections.load(ordering: .relaxed) == 0 })
    }

    @Test(arguments: IOBackend.allCases)
    func refreshesAndReplaysABodyAndRelaysAWebSocket(io: IOBackend) throws {
        let fixture = try SessionFixture { config, _ in
            config.io = io
            config.accessToken = Secret("revoked")
        }
        #expect(fixture.proxy.usesIOUring == (io == .ioUring))
        let response = try httpRequest(
            fixture.address,
            "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\nabcdefghij"
        )
        #expect(response.status == 200)
        #expect(response.text == "abcdefghij")
        #expect(fixture.tokenServer.callCount == 1)

        let client = try fixture.client()
        client.send(WebSocketTests.handshake(path: "/ws/ring"))
        #expect(try client.readHead().status == 101)
        #expect(WebSocketTests.readFrame(client) == .text("welcome to /ws/ring"))
        client.send(WebSocketFrames.encode(.text("through the ring"), masked: true))
        #expect(WebSocketTests.readFrame(client) == .text("through the ring"))
    }
}
