import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// A fleet in one process: several proxies sharing one session through a real redis-server, in
/// front of one mock API whose tokens come from one mock token server. Every proxy's log is captured.
final class FleetFixture {
    let redis: RedisServerProcess
    let authority = MockTokenAuthority()
    let tokenServer: MockTokenServer
    let upstream: MockUpstream
    private(set) var proxies: [ProxyServer] = []
    private(set) var logs: [LogSink] = []
    private let configure: (inout Configuration) -> Void

    static let seedRefreshToken = "rt-seed-4f1c"
    static let clientSecret = "fleet-client-secret-77"
    static let storePassword = "fleet-store-pass-5d"

    /// `rotation`: the token server rotates refresh tokens and revokes the family on reuse.
    init(
        proxies count: Int,
        rotation: Bool = true,
        startWithToken: Bool = true,
        _ configure: @escaping (inout Configuration) -> Void = { _ in }
    ) throws {
        self.redis = try RedisServerProcess(configuration: ["--requirepass", Self.storePassword])
        let settings = MockTokenServer.Settings.refreshTokenGrant(
            seed: Self.seedRefreshToken,
            clientID: "fleet-client",
            clientSecret: Self.clientSecret,
            rotation: rotation
        )
        self.tokenServer = MockTokenServer(group: mockGroup, authority: self.authority, settings: settings)
        try self.tokenServer.start()
        self.upstream = MockUpstream(group: mockGroup, authority: self.authority)
        try self.upstream.start()
        let initial = startWithToken ? self.authority.issue(lifetime: nil) : nil
        self.configure = { configuration in
            if let initial { configuration.accessToken = Secret(initial) }
            configure(&configuration)
        }
        for _ in 0..<count { try self.addProxy() }
    }

    deinit {
        for proxy in self.proxies { proxy.shutdown() }
        self.upstream.stop()
        self.tokenServer.stop()
        self.redis.kill()
    }

    var storeEndpoint: RedisEndpoint {
        RedisEndpoint(host: "127.0.0.1", port: self.redis.port, password: Secret(Self.storePassword))
    }

    /// Starts one more proxy of the fleet (a late joiner when the others run already).
    @discardableResult
    func addProxy(_ extra: (inout Configuration) -> Void = { _ in }) throws -> ProxyServer {
        var configuration = Configuration()
        configuration.listen = [.hostPort(host: "127.0.0.1", port: 0)]
        configuration.adminListen = .hostPort(host: "127.0.0.1", port: 0)
        configuration.upstream = try HTTPURL.parse(self.upstream.baseURL).get()
        configuration.tokenURL = try HTTPURL.parse(self.tokenServer.url).get()
        configuration.grantType = .refreshToken
        configuration.refreshToken = Secret(Self.seedRefreshToken)
        configuration.clientID = "fleet-client"
        configuration.clientSecret = Secret(Self.clientSecret)
        configuration.workers = 2
        configuration.acceptHosts = [.host("localhost")]
        configuration.refreshTimeout = .seconds(5)
        configuration.sessionStore.endpoint = self.storeEndpoint
        configuration.sessionName = "fleet-test"
        self.configure(&configuration)
        extra(&configuration)
        let logs = LogSink(capturing: ())
        let proxy = try ProxyServer.start(configuration: configuration, logger: Logger(level: .debug, sink: logs))
        self.proxies.append(proxy)
        self.logs.append(logs)
        return proxy
    }

    /// Waits (bounded) until every proxy's store connection and subscription are up.
    func waitUntilConnected() -> Bool {
        waitUntil {
            self.proxies.allSatisfy { proxy in
                guard let status = proxy.runtime.session.sessionStore?.status else { return false }
                return status.state == "connected" && status.isSubscribed
            }
        }
    }

    /// `GET path` through proxy `index` on a fresh connection.
    func get(_ path: String, through index: Int) throws -> BlockingHTTPClient.Response {
        try httpRequest(self.proxies[index].boundAddresses[0], "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
    }

    /// `clients` connections spread over the proxies, each sending one request at once; the statuses
    /// they got, counted.
    func burst(clients: Int, path: String) throws -> [Int: Int] {
        let connections = try (0..<clients).map { index in
            try BlockingHTTPClient(connectingTo: self.proxies[index % self.proxies.count].boundAddresses[0])
        }
        for (index, client) in connections.enumerated() {
            client.send("GET \(path)/\(index) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        }
        var statuses: [Int: Int] = [:]
        for client in connections { statuses[try client.readResponse().status, default: 0] += 1 }
        return statuses
    }

    /// The token the last request through proxy `index` carried upstream.
    func tokenSentUpstream(through index: Int) throws -> String? {
        _ = try self.get("/which-token", through: index)
        return self.upstream.requests.last?.header("authorization")
    }

    func warnings(_ text: String, proxy index: Int) -> Int {
        self.logs[index].capturedLines.filter { $0.contains(text) }.count
    }

    /// Every secret of the fleet: issued access and refresh tokens, the client secret, the store password.
    var secrets: [String] {
        (1...max(1, self.authority.issuedCount)).map { "\(self.authority.prefix)\($0)" }
            + self.tokenServer.issuedRefreshTokenList + [Self.seedRefreshToken, Self.clientSecret, Self.storePassword]
    }
}
