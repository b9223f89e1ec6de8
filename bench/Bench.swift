import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc

/// Runs the scenarios: mocks in this process, the real proxy as a child, load from this process.
final class Bench {
    let options: BenchOptions
    let proxyBinary: String
    let mockGroup: EventLoopGroup
    let loadGroup: EventLoopGroup
    let authority = MockTokenAuthority()
    let tokenServer: MockTokenServer
    let upstream: MockUpstream
    /// The APIs of `--sessions`: the one above (the default session's) first, then `s2` … `sN`.
    let sessionAPIs: [SessionAPI]
    var log: (String) -> Void
    let progress: ProgressLine
    /// `--soak`: every measurement is a soak (its storm, its rotating connections, its sampler).
    var soak: SoakPlan?
    /// What each soaked scenario's sampler found, in the order they ran.
    private(set) var soakResults: [SoakResult] = []

    func recordSoak(_ result: SoakResult) {
        self.soakResults.append(result)
    }
    /// The fleet's session store, started when the fleet scenario first runs.
    private var redis: RedisServerProcess?
    /// The https mock API of the TLS scenarios (the test certificate for localhost), started when one
    /// first runs.
    private var secureMock: MockUpstream?
    private var mitmproxy: MitmproxyTarget?
    /// The DPoP mock API of the dpop scenarios, started when one first runs (`Bench+DPoP`).
    var dpopAPI: MockUpstream?
    /// The proxy's DPoP key, made by its first start and kept for the other rounds.
    let dpopKeyFolder: String
    /// The local CA of the intercepting proxy, made by its first start and kept for the other rounds.
    let caDirectory: String
    /// The load generator's TLS: no verification (the client's CPU is not what is measured).
    let clientTLS: TLSContext

    /// The test certificate for localhost and 127.0.0.1 and its CA (Tests/Fixtures/tls).
    static let tlsFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tests/Fixtures/tls")
    static var testCA: String { Self.tlsFixtures.appendingPathComponent("ca.pem").path }

    static let clientID = "bench-client"
    static let clientSecret = "bench-secret"

    init(
        options: BenchOptions,
        proxyBinary: String,
        log: @escaping (String) -> Void,
        progress: ProgressLine = ProgressLine(isEnabled: false)
    ) throws {
        self.options = options
        self.proxyBinary = proxyBinary
        self.log = log
        self.progress = progress
        self.dpopKeyFolder = try ScratchSpace.newPath("dpop")
        self.caDirectory = try ScratchSpace.newPath("ca")
        self.mockGroup = EventLoopGroup(count: 1, name: "bench-mocks")
        self.loadGroup = EventLoopGroup(count: options.loadThreads, name: "bench-load")
        self.clientTLS = try TLSContext.client(caFile: nil, verify: false)
        var settings = MockTokenServer.Settings()
        settings.clientID = Self.clientID
        settings.clientSecret = Self.clientSecret
        self.tokenServer = MockTokenServer(group: self.mockGroup, authority: self.authority, settings: settings)
        self.upstream = MockUpstream(
            group: self.mockGroup,
            acceptedTokens: [options.staticToken],
            authority: self.authority,
            recordsRequests: false,
            countsRequestIDs: true
        )
        try self.tokenServer.start()
        try self.upstream.server.start(on: SocketAddress(ipAddress: "127.0.0.1", port: options.upstreamPort)!)
        var apis = [
            SessionAPI(
                name: "default",
                authority: self.authority,
                tokenServer: self.tokenServer,
                upstream: self.upstream
            )
        ]
        for number in stride(from: 2, through: options.sessions, by: 1) {
            apis.append(
                try SessionAPI.start(name: "s\(number)", group: self.mockGroup, staticToken: options.staticToken)
            )
        }
        self.sessionAPIs = apis
    }

    func shutdown() {
        self.redis?.stop()
        self.mitmproxy?.stop()
        self.secureMock?.stop()
        self.dpopAPI?.stop()
        try? FileManager.default.removeItem(atPath: self.caDirectory)
        for api in self.sessionAPIs { api.stop() }
        try? FileManager.default.removeItem(atPath: self.dpopKeyFolder)
        self.mockGroup.shutdown()
        self.loadGroup.shutdown()
    }

    /// The proxy's config for a scenario; `withSessions`: one `[session]` for each API beside the
    /// default one (`--sessions`).
    func proxyConfig(
        upstream: String? = nil,
        grant: String = "grant_type = client_credentials",
        extra: String = "",
        withSessions: Bool = false
    ) -> String {
        var lines = [
            "listen = 127.0.0.1:0",
            "upstream = \(upstream ?? self.upstream.baseURL)",
            "token_url = \(self.tokenServer.url)",
            grant,
            "client_id = \(Self.clientID)",
            "client_secret = \(Self.clientSecret)",
            "log_level = warn",
            "max_connections = 100000",
        ]
        if let workers = self.options.proxyWorkers { lines.append("workers = \(workers)") }
        // A soak reads the log queue from the admin's metrics.
        if self.soak != nil, let path = try? ScratchSpace.newPath("admin") {
            lines.append("admin_listen = unix:\(path).sock")
        }
        let sections = withSessions ? self.sessionAPIs.dropFirst().map(\.section) : []
        return (lines + [extra] + sections).joined(separator: "\n") + "\n"
    }

    /// One round of `scenario`; `round` (e.g. "round 2 of 3") only labels the log and progress lines.
    func run(_ scenario: BenchOptions.Scenario, round: String = "") throws -> ScenarioResult {
        switch scenario {
        case .direct:
            // Straight at every API, the connections spread as through the proxy.
            let targets = self.sessionAPIs.map { api in
                LoadGenerator.Target(
                    address: SocketAddress(ipAddress: "127.0.0.1", port: api.upstream.port)!,
                    hostHeader: "127.0.0.1:\(api.upstream.port)",
                    requestTarget: "/bench",
                    extraHeaders: "Authorization: Bearer \(self.options.staticToken)\r\n"
                )
            }
            return self.measure(name: "direct", round: round, targets: targets, proxies: [], apis: self.sessionAPIs)
        case .steady:
            self.setTokenLifetime(nil)
            return try self.withSessions { proxy, targets in
                self.measure(name: "steady", round: round, targets: targets, proxies: [proxy], apis: self.sessionAPIs)
            }
        case .expiry:
            self.setTokenLifetime(nil)
            return try self.withSessions { proxy, targets in
                self.measure(
                    name: "expiry",
                    round: round,
                    targets: targets,
                    proxies: [proxy],
                    expireEvery: self.options.expireEvery,
                    apis: self.sessionAPIs
                )
            }
        case .proactive:
            self.setTokenLifetime(Int(self.options.tokenLifetime.seconds.rounded(.up)))
            defer { self.setTokenLifetime(nil) }
            return try self.withSessions { proxy, targets in
                self.measure(
                    name: "proactive",
                    round: round,
                    targets: targets,
                    proxies: [proxy],
                    apis: self.sessionAPIs
                )
            }
        case .fleet:
            self.tokenServer.update { $0.expiresIn = nil }
            return try self.withFleet { proxies, targets in
                self.measure(
                    name: "fleet",
                    round: round,
                    targets: targets,
                    proxies: proxies,
                    expireEvery: self.options.expireEvery,
                    apis: [self.sessionAPIs[0]]
                )
            }
        case .steadyTLS, .intercept, .newTunnels, .resumedTunnels, .mitmproxy:
            return try self.runTLS(scenario, round: round)
        case .dpop, .dpopExpiry:
            return try self.runDPoP(scenario, round: round)
        case .h2Expiry:
            return try self.runHTTP2Expiry(round: round)
        case .grpc:
            preconditionFailure("grpc is several measurements: results(of:round:)")
        }
    }

    /// What one round of `scenario` measured: one result, or grpc's one for each of its loads.
    func results(of scenario: BenchOptions.Scenario, round: String = "") throws -> [ScenarioResult] {
        scenario == .grpc ? try self.runGRPC(round: round) : [try self.run(scenario, round: round)]
    }

    /// The https scenarios, all against the https mock on `localhost:PORT`: base-URL requests
    /// through the proxy (steady-tls), the same requests from https_proxy clients through intercepted
    /// tunnels (intercept), a new tunnel per request (new-tunnels), and intercept's load through
    /// mitmproxy.
    private func runTLS(_ scenario: BenchOptions.Scenario, round: String) throws -> ScenarioResult {
        self.tokenServer.update { $0.expiresIn = nil }
        let mock = try self.secureUpstream()
        let authority = "localhost:\(mock.port)"
        let config = self.proxyConfig(
            upstream: "https://\(authority)",
            extra: "ca_file = \(Self.testCA)\ntls_intercept = on\nca_dir = \(self.caDirectory)"
        )
        func target(port: Int, throughTunnel: Bool, reconnects: Bool = false) -> LoadGenerator.Target {
            let tunnel = LoadGenerator.Tunnel(
                authority: authority,
                tls: self.clientTLS,
                serverName: "localhost",
                resumesSessions: scenario == .resumedTunnels
            )
            return LoadGenerator.Target(
                address: SocketAddress(ipAddress: "127.0.0.1", port: port)!,
                hostHeader: throughTunnel ? authority : "127.0.0.1:\(port)",
                requestTarget: "/bench",
                extraHeaders: "",
                tunnel: throughTunnel ? tunnel : nil,
                reconnectsAfterEachResponse: reconnects
            )
        }
        let name = scenario.rawValue
        switch scenario {
        case .steadyTLS, .intercept, .newTunnels, .resumedTunnels:
            return try self.withProxy(config: config) { proxy, plain in
                let port = plain.address.port ?? 0
                let reconnects = scenario == .newTunnels || scenario == .resumedTunnels
                let load =
                    scenario == .steadyTLS
                    ? target(port: port, throughTunnel: false)
                    : target(port: port, throughTunnel: true, reconnects: reconnects)
                return self.measure(
                    name: name,
                    round: round,
                    targets: [load],
                    proxies: [proxy],
                    apis: [self.defaultAPI(upstream: mock)]
                )
            }
        case .mitmproxy:
            let mitmproxy = try self.mitmproxyTarget()
            return self.measure(
                name: name,
                round: round,
                targets: [target(port: mitmproxy.port, throughTunnel: true)],
                proxies: [],
                apis: [self.defaultAPI(upstream: mock)]
            )
        case .direct, .steady, .expiry, .proactive, .fleet, .dpop, .dpopExpiry, .h2Expiry, .grpc:
            preconditionFailure("not a TLS scenario: \(scenario)")
        }
    }

    private func secureUpstream() throws -> MockUpstream {
        if let mock = self.secureMock { return mock }
        let tls = try TLSContext.server(
            certificateChainFile: Self.tlsFixtures.appendingPathComponent("server.pem").path,
            privateKeyFile: Self.tlsFixtures.appendingPathComponent("server.key").path
        )
        let mock = MockUpstream(
            group: self.mockGroup,
            acceptedTokens: [self.options.staticToken],
            authority: self.authority,
            recordsRequests: false,
            countsRequestIDs: true,
            tls: tls
        )
        try mock.start()
        self.secureMock = mock
        return mock
    }

    private func mitmproxyTarget() throws -> MitmproxyTarget {
        if let mitmproxy = self.mitmproxy { return mitmproxy }
        let mitmproxy = try MitmproxyTarget.start(token: self.options.staticToken, trusting: Self.testCA, log: self.log)
        self.mitmproxy = mitmproxy
        return mitmproxy
    }

    /// Steady load at another proxy (`--target`), which forwards to this bench's upstream.
    func runTarget(_ url: String, name: String = "target", round: String = "") throws -> ScenarioResult {
        guard let parsed = URL(string: url), let host = parsed.host,
            let port = parsed.port ?? (parsed.scheme == "http" ? 80 : nil),
            let address = SocketAddress(ipAddress: host == "localhost" ? "127.0.0.1" : host, port: port)
        else { throw BenchError("--target must be http://IP:PORT[/path], got '\(url)'") }
        let path = parsed.path.isEmpty ? "/bench" : parsed.path
        let target = LoadGenerator.Target(
            address: address,
            hostHeader: "\(host):\(port)",
            requestTarget: path,
            extraHeaders: ""
        )
        return self.measure(name: name, round: round, targets: [target], proxies: [], apis: [self.sessionAPIs[0]])
    }

    func withProxy(
        config: String? = nil,
        _ body: (ChildProxy, LoadGenerator.Target) -> ScenarioResult
    ) throws -> ScenarioResult {
        try self.withProxy(config: config ?? self.proxyConfig(), apis: [self.sessionAPIs[0]]) { proxy, targets in
            body(proxy, targets[0])
        }
    }

    /// A proxy with a session for each API (`--sessions`), and a target for each: its mount.
    private func withSessions(_ body: (ChildProxy, [LoadGenerator.Target]) -> ScenarioResult) throws -> ScenarioResult {
        try self.withProxy(config: self.proxyConfig(withSessions: true), apis: self.sessionAPIs, body)
    }

    private func withProxy(
        config: String,
        apis: [SessionAPI],
        _ body: (ChildProxy, [LoadGenerator.Target]) -> ScenarioResult
    ) throws -> ScenarioResult {
        let calls = apis.map(\.tokenServer.callCount)
        let proxy = try ChildProxy(binary: self.proxyBinary, config: config)
        defer { proxy.stop() }
        guard let port = proxy.waitForPort() else {
            throw BenchError(
                "bearer-proxy did not start: \(proxy.standardError.split(separator: "\n").last ?? "no output")"
            )
        }
        // Let every session's start-up token fetch finish before measuring.
        let deadline = Instant.now() + .seconds(5)
        while zip(apis, calls).contains(where: { $0.tokenServer.callCount == $1 }) && Instant.now() < deadline {
            usleep(5000)
        }
        return body(proxy, apis.map { Self.target(port: port, path: $0.mount + "/bench") })
    }

    /// The default session's token server and authority in front of another upstream (the https mock).
    func defaultAPI(upstream: MockUpstream) -> SessionAPI {
        SessionAPI(name: "default", authority: self.authority, tokenServer: self.tokenServer, upstream: upstream)
    }

    /// `expires_in` of every API's tokens (nil: none given).
    private func setTokenLifetime(_ seconds: Int?) {
        for api in self.sessionAPIs { api.tokenServer.update { $0.expiresIn = seconds } }
    }

    /// `options.proxies` proxies sharing one session through Redis, with refresh-token rotation and
    /// reuse detection at the token server: one refresh too many would end the session.
    private func withFleet(_ body: ([ChildProxy], [LoadGenerator.Target]) -> ScenarioResult) throws -> ScenarioResult {
        let redis = try self.sessionStore()
        // A fresh session per round: its own seed refresh token and its own keys in the store.
        let round = UInt32.random(in: 0...UInt32.max)
        let seed = "rt-bench-seed-\(round)"
        self.tokenServer.update {
            $0.refreshTokens.insert(seed)
            $0.rotatesRefreshTokens = true
            $0.detectsRefreshTokenReuse = true
        }
        defer {
            self.tokenServer.update {
                $0.rotatesRefreshTokens = false
                $0.detectsRefreshTokenReuse = false
            }
        }
        let config = self.proxyConfig(
            grant: "grant_type = refresh_token\nrefresh_token = \(seed)",
            extra: "session_store = redis://127.0.0.1:\(redis.port)\nsession_name = bench-\(round)"
        )
        let callsBefore = self.tokenServer.callCount
        var proxies: [ChildProxy] = []
        defer { for proxy in proxies { proxy.stop() } }
        var targets: [LoadGenerator.Target] = []
        for _ in 0..<self.options.proxies {
            let proxy = try ChildProxy(binary: self.proxyBinary, config: config)
            proxies.append(proxy)
            guard let port = proxy.waitForPort() else {
                throw BenchError(
                    "bearer-proxy did not start: \(proxy.standardError.split(separator: "\n").last ?? "no output")"
                )
            }
            targets.append(Self.target(port: port))
        }
        // One start-up token call for the whole fleet; the others adopt it.
        _ = waitUntil(timeout: .seconds(5)) { self.tokenServer.callCount != callsBefore }
        return body(proxies, targets)
    }

    /// The Redis the fleet shares, started on first use and kept for the bench's other rounds.
    private func sessionStore() throws -> RedisServerProcess {
        if let redis = self.redis { return redis }
        guard RedisServerProcess.executable != nil else {
            throw BenchError("--scenario fleet needs redis-server (apt-get install redis-server)")
        }
        let redis = try RedisServerProcess()
        self.redis = redis
        return redis
    }

    private static func target(port: Int, path: String = "/bench") -> LoadGenerator.Target {
        LoadGenerator.Target(
            address: SocketAddress(ipAddress: "127.0.0.1", port: port)!,
            hostHeader: "127.0.0.1:\(port)",
            requestTarget: path,
            extraHeaders: ""
        )
    }

    /// One measured run of `targets` (the i-th target is `apis[i]`'s): figures overall and per API.
    /// With `expireEvery`, each API revokes its tokens on its own schedule (`expiryInterval`).
    func measure(
        name: String,
        round: String,
        targets: [LoadGenerator.Target],
        proxies: [ChildProxy],
        expireEvery: Duration? = nil,
        apis: [SessionAPI]
    ) -> ScenarioResult {
        let label = round.isEmpty ? name : "\(name), \(round)"
        // A soak storms every scenario and rotates some of its connections.
        let expireEvery = self.soak == nil ? expireEvery : self.options.expireEvery
        let targets = self.soak?.rotating(targets) ?? targets
        var sampler: SoakSampler?
        var samples: [SoakSampler.Sample] = []
        self.log(
            "\(label): \(self.options.connections) connections, \(formatSeconds(self.options.warmup)) warm-up, \(formatSeconds(self.options.duration)) measured"
        )
        let generator = LoadGenerator(
            targets: targets,
            connections: self.options.connections,
            pipeline: self.options.pipeline,
            group: self.loadGroup,
            rate: self.options.rate
        )
        var tokenCallsBefore: [Int] = []
        var rejectedBefore: [Int] = []
        var cpuBefore = 0.0
        var start = Instant.now()
        var revokers: [ExpiryTimer] = []
        var expiryInstants: [[Instant]] = apis.map { _ in [] }
        var cpuAfter = 0.0
        let result = generator.run(
            warmup: self.options.warmup,
            duration: self.options.duration,
            onMeasurementStart: {
                start = Instant.now()
                for api in apis { api.upstream.resetRequestIDs() }
                tokenCallsBefore = apis.map(\.tokenServer.callCount)
                rejectedBefore = apis.map { $0.upstream.rejected.load(ordering: .relaxed) }
                cpuBefore = proxies.map(\.cpuSeconds).reduce(0, +)
                if let soak = self.soak, let proxy = proxies.first {
                    sampler = SoakSampler(proxy, every: soak.sampleEvery)
                }
                if let expireEvery {
                    revokers = apis.indices.map { index in
                        let interval = Self.expiryInterval(expireEvery, api: index, of: apis.count)
                        // No revocation in the last moments: a storm nobody sends a request into is not a storm.
                        let quiet = min(interval / 2, .milliseconds(200))
                        return ExpiryTimer(
                            every: interval,
                            until: start + self.options.duration - quiet,
                            authority: apis[index].authority
                        )
                    }
                }
            },
            onMeasurementEnd: {
                expiryInstants = revokers.isEmpty ? expiryInstants : revokers.map { $0.stop() }
                cpuAfter = proxies.map(\.cpuSeconds).reduce(0, +)
                samples = sampler?.stop() ?? []
            },
            progress: { phase, elapsed, completed in
                let total = phase == .warmup ? self.options.warmup : self.options.duration
                self.progress.show(
                    ProgressLine.text(label: label, phase: phase, elapsed: elapsed, of: total, completed: completed)
                )
            }
        )
        self.progress.clear()
        // A revocation just before the end is refreshed a moment later: let that call land.
        usleep(300_000)
        let sessions = apis.indices.map { index in
            // One API (the fleet's targets are its proxies): every target is its.
            let statuses = apis.count == 1 ? result.statuses : result.statusesByTarget[index] ?? [:]
            return SessionResult(
                name: apis[index].name,
                requests: statuses.values.reduce(0, +),
                client401s: statuses[401] ?? 0,
                tokenCalls: proxies.isEmpty ? 0 : apis[index].tokenServer.callCount - tokenCallsBefore[index],
                expiryEvents: expiryInstants[index].count
            )
        }
        let rejected = zip(apis, rejectedBefore).map { $0.upstream.rejected.load(ordering: .relaxed) - $1 }
        let refreshInstants = apis.flatMap { $0.tokenServer.callInstants.filter { $0 >= start } }.sorted()
        let statuses = result.statuses
        let client401s = statuses[401] ?? 0
        let requests = statuses.values.reduce(0, +)
        var nonSuccess = statuses.filter { !(200..<300).contains($0.key) }
        nonSuccess[401] = nil
        var errors = result.errors
        for (status, count) in nonSuccess { errors["status \(status)", default: 0] += count }
        let scenarioResult = ScenarioResult(
            name: name,
            proxies: proxies.count,
            connections: self.options.connections,
            durationSeconds: result.measuredSeconds,
            requests: requests,
            requestsPerSecond: Double(requests) / max(result.measuredSeconds, 0.001),
            latency: LatencyStatistics(microseconds: result.samples.map(\.latencyMicroseconds)),
            errors: errors,
            statuses: statuses.filter { !(200..<300).contains($0.key) },
            client401s: client401s,
            tokenCalls: sessions.map(\.tokenCalls).reduce(0, +),
            expiryEvents: sessions.map(\.expiryEvents).reduce(0, +),
            replays: max(0, rejected.reduce(0, +) - client401s),
            maxTimesSeenUpstream: apis.map(\.upstream.requestIDStatistics.maximum).max() ?? 0,
            proxyPeakRSSMiB: proxies.map(\.memory.peakMiB).max(),
            proxyCPUSeconds: proxies.isEmpty ? nil : cpuAfter - cpuBefore,
            resumedHandshakes: result.resumedHandshakes,
            series: timeSeries(result.samples, window: 0.1, duration: result.measuredSeconds),
            expiryTimes: expiryInstants.joined().sorted().map { ($0 - start).seconds },
            refreshTimes: refreshInstants.map { ($0 - start).seconds },
            sessions: apis.count > 1 ? sessions : []
        )
        if self.soak != nil {
            self.recordSoak(
                SoakResult(
                    scenario: name,
                    samples: samples,
                    durationSeconds: result.measuredSeconds,
                    result: scenarioResult
                )
            )
        }
        return scenarioResult
    }

    /// How often API `index` of `count` revokes its tokens: `every` for the first, up to 1.5 times
    /// that for the last, so that the APIs' storms drift apart instead of striking together.
    static func expiryInterval(_ every: Duration, api index: Int, of count: Int) -> Duration {
        every * (1 + Double(index) / Double(2 * max(count, 1)))
    }

    /// Holds `count` idle keep-alive connections open through the proxy and reads its memory.
    func measureIdleConnections(_ count: Int) throws -> IdleResult {
        self.log("idle: opening \(count) keep-alive connections")
        let proxy = try ChildProxy(binary: self.proxyBinary, config: self.proxyConfig())
        defer { proxy.stop() }
        guard let port = proxy.waitForPort() else { throw BenchError("bearer-proxy did not start") }
        usleep(200_000)
        let before = proxy.memory.currentMiB
        let address = SocketAddress(ipAddress: "127.0.0.1", port: port)!
        var sockets: [BlockingHTTPClient] = []
        sockets.reserveCapacity(count)
        var stopReason: String?
        for index in 0..<count {
            let client: BlockingHTTPClient
            do {
                client = try BlockingHTTPClient(connectingTo: address, timeout: .seconds(10))
            } catch {
                stopReason = "connect: \(error)"
                break
            }
            client.send("GET /bench HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX-Request-Id: \(1 << 40 | index)\r\n\r\n")
            do {
                let response = try client.readResponse()
                guard response.status == 200 else {
                    stopReason = "status \(response.status): \(response.text.prefix(120))"
                    break
                }
            } catch {
                stopReason = "\(error)"
                break
            }
            sockets.append(client)
        }
        usleep(500_000)
        let memory = proxy.memory
        let result = IdleResult(
            connections: count,
            established: sockets.count,
            proxyRSSMiB: memory.currentMiB,
            proxyRSSBeforeMiB: before,
            stopReason: stopReason
        )
        sockets.removeAll()
        return result
    }
}

/// Revokes every token at a fixed interval on its own thread: the expiry storm.
final class ExpiryTimer: @unchecked Sendable {
    private let thread: pthread_t
    private let state = NSLock()
    private var stopped = false
    private var instants: [Instant] = []

    var isStopped: Bool {
        self.state.lock()
        defer { self.state.unlock() }
        return self.stopped
    }

    init(every interval: Duration, until end: Instant, authority: MockTokenAuthority) {
        final class Box: @unchecked Sendable { weak var timer: ExpiryTimer? }
        let box = Box()
        self.thread = spawnThread(name: "bench-expiry") {
            var next = Instant.now() + interval
            while true {
                // Sleep in short steps so that stop() never waits long for this thread.
                while Instant.now() < next {
                    if let timer = box.timer, timer.isStopped { return }
                    usleep(UInt32(min(max((next - Instant.now()).nanoseconds / 1000, 0), 20_000)))
                }
                guard let timer = box.timer else { return }
                timer.state.lock()
                let stopped = timer.stopped || Instant.now() > end
                if !stopped {
                    authority.revokeAll()
                    timer.instants.append(Instant.now())
                }
                timer.state.unlock()
                if stopped { return }
                // From this revocation, not the planned one: a thread held up never revokes twice in a
                // row, which would count two expiries for what the proxy sees as one.
                next = Instant.now() + interval
            }
        }
        box.timer = self
    }

    /// Stops revoking (waiting for the thread to end); returns when each revocation happened.
    func stop() -> [Instant] {
        self.state.lock()
        self.stopped = true
        let instants = self.instants
        self.state.unlock()
        joinThread(self.thread)
        return instants
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func formatSeconds(_ duration: Duration) -> String {
    formatSeconds(duration.seconds)
}

/// `5 s`, `0.5 s`: whole seconds without decimals.
func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : String(format: "%.1f s", seconds)
}
