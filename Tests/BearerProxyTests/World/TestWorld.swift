import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Testing

@testable import BearerConfig
@testable import BearerProxy
@testable import BearerSession

/// A proxy between clients, a mock upstream and a mock token endpoint, on one of two backends behind
/// one API (`WorldBackend`): scenarios start it with a configuration, open client connections, send
/// raw bytes, read responses, move time, and look at what the mocks saw and what the session shows.
///
/// The configuration a scenario starts from names the mocks by URL (`upstreamURL`, `tokenURL`):
/// client credentials at the token endpoint, with tokens the upstream accepts until they are
/// revoked. In memory the mocks are `api.test` and `auth.test` on the memory network, the proxy
/// listens on 127.0.0.1:8080, and the proxy and mocks share one stepped loop on a manual clock; live
/// they are loopback ports the kernel picked, on real loops and time.
///
/// Time: `advance(by:until:)` moves the manual clock in memory; live it waits (bounded) for the
/// event the scenario expects from time passing, so scenarios about time configure small durations.
final class TestWorld {
    let backend: WorldBackend
    let authority = MockTokenAuthority()
    let tokenServer: MockTokenServer
    let upstream: MockUpstream
    let logs = LogSink(capturing: ())
    private(set) var proxy: ProxyServer!
    private let upstreamIsTLS: Bool
    /// Mock servers a scenario started besides the two, stopped with the world.
    private var others: [MockUpstream] = []
    /// The memory backend's pieces (nil live).
    private let memory: Memory?

    private struct Memory {
        let clock = ManualTimeSource()
        let loop: EventLoop
        let group: EventLoopGroup
        let network = MemoryNetwork()
        let blockingWork: BlockingWorkPool
    }

    static let clientID = "world-client"
    static let clientSecret = "world-secret-7c1d"

    /// `tokens` adjusts the token endpoint's settings; `upstreamTLS` serves the upstream over TLS;
    /// `configure` the proxy's configuration (the mocks' URLs are in place when it runs).
    init(
        _ backend: WorldBackend,
        tokens: (inout MockTokenServer.Settings) -> Void = { _ in },
        upstreamTLS: TLSContext? = nil,
        _ configure: (inout Configuration, TestWorld) throws -> Void
    ) throws {
        self.backend = backend
        self.upstreamIsTLS = upstreamTLS != nil
        var settings = MockTokenServer.Settings()
        settings.clientID = Self.clientID
        settings.clientSecret = Self.clientSecret
        settings.expiresIn = 3600
        tokens(&settings)
        let group: EventLoopGroup
        let network: any StreamNetwork
        switch backend {
        case .memory:
            let clock = ManualTimeSource()
            let loop = EventLoop.stepped(clock: clock)
            let memory = Memory(
                loop: loop,
                group: EventLoopGroup(stepped: loop),
                blockingWork: BlockingWorkPool(settlingOn: loop)
            )
            self.memory = memory
            (group, network) = (memory.group, memory.network)
        case .live:
            self.memory = nil
            (group, network) = (mockGroup, SocketNetwork())
        }
        self.tokenServer = MockTokenServer(
            group: group,
            authority: self.authority,
            settings: settings,
            network: network
        )
        self.upstream = MockUpstream(group: group, authority: self.authority, tls: upstreamTLS, network: network)
        if let memory {
            try self.tokenServer.start(on: memory.network.address(of: "auth.test", port: 80))
            let (host, port) = upstreamTLS == nil ? ("api.test", 80) : ("localhost", 443)
            try self.upstream.start(on: memory.network.address(of: host, port: port))
        } else {
            try self.tokenServer.start()
            try self.upstream.start()
        }
        var configuration = Configuration()
        configuration.listen = [.hostPort(host: "127.0.0.1", port: backend == .memory ? 8080 : 0)]
        configuration.upstream = try HTTPURL.parse(self.upstreamURL).get()
        configuration.tokenURL = try HTTPURL.parse(self.tokenURL).get()
        configuration.grantType = .clientCredentials
        configuration.clientID = Self.clientID
        configuration.clientSecret = Secret(Self.clientSecret)
        configuration.workers = backend == .memory ? 1 : 2
        configuration.refreshTimeout = .seconds(5)
        try configure(&configuration, self)
        self.proxy = try ProxyServer.start(
            configuration: configuration,
            logger: Logger(level: .debug, sink: self.logs),
            group: self.memory?.group,
            network: network,
            blockingWork: self.memory?.blockingWork
        )
        self.memory?.loop.runUntilQuiescent()
    }

    /// A world whose proxy runs the configuration the world starts from.
    convenience init(
        _ backend: WorldBackend,
        tokens: (inout MockTokenServer.Settings) -> Void = { _ in },
        upstreamTLS: TLSContext? = nil
    ) throws {
        try self.init(backend, tokens: tokens, upstreamTLS: upstreamTLS) { _, _ in }
    }

    deinit {
        self.proxy?.shutdown()
        self.upstream.stop()
        self.tokenServer.stop()
        for other in self.others { other.stop() }
        self.memory?.group.shutdown()
    }

    // MARK: Names

    /// The mock upstream's base URL (no trailing slash). Over TLS it is `localhost`, the name the
    /// test certificate has (in memory on port 443).
    var upstreamURL: String {
        switch (self.memory != nil, self.upstreamIsTLS) {
        case (true, false): "http://api.test"
        case (true, true): "https://localhost"
        case (false, false): self.upstream.baseURL
        case (false, true): "https://localhost:\(self.upstream.port)"
        }
    }

    /// The upstream's `host:port`, as a CONNECT or an absolute-form request names it.
    var upstreamAuthority: String {
        switch (self.memory != nil, self.upstreamIsTLS) {
        case (true, false): "api.test:80"
        case (true, true): "localhost:443"
        case (false, false): "127.0.0.1:\(self.upstream.port)"
        case (false, true): "localhost:\(self.upstream.port)"
        }
    }

    /// The mock token endpoint's URL.
    var tokenURL: String { "\(self.tokenServerBase)/oauth/token" }

    /// The mock's RFC 7009 revocation URL.
    var revocationURL: String { "\(self.tokenServerBase)/oauth/revoke" }

    private var tokenServerBase: String { self.memory == nil ? self.tokenServer.server.baseURL : "http://auth.test" }

    /// A URL on the world's network where nothing listens (in memory `down.test`; live a loopback
    /// port that was free a moment ago).
    func unreachableURL(path: String) throws -> String {
        guard self.memory == nil else { return "http://down.test\(path)" }
        return "http://127.0.0.1:\(try ErrorPathTests.deadPort())\(path)"
    }

    /// A port for a listener a scenario configures: `inMemory` in memory, live 0 (the kernel picks).
    func port(_ inMemory: Int) -> Int { self.memory == nil ? 0 : inMemory }

    /// Where the proxy's main listener is.
    var proxyAddress: SocketAddress { self.proxy.boundAddresses[0] }

    /// What a client's Host header names the proxy by.
    var proxyHost: String { "127.0.0.1:\(self.proxyAddress.port ?? 0)" }

    /// The address on the world's network of `host:port` (live: loopback, the port as given).
    func address(of host: String, port: Int) -> SocketAddress {
        self.memory?.network.address(of: host, port: port) ?? SocketAddress(ipAddress: "127.0.0.1", port: port)!
    }

    /// Another API on the world's network, which accepts any request (in memory `other.test:80`):
    /// a host the proxy has no token for. Returns it and its `host:port`.
    func startOtherUpstream() throws -> (upstream: MockUpstream, authority: String) {
        guard let memory else {
            let other = MockUpstream(group: mockGroup)
            try other.start()
            self.others.append(other)
            return (other, "127.0.0.1:\(other.port)")
        }
        let other = MockUpstream(group: memory.group, network: memory.network)
        try other.start(on: memory.network.address(of: "other.test", port: 80))
        self.others.append(other)
        return (other, "other.test:80")
    }

    // MARK: Clients

    /// A new connection to the proxy's main listener (or `address`).
    func connect(to address: SocketAddress? = nil) throws -> WorldClient {
        let address = address ?? self.proxyAddress
        if let memory {
            return WorldClient(try MemoryClientChannel(to: address, on: memory.network, loop: memory.loop), in: self)
        }
        return WorldClient(try BlockingHTTPClient(connectingTo: address), in: self)
    }

    /// One request on a new connection, its response read whole.
    func send(_ raw: String, method: HTTPMethod = .get) throws -> WorldClient.Response {
        let client = try self.connect()
        client.send(raw)
        return try client.readResponse(method: method)
    }

    /// `GET path` naming the proxy as its Host, on a new connection.
    func get(_ path: String, headers: String = "") throws -> WorldClient.Response {
        try self.send("GET \(path) HTTP/1.1\r\nHost: \(self.proxyHost)\r\n\(headers)\r\n")
    }

    // MARK: Time and events

    /// Lets the world run until `condition` holds: in memory it settles (runs until nothing is
    /// pending) and looks once; live it waits, bounded, for the condition, an event another thread
    /// brings about.
    @discardableResult
    func settle(until condition: () -> Bool = { true }) -> Bool {
        guard let memory else { return waitUntil(condition) }
        memory.loop.runUntilQuiescent()
        return condition()
    }

    /// Lets `duration` pass: in memory the manual clock moves (settling at every timer due on the
    /// way) and `condition` is looked at once; live, the condition that time passing brings about is
    /// waited for, bounded by `duration` and a margin (no condition: live, nothing waits).
    @discardableResult
    func advance(by duration: Duration, until condition: () -> Bool = { true }) -> Bool {
        guard let memory else { return waitUntil(timeout: duration + .seconds(10), condition) }
        memory.loop.advance(by: duration)
        return condition()
    }

    /// Stops accepting and asks every connection to finish; returns how many are still open after
    /// `timeout` (in memory: after the clock moved by it).
    func drain(timeout: Duration) -> Int {
        guard let memory else { return self.proxy.drain(timeout: timeout) }
        self.proxy.drain(timeout: .zero)
        memory.loop.advance(by: timeout)
        return self.proxy.runtime.openConnections.load(ordering: .sequentiallyConsistent)
    }

    // MARK: What happened

    /// The default session's status, as /status shows it.
    var session: TokenSession.Status { self.proxy.runtime.session.status }

    /// The token (without `Bearer `) each request the upstream received carried, in order.
    var upstreamTokens: [String?] {
        self.upstream.requests.map { $0.header("authorization").map { String($0.dropFirst("Bearer ".count)) } }
    }

    /// The targets of the requests the upstream received, in order.
    var upstreamTargets: [String] { self.upstream.requests.map(\.target) }
}
