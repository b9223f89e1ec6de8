import BearerConfig
import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerProxy

/// `--demo`: the mock token server and mock API running in this process, and the configuration that
/// points the proxy at them. `--demo --check` builds the same configuration, so it prints what a demo
/// run really uses.
struct DemoMode {
    let environment: DemoEnvironment
    let group: EventLoopGroup

    static func start(backend: DemoEnvironment.Backend) throws(IOError) -> DemoMode {
        let group = EventLoopGroup(count: 1, name: "demo")
        do throws(IOError) {
            return DemoMode(environment: try DemoEnvironment(group: group, backend: backend), group: group)
        } catch {
            group.shutdown()
            throw error
        }
    }

    /// Fills in what the user did not set: the mock API as upstream, the mock token server with its
    /// client (or the JSON backend's login), and the admin endpoints on a free loopback port (unless
    /// `--admin-listen` was given).
    func apply(to configuration: inout Configuration, options: ProxyCommand.Options) {
        if configuration.upstream == nil {
            configuration.upstream = try? HTTPURL.parse(self.environment.upstream.baseURL).get()
        }
        if !configuration.canRefresh && configuration.accessToken == nil {
            self.environment.configureTokens(&configuration)
        }
        if configuration.adminListen == nil && !options.overrides.contains(where: { $0.key == "admin_listen" }) {
            configuration.adminListen = .hostPort(host: "127.0.0.1", port: 0)
        }
    }

    /// What to try, printed once the proxy listens: the demo's story, and the admin endpoints.
    func banner(proxy: SocketAddress, admin: SocketAddress?) -> String {
        var text = self.environment.banner(proxy: proxy)
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
