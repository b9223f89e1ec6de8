import BearerCore
import BearerDemo
import BearerHTTP
import BearerTestSupport
import Foundation
import Testing

@testable import BearerConfig

/// Sessions beside the default one, the admin endpoints that act on a session, and a tunnel the proxy
/// intercepts to put the token in: in memory and live.
@Suite struct WorldSessionScenarios {
    /// A world with a second session, `vendor`, in front of another upstream with a static token;
    /// `settle` places it (a mount, a listener).
    static func vendorWorld(
        _ backend: WorldBackend,
        _ settle: (inout SessionSettings, TestWorld) -> Void
    ) throws -> (TestWorld, MockUpstream) {
        var vendorUpstream: MockUpstream?
        let world = try TestWorld(backend) { configuration, world in
            let (other, authority) = try world.startOtherUpstream()
            vendorUpstream = other
            var vendor = SessionSettings(name: "vendor")
            vendor.upstream = try HTTPURL.parse("http://\(authority)").get()
            vendor.accessToken = Secret("vendor-static-token")
            settle(&vendor, world)
            configuration.sessions.append(vendor)
        }
        return (world, try #require(vendorUpstream))
    }

    @Test(arguments: WorldBackend.chosen)
    func aNamedSessionMountedAtAPathCarriesItsOwnToken(backend: WorldBackend) throws {
        let (world, vendor) = try Self.vendorWorld(backend) { session, _ in session.mount = "/vendor" }
        #expect(try world.get("/vendor/items").status == 200)
        #expect(try world.get("/default/items").status == 200)
        #expect(vendor.requests.map(\.target) == ["/items"])
        #expect(vendor.requests.map { $0.header("authorization") } == ["Bearer vendor-static-token"])
        #expect(world.upstreamTargets == ["/default/items"])
        #expect(world.upstreamTokens == ["mock-access-1"])
    }

    @Test(arguments: WorldBackend.chosen)
    func aNamedSessionWithAListenerOfItsOwnServesEverythingThere(backend: WorldBackend) throws {
        let (world, vendor) = try Self.vendorWorld(backend) { session, world in
            session.listen = [.hostPort(host: "127.0.0.1", port: world.port(8181))]
        }
        let address = try #require(world.proxy.sessionAddresses.first { $0.0 == "vendor" }?.1)
        let client = try world.connect(to: address)
        client.send("GET /own HTTP/1.1\r\nHost: 127.0.0.1:\(address.port ?? 0)\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(try world.get("/main").status == 200)
        #expect(vendor.requests.map(\.target) == ["/own"])
        #expect(vendor.requests.map { $0.header("authorization") } == ["Bearer vendor-static-token"])
        #expect(world.upstreamTargets == ["/main"])
    }

    /// An admin request on a new connection to the admin listener.
    static func admin(_ world: TestWorld, _ method: String, _ path: String) throws -> WorldClient.Response {
        let address = try #require(world.proxy.adminAddress)
        let client = try world.connect(to: address)
        client.send("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(address.port ?? 0)\r\nContent-Length: 0\r\n\r\n")
        return try client.readResponse()
    }

    @Test(arguments: WorldBackend.chosen)
    func anAdminRefreshPutsANewTokenInUse(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, world in
            configuration.adminListen = .hostPort(host: "127.0.0.1", port: world.port(9090))
        }
        world.settle { world.session.state == "ready" }
        let refresh = try Self.admin(world, "POST", "/refresh")
        #expect(refresh.status == 200)
        #expect(refresh.text.contains(#""token_generation":2"#), "\(refresh.text)")
        #expect(world.tokenServer.callCount == 2)
        #expect(try world.get("/after").status == 200)
        #expect(world.upstreamTokens == ["mock-access-2"])
    }

    @Test(arguments: WorldBackend.chosen)
    func anAdminLogoutDropsTheTokenUntilTheNextRefresh(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, world in
            configuration.adminListen = .hostPort(host: "127.0.0.1", port: world.port(9090))
        }
        world.settle { world.session.state == "ready" }
        #expect(try Self.admin(world, "POST", "/logout").status == 200)
        #expect(world.session.state == "logged_out")
        let refused = try world.get("/while-logged-out")
        #expect(refused.status == 401)
        #expect(refused.text.contains("logged out"), "\(refused.text)")
        #expect(world.upstream.requests.isEmpty)
        #expect(try Self.admin(world, "POST", "/refresh").status == 200)
        #expect(try world.get("/back").status == 200)
        #expect(world.upstreamTokens == ["mock-access-2"])
    }

    @Test(arguments: WorldBackend.chosen)
    func metricsCountTheRequestsTheRefreshAndTheReplay(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, world in
            configuration.adminListen = .hostPort(host: "127.0.0.1", port: world.port(9090))
        }
        #expect(try world.get("/warm").status == 200)
        world.authority.revokeAll()
        #expect(try world.get("/replayed").status == 200)
        let metrics = try Self.admin(world, "GET", "/metrics").text
        for line in [
            #"bearer_proxy_requests_total{class="2xx",protocol="http/1.1"} 2"#, "bearer_proxy_replays_total 1",
            "bearer_proxy_upstream_401s_total 1", "bearer_proxy_token_generation 2",
            "bearer_proxy_parked_requests 0",
        ] {
            #expect(metrics.contains(line + "\n"), "no \(line) in \(metrics)")
        }
        #expect(world.upstreamTokens == ["mock-access-1", "mock-access-1", "mock-access-2"])
    }

    @Test(arguments: WorldBackend.chosen)
    func anInterceptedTunnelGetsTheTokenInsideTLSMadeByTheLocalCA(backend: WorldBackend) throws {
        let caDirectory = try ScratchSpace.newPath("world-intercept")
        defer { try? FileManager.default.removeItem(atPath: caDirectory) }
        let world = try TestWorld(backend, upstreamTLS: try TLSFixtures.server()) { configuration, _ in
            configuration.caFile = TLSFixtures.caFile
            configuration.intercept.isEnabled = true
            configuration.intercept.caDirectory = caDirectory
        }
        world.settle { world.session.state == "ready" }
        let authority = world.upstreamAuthority
        let client = try world.connect()
        client.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(try client.readHead().status == 200)
        let tls = MemoryTLSClient(socket: client.channel, .init(caFile: caDirectory + "/ca.pem"))
        tls.feed(client.takeBuffered())
        try tls.finishHandshake()
        #expect(tls.peerChainSubjects.first?.contains("localhost") == true)
        tls.write("GET /v1/items HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(String(decoding: tls.read(count: 12).bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        #expect(world.upstreamTargets == ["/v1/items"])
        #expect(world.upstreamTokens == ["mock-access-1"])
    }
}
