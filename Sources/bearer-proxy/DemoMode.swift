import BearerCore
import BearerIO
import BearerMocks
import BearerProxy

/// `--demo`: the mock token server and mock API running in this process, and the configuration that
/// points the proxy at them. `--demo --check` builds the same configuration, so it prints what a demo
/// run really uses.
struct DemoMode {
    let environment: DemoEnvironment
    let group: EventLoopGroup

    static func start() throws(IOError) -> DemoMode {
        let group = EventLoopGroup(count: 1, name: "demo")
        do throws(IOError) {
            return DemoMode(environment: try DemoEnvironment(group: group), group: group)
        } catch {
            group.shutdown()
            throw error
        }
    }

    /// Fills in what the user did not set: the mock API as upstream, the mock token server with its
    /// client, and the admin endpoints on a free loopback port (unless `--admin-listen` was given).
    func apply(to configuration: inout Configuration, options: CommandLineOptions) {
        if configuration.upstream == nil {
            configuration.upstream = try? UpstreamURL.parse(self.environment.upstream.baseURL).get()
        }
        if !configuration.canRefresh && configuration.accessToken == nil {
            configuration.tokenURL = try? UpstreamURL.parse(self.environment.tokenServer.url).get()
            configuration.grantType = .clientCredentials
            configuration.clientID = DemoEnvironment.clientID
            configuration.clientSecret = Secret(DemoEnvironment.clientSecret)
        }
        if configuration.adminListen == nil && !options.overrides.contains(where: { $0.key == "admin_listen" }) {
            configuration.adminListen = .hostPort(host: "127.0.0.1", port: 0)
        }
    }

    /// What to try, printed once the proxy listens.
    static func banner(proxy: SocketAddress, admin: SocketAddress?) -> String {
        var text = """

            Demo: behind the proxy run a mock OAuth2 token server, whose tokens live \(DemoEnvironment.tokenLifetime)s, and a
            mock API that accepts only live tokens and revokes them all every \(Int(DemoEnvironment.revokeEvery.seconds))s.
            The proxy refreshes ahead of expiry, and on a 401 refreshes once and replays. Try:

              curl -i http://\(proxy)/whoami                      # which token generation reached the API
              while sleep 0.5; do curl -s http://\(proxy)/whoami; done   # refreshes, never a 401
              curl -i -x http://\(proxy) http://\(proxy)/items  # the same, as an HTTP proxy

            """
        if let admin {
            text += """
                  curl -s http://\(admin)/status                     # the session: state, generation, expiry
                  curl -s http://\(admin)/metrics                    # Prometheus metrics
                  curl -s -X POST http://\(admin)/refresh            # refresh now

                """
        }
        return text
    }

    func stop() {
        self.environment.stop()
        self.group.shutdown()
    }
}
