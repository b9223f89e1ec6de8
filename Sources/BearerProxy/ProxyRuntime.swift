import BearerCore
import BearerIO
import Synchronization

/// What every connection of a running proxy shares: configuration, routes, the token session.
package final class ProxyRuntime: Sendable {
    package let configuration: Configuration
    package let router: Router
    package let requestGuard: RequestGuard
    package let session: TokenSession
    /// The one way out: upstreams, tunnels, token endpoints.
    package let connector: OutboundConnector
    package let logger: Logger
    /// One logfmt line per request, when access_log is on.
    package let accessLog: LogSink?
    package let openConnections = Atomic<Int>(0)
    /// Request body bytes held for replay across all connections (bounded by replay_memory_limit).
    package let replayBudget: ReplayMemoryBudget
    /// What every client connection's state machine shares.
    let connectionRules: ClientConnectionStateMachine.Rules
    /// Leaf certificates for intercepted CONNECT tunnels, with tls_intercept on.
    package let interceptCertificates: InterceptCertificates?

    /// Lines the log and the access log dropped (one count when both go to stderr).
    var droppedLogLines: Int {
        let sink = self.logger.sink
        guard let accessLog = self.accessLog, accessLog !== sink else { return sink.droppedLines }
        return sink.droppedLines + accessLog.droppedLines
    }

    package init(
        configuration: Configuration,
        router: Router,
        requestGuard: RequestGuard,
        session: TokenSession,
        connector: OutboundConnector,
        accessLog: LogSink? = nil,
        interceptCertificates: InterceptCertificates? = nil,
        logger: Logger
    ) {
        self.accessLog = accessLog
        self.interceptCertificates = interceptCertificates
        self.configuration = configuration
        self.router = router
        self.requestGuard = requestGuard
        self.session = session
        self.connector = connector
        self.logger = logger
        self.replayBudget = ReplayMemoryBudget(limit: configuration.replayMemoryLimit)
        self.connectionRules = ClientConnectionStateMachine.Rules(
            settings: ClientConnectionStateMachine.Settings(configuration),
            router: router,
            requestGuard: requestGuard
        )
    }
}

/// What the connections of one event loop share: the loop, its upstream pool.
/// Confined to its loop.
final class LoopContext {
    /// Unowned and unchecked: the loop outlives its context (the server stops the loops last), and
    /// every connection reaches its loop through here on the data path.
    unowned(unsafe) let loop: EventLoop
    let runtime: ProxyRuntime
    let pool = UpstreamPool()
    @exclusivity(unchecked) var metrics = LoopMetrics()
    /// This loop's access log lines, written in batches (nil: no access log).
    let accessLog: AccessLogBuffer?
    /// The token line this loop's requests carry while the session says it stands (no lock).
    @exclusivity(unchecked) var tokenCache = TokenSession.LoopTokenCache()
    /// Client connections open on this loop, for shutdown.
    @exclusivity(unchecked) var clients: [ObjectIdentifier: ClientConnection] = [:]

    init(loop: EventLoop, runtime: ProxyRuntime) {
        self.loop = loop
        self.runtime = runtime
        self.accessLog = runtime.accessLog.map { AccessLogBuffer(sink: $0, loop: loop) }
    }
}

@available(*, unavailable)
extension LoopContext: Sendable {}
