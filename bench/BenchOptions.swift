import BearerCore

/// bearer-bench's command line.
struct BenchOptions: Equatable {
    enum Scenario: String, CaseIterable {
        case direct, steady, expiry, proactive, fleet
        /// Base-URL requests through the proxy to an https mock API: what intercept is compared with.
        case steadyTLS = "steady-tls"
        /// The same requests from `https_proxy` clients: CONNECT, TLS terminated by the proxy, keep-alive inside.
        case intercept
        /// A new tunnel per request: CONNECT, a full handshake with the cached leaf, one request, close.
        case newTunnels = "new-tunnels"
        /// new-tunnels with the client offering the session its previous tunnel got (a TLS 1.3 ticket):
        /// the handshake resumes, with no certificate and no signature.
        case resumedTunnels = "resumed-tunnels"
        /// intercept's load through mitmproxy (regular mode, a one-line addon setting the header).
        case mitmproxy
        /// steady's load with DPoP (RFC 9449): a DPoP-bound token, a fresh signed proof per request.
        case dpop
        /// dpop under the expiry storm: each replay needs a new token and a new proof.
        case dpopExpiry = "dpop-expiry"
        /// expiry's storm with HTTP/2 clients: h2load, prior knowledge, several streams per connection.
        case h2Expiry = "h2-expiry"
        /// Unary gRPC calls to an h2c gRPC upstream, steady and under expiry's storm, at each of
        /// `--grpc-streams` calls in flight (`Bench+GRPC`).
        case grpc

        /// What `all` and the default run: every scenario that needs nothing but this bench.
        static let standard: [Scenario] = [.direct, .steady, .expiry, .proactive]
        /// What `--soak` can hold for long: one proxy, one session.
        static let soakable: [Scenario] = [.expiry, .steady, .steadyTLS, .intercept, .h2Expiry]
    }

    var scenarios: [Scenario] = Scenario.standard
    /// fleet: how many proxy processes share the session through Redis.
    var proxies = 3
    /// steady, expiry, proactive, direct: how many sessions (APIs, each with its own token endpoint)
    /// one proxy serves, the connections spread over them.
    var sessions = 1
    var connections = 64
    /// grpc: the calls in flight of each of its measurements.
    var grpcStreams = [64, 256]
    var duration: Duration = .seconds(5)
    var warmup: Duration = .seconds(1)
    /// Rounds of every scenario, interleaved, so the report can say how much the machine's noise moves
    /// each figure.
    var repeats = 3
    var pipeline = 1
    /// Requests per second over all connections (nil: closed loop, as fast as the answers come).
    var rate: Double?
    var expireEvery: Duration = .seconds(1)
    var tokenLifetime: Duration = .seconds(4)
    var proxyBinary: String?
    var proxyWorkers: Int?
    var target: String?
    var withNginx = false
    /// Run mitmproxy beside intercept (needs mitmdump).
    var withMitmproxy = false
    var upstreamPort = 0
    var staticToken = "bench-static-token"
    var idleConnections = 0
    var loadThreads = 1
    var jsonPath: String?
    var svgPath: String?
    /// `--soak DURATION`: each scenario once, this long, sampled (`SoakPlan`).
    var soak: Duration?
    var sampleEvery: Duration = .seconds(5)
    var isHelp = false
    /// Your own stack (`StackRun`): the proxy with this config, or the running one at `proxyURL`.
    var configPath: String?
    var sessionName: String?
    /// The request target sent through the proxy (below the session's mount).
    var path: String?
    var method = "GET"
    var refreshEvery: Duration = .seconds(2)
    var proxyURL: String?
    var adminURL: String?
    /// `--yes`: send to an upstream that is not loopback.
    var assumeYes = false

    /// `--config` or `--proxy`: load against the user's own API and identity provider, not the mocks.
    var isStackRun: Bool { self.configPath != nil || self.proxyURL != nil }

    struct ParseError: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    static func parse(_ arguments: [String]) throws(ParseError) -> BenchOptions {
        var options = BenchOptions()
        var index = 0
        func value(_ name: String) throws(ParseError) -> String {
            guard index < arguments.count else { throw ParseError(description: "Missing value for '\(name)'") }
            defer { index += 1 }
            return arguments[index]
        }
        func integer(_ name: String, minimum: Int = 1) throws(ParseError) -> Int {
            let text = try value(name)
            guard let number = Int(text), number >= minimum else {
                throw ParseError(description: "\(name): expected a number ≥ \(minimum), got '\(text)'")
            }
            return number
        }
        func duration(_ name: String) throws(ParseError) -> Duration {
            let text = try value(name)
            if let seconds = Double(text), seconds >= 0 { return .milliseconds(Int64(seconds * 1000)) }
            guard let parsed = parseDuration(text) else {
                throw ParseError(description: "\(name): expected e.g. 10s or 500ms, got '\(text)'")
            }
            return parsed
        }
        while index < arguments.count {
            let name = arguments[index]
            index += 1
            switch name {
            case "--scenario":
                let text = try value(name)
                if text == "all" {
                    options.scenarios = Scenario.standard
                } else {
                    var chosen: [Scenario] = []
                    for item in text.split(separator: ",") {
                        guard let scenario = Scenario(rawValue: String(item)) else {
                            throw ParseError(
                                description:
                                    "--scenario: expected all, direct, steady, expiry, proactive, fleet, intercept, steady-tls, new-tunnels, resumed-tunnels, mitmproxy, dpop, dpop-expiry, h2-expiry or grpc, got '\(item)'"
                            )
                        }
                        chosen.append(scenario)
                    }
                    // The fleet is reported next to one proxy under the same storm.
                    if let fleet = chosen.firstIndex(of: .fleet), !chosen.contains(.expiry) {
                        chosen.insert(.expiry, at: fleet)
                    }
                    options.scenarios = chosen
                }
            case "--connections": options.connections = try integer(name)
            case "--grpc-streams":
                let text = try value(name)
                let counts = text.split(separator: ",").map { Int($0) }
                guard !counts.isEmpty, counts.allSatisfy({ ($0 ?? 0) > 0 }) else {
                    throw ParseError(description: "\(name): expected a comma list of positive counts, got '\(text)'")
                }
                options.grpcStreams = counts.map { $0! }
            case "--proxies": options.proxies = try integer(name)
            case "--sessions": options.sessions = try integer(name)
            case "--duration": options.duration = try duration(name)
            case "--repeat": options.repeats = try integer(name)
            case "--warmup": options.warmup = try duration(name)
            case "--pipeline": options.pipeline = try integer(name)
            case "--rate": options.rate = Double(try integer(name))
            case "--expire-every": options.expireEvery = try duration(name)
            case "--token-lifetime": options.tokenLifetime = try duration(name)
            case "--proxy-bin": options.proxyBinary = try value(name)
            case "--proxy-workers": options.proxyWorkers = try integer(name)
            case "--target": options.target = try value(name)
            case "--with-nginx": options.withNginx = true
            case "--with-mitmproxy": options.withMitmproxy = true
            case "--upstream-port": options.upstreamPort = try integer(name, minimum: 0)
            case "--static-token": options.staticToken = try value(name)
            case "--idle-connections": options.idleConnections = try integer(name, minimum: 0)
            case "--threads": options.loadThreads = try integer(name)
            case "--json": options.jsonPath = try value(name)
            case "--svg": options.svgPath = try value(name)
            case "--soak": options.soak = try duration(name)
            case "--sample-every": options.sampleEvery = try duration(name)
            case "--config": options.configPath = try value(name)
            case "--session": options.sessionName = try value(name)
            case "--path": options.path = try value(name)
            case "--method":
                let method = try value(name)
                guard !method.isEmpty, method.allSatisfy({ $0.isLetter && $0.isUppercase }) else {
                    throw ParseError(description: "--method: expected a method such as GET or POST, got '\(method)'")
                }
                options.method = method
            case "--refresh-every": options.refreshEvery = try duration(name)
            case "--proxy": options.proxyURL = try value(name)
            case "--admin": options.adminURL = try value(name)
            case "--yes": options.assumeYes = true
            case "-h", "--help": options.isHelp = true
            default: throw ParseError(description: "Unknown option '\(name)'")
            }
        }
        try Self.checkStackRun(options)
        if let soak = options.soak {
            // A soak is one long round of what was asked for (expiry by default), nothing beside it.
            if !arguments.contains("--scenario") { options.scenarios = [.expiry] }
            guard options.scenarios.allSatisfy(Scenario.soakable.contains), options.sessions == 1,
                options.configPath == nil, options.proxyURL == nil
            else {
                throw ParseError(
                    description:
                        "--soak: runs expiry, steady, steady-tls, intercept or h2-expiry, one session each, against the bench's own mocks (not with --config or --proxy), got \(options.scenarios.map(\.rawValue).joined(separator: ","))"
                )
            }
            options.duration = soak
            options.repeats = 1
            if !arguments.contains("--warmup") { options.warmup = .seconds(5) }
            if options.rate == nil { options.rate = 1000 }
            return options
        }
        // intercept is reported beside steady-tls (the same requests as base-URL requests), with the
        // cost of new tunnels, and beside mitmproxy when asked.
        if let intercept = options.scenarios.firstIndex(of: .intercept) {
            if !options.scenarios.contains(.steadyTLS) { options.scenarios.insert(.steadyTLS, at: intercept) }
            if !options.scenarios.contains(.newTunnels) { options.scenarios.append(.newTunnels) }
            if !options.scenarios.contains(.resumedTunnels) { options.scenarios.append(.resumedTunnels) }
            if options.withMitmproxy && !options.scenarios.contains(.mitmproxy) { options.scenarios.append(.mitmproxy) }
        }
        // dpop is reported beside steady: the same load with plain bearer tokens.
        if let dpop = options.scenarios.firstIndex(of: .dpop), !options.scenarios.contains(.steady) {
            options.scenarios.insert(.steady, at: dpop)
        }
        return options
    }

    /// What a run against your own stack needs, and what it does not take.
    private static func checkStackRun(_ options: BenchOptions) throws(ParseError) {
        guard options.isStackRun else {
            for (flag, given) in [
                ("--session", options.sessionName != nil), ("--path", options.path != nil),
                ("--admin", options.adminURL != nil),
                ("--yes", options.assumeYes),
            ] where given {
                throw ParseError(description: "\(flag) needs --config FILE (or --proxy URL --admin URL)")
            }
            return
        }
        guard options.path?.hasPrefix("/") == true else {
            throw ParseError(description: "--path: the request path to load, starting with / (e.g. --path /v1/items)")
        }
        if (options.proxyURL == nil) != (options.adminURL == nil) {
            throw ParseError(
                description: "--proxy and --admin go together: the running proxy's listener and its admin_listen"
            )
        }
        guard options.refreshEvery >= .milliseconds(100) else {
            throw ParseError(description: "--refresh-every: at least 100ms")
        }
    }

    static let helpText = """
        OVERVIEW: Measures bearer-proxy: throughput and latency, and how refresh coalescing holds up
        when every token expires at once under load.

        USAGE: bearer-bench [<options>]
               bearer-bench --config <file> [--session <name>] --path <path> [<options>]
               bearer-bench --proxy <url> --admin <url> [--session <name>] --path <path> [<options>]

        YOUR OWN STACK (docs/load-testing-your-stack.md):
          --config <file>         Start bearer-proxy with your config and load your session's upstream
                                  through it: a steady phase, then one with expiry storms
          --proxy <url>           Use the proxy running there instead (with --admin, its admin_listen)
          --admin <url>           The running proxy's admin endpoints, e.g. http://127.0.0.1:9901
          --session <name>        The [session] to load (default: the default session)
          --path <path>           The request path sent through the proxy, below the session's mount
          --method <method>       The requests' method, sent without a body (default: GET)
          --refresh-every <time>  Force an expiry storm this often: POST /refresh?park=1 on the admin
                                  listener, so that every request parks behind one token call to your
                                  identity provider (default: 2s)
          --yes                   Send to an upstream that is not loopback (the bench prints what it
                                  will do and sends nothing without it); --rate then defaults to 100
          With --connections, --duration (each phase), --warmup, --rate, --threads, --json, --svg.
          Ctrl-C stops the load at once and still writes the report.

        OPTIONS:
          --scenario <list>       all, or a comma list of direct, steady, expiry, proactive, fleet,
                                  intercept (with steady-tls, new-tunnels and resumed-tunnels),
                                  steady-tls, new-tunnels, resumed-tunnels, mitmproxy, dpop (with
                                  steady), dpop-expiry, h2-expiry (expiry's storm from h2load's
                                  HTTP/2 clients, needs nghttp2-client), grpc (unary gRPC calls to
                                  an h2c gRPC upstream, steady and under the storm, at each
                                  --grpc-streams) (default: all, which is direct, steady, expiry,
                                  proactive)
          --proxies <n>           fleet: proxy processes sharing one session through a redis-server the
                                  bench starts (needs redis-server installed) (default: 3)
          --sessions <n>          direct, steady, expiry, proactive: n APIs, each with its own token
                                  endpoint and [session] (mounted at /s2 … /sn beside the default one),
                                  the connections spread over them, each revoking its tokens on its own
                                  schedule; token calls and expiry events reported per session
                                  (default: 1)
          --connections <n>       Keep-alive client connections (default: 64)
          --grpc-streams <list>   grpc: calls in flight, a measurement each, 32 a connection
                                  (default: 64,256)
          --duration <time>       Measured time per scenario and round (default: 5s)
          --warmup <time>         Unmeasured time before it (default: 1s)
          --repeat <n>            Rounds of every scenario, interleaved; the report gives medians and
                                  how far the rounds spread (default: 3)
          --pipeline <n>          Requests in flight per connection (default: 1)
          --rate <n>              Requests per second over all connections, each connection pacing its
                                  own (default: none, each sends when its answer came): compares
                                  scenarios at one offered load, below what the slower one can do
          --expire-every <time>   expiry: the upstream revokes every token this often (default: 1s)
          --token-lifetime <time> proactive: expires_in of issued tokens (default: 4s)
          --proxy-bin <path>      The bearer-proxy binary (default: next to bearer-bench)
          --proxy-workers <n>     The proxy's event loops (default: its own default, the core count)
          --target <url>          Also measure steady load at another proxy (e.g. nginx injecting
                                  'Authorization: Bearer <static token>' towards --upstream-port)
          --with-nginx            Start nginx as that other proxy (needs nginx installed)
          --with-mitmproxy        With intercept: the same load through mitmproxy (needs mitmdump)
          --upstream-port <port>  Port of the mock upstream (default: any free port)
          --static-token <token>  A token the mock upstream always accepts (default: bench-static-token)
          --idle-connections <n>  Also hold n idle keep-alive connections and report the proxy's RSS
          --threads <n>           Load generator threads (default: 1)
          --json <file>           Write every figure as JSON (a bare name goes to bench-results/)
          --svg <file>            Chart throughput and p99 per 100 ms, expiry events and refreshes marked
                                  (a bare name goes to bench-results/); with --soak, memory and
                                  descriptors over time
          --soak <time>           Hold each scenario (expiry by default; steady, steady-tls, intercept,
                                  h2-expiry)
                                  this long, once, at --rate (default 1000/s), every token revoked each
                                  --expire-every, one connection in eight reconnecting after each
                                  response; sample the proxy's RSS, descriptors and log queue and
                                  report their growth after the warm-up (the first tenth, 60 s at least)
          --sample-every <time>   --soak: how often to sample (default: 5s)
          -h, --help              Show help information.

        """
}

/// Where `--json`/`--svg` write: a bare file name goes under `bench-results/` (ignored by git), so a
/// run never litters the directory it was started from; a path with a `/` is used as given.
func outputPath(_ given: String) -> String {
    given.contains("/") ? given : "bench-results/\(given)"
}

/// `10s`, `500ms`, `2m`.
func parseDuration(_ text: String) -> Duration? {
    if text.hasSuffix("ms"), let value = Int64(text.dropLast(2)) { return .milliseconds(value) }
    if text.hasSuffix("s"), let value = Double(text.dropLast()) { return .milliseconds(Int64(value * 1000)) }
    if text.hasSuffix("m"), let value = Int64(text.dropLast()) { return .seconds(value * 60) }
    return nil
}
