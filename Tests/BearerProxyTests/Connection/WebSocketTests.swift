import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerProxy

/// WebSocket through the proxy (RFC 6455): the handshake carries the token and is refreshed and
/// replayed like any request; after the 101, bytes go both ways untouched.
@Suite struct WebSocketTests {
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    static func handshake(path: String, host: String = "localhost", extra: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            + "Sec-WebSocket-Key: \(Self.key)\r\nSec-WebSocket-Version: 13\r\n\(extra)\r\n"
    }

    /// Reads one WebSocket frame from a client that already read the 101 head.
    static func readFrame(_ client: BlockingHTTPClient) -> WebSocketFrames.Frame? {
        var bytes = client.takeBuffered()
        while true {
            if let (frame, _) = WebSocketFrames.decode(bytes[...]) { return frame }
            guard let more = client.readSome() else { return nil }
            bytes += more
        }
    }

    @Test func relaysAWebSocketWithTheTokenOnItsHandshake() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send(Self.handshake(path: "/ws/chat", extra: "Sec-WebSocket-Protocol: chat\r\n"))
        let response = try client.readHead()
        #expect(response.status == 101)
        #expect(response.value(of: "upgrade")?.lowercased() == "websocket")
        #expect(response.value(of: "connection")?.lowercased() == "upgrade")
        #expect(response.value(of: "sec-websocket-accept") == WebSocketFrames.acceptValue(for: Self.key))
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.header("authorization") == "Bearer \(ProxyFixture.token)")
        #expect(seen.header("upgrade") == "websocket")
        #expect(seen.header("connection") == "upgrade")
        #expect(seen.header("sec-websocket-key") == Self.key)
        #expect(seen.header("sec-websocket-protocol") == "chat")
        // The frame the upstream sent in the same write as its 101 arrives first.
        #expect(Self.readFrame(client) == .text("welcome to /ws/chat"))
        for message in ["one", String(repeating: "x", count: 70_000), "three"] {
            client.send(WebSocketFrames.encode(.text(message), masked: true))
            #expect(Self.readFrame(client) == .text(message))
        }
        client.send(WebSocketFrames.encode(WebSocketFrames.Frame(opcode: 0x8, payload: [0x03, 0xE8]), masked: true))
        #expect(Self.readFrame(client)?.opcode == 0x8)
        // The upstream's end reaches the client as a half-close; the client's own end finishes the relay.
        #expect(client.waitForClose())
        client.shutdownWrite()
        #expect(waitUntil { fixture.proxy.runtime.openConnections.load(ordering: .relaxed) == 0 })
    }

    @Test(.requires(.pythonWebSockets))
    func aRealWebSocketClientTalksThroughTheProxy() throws {
        let fixture = try ProxyFixture()
        let script = """
            import asyncio, sys, websockets
            async def main():
                async with websockets.connect(sys.argv[1], open_timeout=10) as ws:
                    print(await ws.recv(), flush=True)
                    await ws.send("hello through the proxy")
                    print(await ws.recv(), flush=True)
            asyncio.run(asyncio.wait_for(main(), 20))
            """
        let outcome = try ExternalTools.run(
            [ExternalTools.debianPython, "-c", script, "ws://127.0.0.1:\(fixture.port)/live"],
            timeout: .seconds(30)
        )
        #expect(outcome.status == 0, "python websockets failed: \(outcome.standardError)")
        #expect(outcome.standardOutput == "welcome to /live\nhello through the proxy\n")
        #expect(fixture.upstream.requests.last?.header("authorization") == "Bearer \(ProxyFixture.token)")
    }

    @Test func fiftyHandshakesWithARevokedTokenShareOneRefresh() throws {
        let fixture = try SessionFixture(tokenSettings: { $0.delay = .milliseconds(200) }) { config, _ in
            config.accessToken = Secret("revoked-before-the-handshakes")
        }
        // All fifty handshakes are sent before any is answered: they meet the revoked token together.
        let clients = try (0..<50).map { _ in try fixture.client() }
        for (index, client) in clients.enumerated() { client.send(Self.handshake(path: "/ws/\(index)")) }
        var opened = 0
        var echoed = 0
        for (index, client) in clients.enumerated() {
            guard try client.readHead().status == 101 else { continue }
            opened += 1
            guard Self.readFrame(client) == .text("welcome to /ws/\(index)") else { continue }
            client.send(WebSocketFrames.encode(.text("n\(index)"), masked: true))
            if Self.readFrame(client) == .text("n\(index)") { echoed += 1 }
        }
        #expect(opened == 50)
        #expect(echoed == 50)
        #expect(fixture.tokenServer.callCount == 1)
        fixture.expectNoSecretsInLogs()
    }

    @Test func otherUpgradesAreNotForwarded() throws {
        let fixture = try ProxyFixture()
        let response = try fixture.get(
            "/h2c",
            headers:
                "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"
        )
        #expect(response.status == 200)
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.header("upgrade") == nil)
        #expect(seen.header("http2-settings") == nil)
        #expect(seen.header("connection") == nil)
    }

    @Test func anIdleWebSocketIsClosedAfterTunnelIdleTimeout() throws {
        let fixture = try ProxyFixture { $0.tunnelIdleTimeout = .milliseconds(300) }
        let client = try fixture.client()
        client.send(Self.handshake(path: "/ws/idle"))
        #expect(try client.readHead().status == 101)
        #expect(Self.readFrame(client) == .text("welcome to /ws/idle"))
        #expect(client.waitForClose())
        #expect(waitUntil { fixture.proxy.runtime.openConnections.load(ordering: .relaxed) == 0 })
    }

    @Test func anIdleConnectTunnelIsClosedAfterTunnelIdleTimeout() throws {
        let other = MockUpstream(group: mockGroup)
        try other.start()
        defer { other.stop() }
        // Long enough for the test to send its request through, however loaded the machine.
        let fixture = try ProxyFixture {
            $0.tunnelIdleTimeout = .seconds(2)
            $0.injectHosts = [.host("api.example.com")]
        }
        let client = try fixture.client()
        let authority = "127.0.0.1:\(other.port)"
        client.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(try client.readResponse(method: .connect).status == 200)
        client.send("GET /through HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(client.waitForClose())
    }
}
