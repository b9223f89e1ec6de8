import BearerCore
import BearerHTTP
import BearerIO

/// The process-wide keys, once: what the one process is (its loops, limits and timeouts, logs, who
/// may use it, how it trusts upstreams), the fleet's store and TLS interception, which every session
/// shares. With the documented defaults.
package struct ProcessSettings: Sendable {
    package var otherHosts: OtherHostsPolicy = .forward
    package var workers: Int = EventLoopGroup.coreCount
    /// How the event loops do their I/O. io_uring by default: it measured faster per core than epoll
    /// at 256 and 1,000 connections (docs/benchmarks.md, Benchmark), and falls back to epoll where refused.
    package var io: IOBackend = .ioUring
    package var maxHeaderBytes: Int = 64 * 1024
    package var maxConnections: Int = 10_000
    package var upstreamConnectTimeout: Duration = .seconds(5)
    package var upstreamTimeout: Duration = .seconds(60)
    package var clientHeaderTimeout: Duration = .seconds(10)
    package var clientIdleTimeout: Duration = .seconds(60)
    /// How long a CONNECT tunnel or a WebSocket connection may carry no byte either way.
    package var tunnelIdleTimeout: Duration = .seconds(3600)
    package var logLevel: Logger.Level = .info
    package var shutdownTimeout: Duration = .seconds(10)
    package var adminListen: ListenAddressSpec?
    package var accessLog: AccessLogDestination = .off
    /// One JSON line per exchange, for who used the credential for what (`audit_log`).
    package var auditLog: AccessLogDestination = .off
    /// How long a token call (and the requests parked behind it) may take, in every session.
    package var refreshTimeout: Duration = .seconds(30)
    package var replayMemoryLimit: Int = 256 << 20

    // Who may use the proxy (a local proxy holding a token is a confused deputy).
    package var acceptHosts: [HostPattern] = []
    /// Lower-cased `scheme://host[:port]`.
    package var acceptOrigins: [String] = []

    // Upstream TLS.
    package var caFile: String?
    package var tlsInsecureSkipVerify = false
    /// A client connection opening with the HTTP/2 preface is served as HTTP/2 (prior knowledge).
    package var http2 = true
    /// SETTINGS_MAX_CONCURRENT_STREAMS an HTTP/2 client is told; a stream beyond it is refused.
    package var maxConcurrentStreams = 100

    /// A fleet's shared session: where it lives, and what a proxy does when it cannot be reached.
    package var sessionStore = SessionStoreSettings()
    /// TLS interception for the inject hosts, and where the local CA lives.
    package var intercept = InterceptSettings()

    package init() {}
}
