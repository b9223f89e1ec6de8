import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerProxy

@Suite struct FaultTests {
    @Test func deliversTheResponseAfterTheClientHalfCloses() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send("GET /slow/200 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        client.shutdownWrite()
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "slow\n")
        #expect(client.waitForClose())
    }

    @Test func survivesAClientResetMidBody() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send(
            "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n"
                + String(repeating: "a", count: 5000)
        )
        // Reset once the proxy is forwarding the body (it connected upstream).
        #expect(waitUntil { fixture.upstream.server.acceptedConnections.load(ordering: .relaxed) == 1 })
        client.reset()
        fixture.expectStillServing()
        #expect(waitUntil { fixture.proxy.runtime.openConnections.load(ordering: .relaxed) == 0 })
    }

    @Test func survivesAClientResetWhileWaitingForARefresh() throws {
        // The request stays parked for the token call's 2 s: long enough to be seen parked on a loaded machine.
        let fixture = try SessionFixture(tokenSettings: { $0.delay = .seconds(2) }) { config, _ in
            config.accessToken = Secret("stale")
        }
        let client = try fixture.client()
        client.send("GET /parked HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(waitUntil { fixture.proxy.runtime.session.parkedCount == 1 })
        client.reset()
        #expect(waitUntil { fixture.proxy.runtime.session.parkedCount == 0 })
        #expect(try fixture.get("/after").status == 200)
        #expect(fixture.tokenServer.callCount == 1)
    }

    @Test func relaysInformationalResponsesBeforeTheFinalOne() throws {
        let hinting = MockHTTPServer(group: mockGroup) { _ in
            MockResponse(
                status: 200,
                body: .raw(
                    Array(
                        "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                            .utf8
                    ),
                    thenClose: false
                )
            )
        }
        try hinting.start()
        defer { hinting.stop() }
        let fixture = try ProxyFixture { $0.upstream = try? HTTPURL.parse(hinting.baseURL).get() }
        let client = try fixture.client()
        client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.informational == [103])
        #expect(response.status == 200)
        #expect(response.text == "ok")
    }

    @Test func limitsTheNumberOfHeaderFields() throws {
        let fixture = try ProxyFixture()
        let fields = (0..<300).map { "X-F\($0): v\r\n" }.joined()
        let response = try fixture.send("GET / HTTP/1.1\r\nHost: localhost\r\n\(fields)\r\n")
        #expect(response.status == 431)
        #expect(response.text.contains("too many header fields"))
        fixture.expectStillServing()
    }

    @Test func boundsARequestBodyThatStalls() throws {
        let fixture = try ProxyFixture { $0.clientIdleTimeout = .milliseconds(400) }
        let client = try fixture.client()
        client.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\nonly-part-of-it")
        let response = try client.readResponse()
        #expect(response.status == 408)
        #expect(response.text.contains("request body stopped arriving"))
        #expect(client.waitForClose())
        fixture.expectStillServing()
    }
}
