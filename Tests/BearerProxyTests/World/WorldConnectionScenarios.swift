import BearerCore
import BearerDemo
import BearerTestSupport
import Testing

@testable import BearerConfig

/// A client connection's life, in memory and live: its timeouts (the manual clock in memory), the
/// upstream's, a WebSocket and a CONNECT tunnel once the proxy relays bytes, and a shutdown's drain.
@Suite struct WorldConnectionScenarios {
    @Test(arguments: WorldBackend.chosen)
    func anIdleKeepAliveConnectionIsClosedAfterClientIdleTimeout(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, _ in
            configuration.clientIdleTimeout = .milliseconds(300)
        }
        let client = try world.connect()
        client.send("GET /a HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        if backend == .memory { #expect(!client.closedByProxy(), "closed before its idle timeout") }
        world.advance(by: .milliseconds(400))
        #expect(client.closedByProxy())
    }

    @Test(arguments: WorldBackend.chosen)
    func aSlowRequestHeadIsAnswered408AfterClientHeaderTimeout(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, _ in
            configuration.clientHeaderTimeout = .milliseconds(300)
        }
        let client = try world.connect()
        client.send("GET / HTTP/1.1\r\nHost: \(world.proxyHost)\r\n")
        world.advance(by: .milliseconds(400))
        #expect(try client.readResponse().status == 408)
        #expect(world.upstream.requests.isEmpty)
        #expect(try world.get("/after").status == 200)
    }

    @Test(arguments: WorldBackend.chosen)
    func anUpstreamThatDoesNotAnswerIsA504AfterUpstreamTimeout(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, _ in
            configuration.upstreamTimeout = .seconds(1)
        }
        let client = try world.connect()
        client.send("GET /hang HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n")
        world.advance(by: .milliseconds(1100))
        let response = try client.readResponse()
        #expect(response.status == 504)
        #expect(response.text.contains("upstream_timeout"))
        #expect(try world.get("/after").status == 200)
    }

    @Test(arguments: WorldBackend.chosen)
    func aWebSocketUpgradeCarriesTheTokenAndRelaysBytesBothWays(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let client = try world.connect()
        client.send(
            "GET /ws/chat HTTP/1.1\r\nHost: \(world.proxyHost)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        let head = try client.readHead()
        #expect(head.status == 101)
        #expect(head.value(of: "sec-websocket-accept") == WebSocketFrames.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(world.upstreamTokens == ["mock-access-1"])
        #expect(client.readFrame() == .text("welcome to /ws/chat"))
        for message in ["one", String(repeating: "x", count: 70_000)] {
            client.send(WebSocketFrames.encode(.text(message), masked: true))
            #expect(client.readFrame() == .text(message))
        }
    }

    @Test(arguments: WorldBackend.chosen)
    func aConnectToAnotherHostIsTunnelledWithoutAToken(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let (other, authority) = try world.startOtherUpstream()
        let client = try world.connect()
        client.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(try client.readHead().status == 200)
        client.send("GET /tunnelled HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(other.requests.map(\.target) == ["/tunnelled"])
        #expect(other.requests.first?.header("authorization") == nil)
        #expect(world.upstream.requests.isEmpty)
    }

    @Test(arguments: WorldBackend.chosen)
    func aDrainFinishesTheRequestInFlightAndRefusesNewConnections(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let client = try world.connect()
        client.send("GET /slow/300 HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n")
        #expect(world.settle { world.upstream.requests.count == 1 })
        #expect(world.drain(timeout: .seconds(5)) == 0)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "slow\n")
        #expect(client.closedByProxy())
        #expect(throws: (any Error).self) { try world.get("/after-drain") }
    }

    @Test(arguments: WorldBackend.chosen)
    func aLargeResponseStreamsThroughWhole(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let response = try world.get("/bytes/3000000")
        #expect(response.body.count == 3_000_000 && countMockPatternMismatches(response.body) == 0)
    }
}
