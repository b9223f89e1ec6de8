import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// The whole proxy on the in-memory network, on one stepped loop that the test's thread runs: its
/// listener, the mock upstream and token endpoint are names on a `MemoryNetwork`, its blocking work
/// runs when the loop settles, and time is a manual clock. No socket, no other thread, no sleep: the
/// seam that proxy-level scenarios are written on.
final class InMemoryProxy {
    let clock = ManualTimeSource()
    let loop: EventLoop
    let group: EventLoopGroup
    let network = MemoryNetwork()
    let blockingWork: BlockingWorkPool
    let upstream: MockUpstream
    let proxy: ProxyServer
    let logs = LogSink(capturing: ())

    init(
        upstream makeUpstream: (EventLoopGroup, MemoryNetwork) -> MockUpstream,
        _ configure: (inout Configuration) throws -> Void
    ) throws {
        self.loop = EventLoop.stepped(clock: self.clock)
        self.group = EventLoopGroup(stepped: self.loop)
        self.blockingWork = BlockingWorkPool(settlingOn: self.loop)
        self.upstream = makeUpstream(self.group, self.network)
        try self.upstream.start(on: self.network.address(of: "api.test", port: 80))
        var configuration = Configuration()
        configuration.listen = [.hostPort(host: "127.0.0.1", port: 8080)]
        configuration.upstream = try HTTPURL.parse("http://api.test").get()
        configuration.workers = 1
        try configure(&configuration)
        self.proxy = try ProxyServer.start(
            configuration: configuration,
            logger: Logger(level: .debug, sink: self.logs),
            group: self.group,
            network: self.network,
            blockingWork: self.blockingWork
        )
    }

    deinit {
        self.proxy.shutdown()
        self.upstream.stop()
        self.group.shutdown()
    }

    /// Sends `request` on a new connection to the proxy and runs the loop until everything settled;
    /// returns what came back.
    func exchange(_ request: String) throws -> String {
        let client = try self.network.connect(to: self.proxy.boundAddresses[0], on: self.loop)
        let reader = ResponseReader()
        client.start(delegate: reader)
        self.loop.runUntilQuiescent()
        client.write(Array(request.utf8))
        client.flush()
        self.loop.runUntilQuiescent()
        client.close()
        return String(decoding: reader.received, as: UTF8.self)
    }

    private final class ResponseReader: StreamConnectionDelegate {
        var received: [UInt8] = []

        func streamReceived(_ connection: StreamConnection) {
            self.received += connection.inbound.readableBytesArray
            connection.inbound.clear()
        }

        func streamReadEnded(_ connection: StreamConnection) {}
        func streamWritable(_ connection: StreamConnection) {}
        func streamConnected(_ connection: StreamConnection) {}
        func streamClosed(_ connection: StreamConnection, error: IOError?) {}
    }
}

@Suite struct InMemoryProxyTests {
    @Test func injectsTheTokenWithoutASocket() throws {
        let world = try InMemoryProxy(
            upstream: { group, network in MockUpstream(group: group, acceptedTokens: ["tok-memory"], network: network) }
        ) { configuration in
            configuration.accessToken = Secret("tok-memory")
        }
        let response = try world.exchange("GET /hello HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 200"), "\(response)")
        #expect(world.upstream.requests.map { $0.header("authorization") } == ["Bearer tok-memory"])
    }

    @Test func fetchesTheFirstTokenAndReplacesARevokedOneOnTheManualClock() throws {
        let authority = MockTokenAuthority()
        let world = try InMemoryProxy(
            upstream: { group, network in MockUpstream(group: group, authority: authority, network: network) }
        ) { configuration in
            configuration.tokenURL = try HTTPURL.parse("http://auth.test/oauth/token").get()
            configuration.clientID = "memory-client"
            configuration.clientSecret = Secret("memory-secret")
        }
        // The token endpoint on the same loop and network, at the name the configuration gives. The
        // session's first fetch started with the proxy; it runs once the loop settles.
        let endpoint = MockTokenServer(group: world.group, authority: authority, network: world.network)
        try endpoint.start(on: world.network.address(of: "auth.test", port: 80))
        defer { endpoint.stop() }

        let first = try world.exchange("GET /one HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
        #expect(first.hasPrefix("HTTP/1.1 200"), "\(first)")
        authority.revokeAll()
        world.loop.advance(by: .seconds(1))
        let second = try world.exchange("GET /two HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
        #expect(second.hasPrefix("HTTP/1.1 200"), "the 401 was replayed with a new token: \(second)")
        #expect(endpoint.callCount == 2)
        #expect(world.upstream.requests.map(\.target) == ["/one", "/two", "/two"])
    }
}
