import BearerHTTP
import BearerIO
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// The session table through the router: which session each request is for, bytes in, routes out.
@Suite struct SessionRoutingTests {
    static let main = SocketAddress(ipAddress: "127.0.0.1", port: 8080)!
    static let ownListener = SocketAddress(ipAddress: "127.0.0.1", port: 8181)!

    /// default → http://api.test:81 (inject *.default.test too), `api` mounted at /api, `v2` at
    /// /api/v2 (prefix /v2 upstream), `own` with a listener of its own; `proxied` has inject hosts only.
    static func router(withDefaultUpstream: Bool = true) -> (Router, [NamedSession]) {
        var root = Configuration()
        if withDefaultUpstream {
            root.upstream = try! HTTPURL.parse("http://api.test:81").get()
            root.injectHosts = [.hostAndPort("api.test", 81), .subdomains(of: "default.test")]
        }
        func named(
            _ name: String,
            upstream: String?,
            mount: String? = nil,
            inject: [HostPattern]? = nil
        ) -> Configuration {
            var configuration = Configuration()
            configuration.upstream = upstream.map { try! HTTPURL.parse($0).get() }
            configuration.mount = mount
            configuration.injectHosts = inject
            return configuration
        }
        let configurations = [
            root, named("api", upstream: "https://api.vendor.test", mount: "/api"),
            named("v2", upstream: "http://v2.vendor.test:82/v2", mount: "/api/v2"),
            named("own", upstream: "http://own.test:83"),
            named("proxied", upstream: nil, inject: [.host("proxied.test")]),
        ]
        let names = ["default", "api", "v2", "own", "proxied"]
        let sessions = configurations.enumerated().map { index, configuration in
            NamedSession.standalone(configuration, name: names[index], index: index)
        }
        let proxyNames = ProxyNames(
            boundAddresses: [Self.main, Self.ownListener],
            acceptHosts: [],
            listenerSessions: [nil, 3]
        )
        return (Router(configuration: root, sessions: sessions, names: proxyNames), sessions)
    }

    static func head(_ text: String) -> RequestHead {
        var parser = HTTPRequestParser()
        let bytes = Array("\(text)\r\n\r\n".utf8)
        guard case .head(let head, _) = try? bytes.withUnsafeBytes({ try parser.next($0) }) else {
            preconditionFailure("not a request head: \(text)")
        }
        return head
    }

    /// Where `text` goes: the target's session, whether it carries the token, and the path sent
    /// (the target's prefix, then the bytes of the client's head the route keeps).
    static func route(_ text: String, arrivedOn listener: NamedSession? = nil, router: Router) -> String {
        let head = Self.head(text)
        switch router.route(head, arrivedOn: listener) {
        case .forward(let target, let path):
            let sent: String =
                switch path {
                case .prefixed(let range): String(decoding: target.pathPrefix, as: UTF8.self) + head.string(range)
                case .absolute(let range): head.string(range)
                case .asterisk: "*"
                }
            return "\(target.session?.name ?? "-")\(target.injectsToken ? "+token" : "") \(target.origin) \(sent)"
        case .reject(let error): return "\(error.status)"
        case .tunnel(let origin): return "tunnel \(origin)"
        case .serveTunnel(let tunnel):
            let target = tunnel.clear ?? tunnel.tls
            return "served \(target?.session?.name ?? "-") \(target.map { "\($0.origin)" } ?? "-")"
        }
    }

    @Test(arguments: [
        ("GET /items HTTP/1.1\r\nHost: 127.0.0.1:8080", "default+token api.test:81 /items"),
        ("GET /api HTTP/1.1\r\nHost: 127.0.0.1:8080", "api+token api.vendor.test:443 "),
        ("GET /api/ HTTP/1.1\r\nHost: 127.0.0.1:8080", "api+token api.vendor.test:443 /"),
        ("GET /api?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080", "api+token api.vendor.test:443 ?q=1"),
        ("GET /api/users HTTP/1.1\r\nHost: 127.0.0.1:8080", "api+token api.vendor.test:443 /users"),
        ("GET /apiv2/x HTTP/1.1\r\nHost: 127.0.0.1:8080", "default+token api.test:81 /apiv2/x"),
        ("GET /API/users HTTP/1.1\r\nHost: 127.0.0.1:8080", "default+token api.test:81 /API/users"),
        ("GET /api/v2/users HTTP/1.1\r\nHost: 127.0.0.1:8080", "v2+token v2.vendor.test:82 /v2/users"),
        ("GET /api/v2 HTTP/1.1\r\nHost: 127.0.0.1:8080", "v2+token v2.vendor.test:82 /v2"),
        ("GET /api/v20 HTTP/1.1\r\nHost: 127.0.0.1:8080", "api+token api.vendor.test:443 /v20"),
        ("OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:8080", "default+token api.test:81 *"),
    ])
    func originFormGoesByTheLongestMountElseToTheDefaultSession(_ request: String, _ expected: String) {
        let (router, _) = Self.router()
        #expect(Self.route(request, router: router) == expected)
    }

    @Test func aSessionsOwnListenerTakesEveryPathMountsIncluded() {
        let (router, sessions) = Self.router()
        let own = sessions[3]
        #expect(
            Self.route("GET /api/x HTTP/1.1\r\nHost: 127.0.0.1:8181", arrivedOn: own, router: router)
                == "own+token own.test:83 /api/x"
        )
        #expect(
            Self.route("OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:8181", arrivedOn: own, router: router)
                == "own+token own.test:83 *"
        )
    }

    @Test(arguments: [
        // http_proxy clients send the proxy's own base URLs absolute-form: the port says whose.
        ("GET http://127.0.0.1:8181/x HTTP/1.1\r\nHost: 127.0.0.1:8181", "own+token own.test:83 /x"),
        ("GET http://localhost:8080/api/x HTTP/1.1\r\nHost: localhost:8080", "api+token api.vendor.test:443 /x"),
        // A session's upstream host: its scheme and port, its token.
        ("GET http://api.vendor.test/users HTTP/1.1\r\nHost: api.vendor.test", "api+token api.vendor.test:443 /users"),
        ("GET http://v2.vendor.test:82/a HTTP/1.1\r\nHost: v2.vendor.test:82", "v2+token v2.vendor.test:82 /a"),
        ("GET http://api.test:81/a HTTP/1.1\r\nHost: api.test:81", "default+token api.test:81 /a"),
        // Inject hosts with no upstream of their own.
        ("GET http://x.default.test/a HTTP/1.1\r\nHost: x.default.test", "default+token x.default.test:80 /a"),
        ("GET http://proxied.test:8443/a HTTP/1.1\r\nHost: proxied.test:8443", "proxied+token proxied.test:8443 /a"),
        ("GET http://elsewhere.test/a HTTP/1.1\r\nHost: elsewhere.test", "- elsewhere.test:80 /a"),
        ("CONNECT proxied.test:8080 HTTP/1.1\r\nHost: proxied.test:8080", "served proxied proxied.test:8080"),
        ("CONNECT own.test:83 HTTP/1.1\r\nHost: own.test:83", "served own own.test:83"),
        ("CONNECT elsewhere.test:443 HTTP/1.1\r\nHost: elsewhere.test:443", "tunnel elsewhere.test:443"),
    ])
    func absoluteFormAndConnectGoToTheSessionWhoseInjectHostsMatch(_ request: String, _ expected: String) {
        let (router, _) = Self.router()
        #expect(Self.route(request, router: router) == expected)
    }

    @Test func withoutADefaultUpstreamAPathNoMountTakesIsRefused() {
        let (router, _) = Self.router(withDefaultUpstream: false)
        #expect(
            Self.route("GET /api/x HTTP/1.1\r\nHost: 127.0.0.1:8080", router: router)
                == "api+token api.vendor.test:443 /x"
        )
        let head = Self.head("GET /other HTTP/1.1\r\nHost: 127.0.0.1:8080")
        guard case .reject(let error) = router.route(head) else {
            Issue.record("not refused")
            return
        }
        #expect(error == .noSessionForPath(mounts: "/api, /api/v2"))
        #expect(error.status == 404)
        #expect(Self.route("OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:8080", router: router) == "404")
    }
}
