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
    package let replayMemoryInUse = Atomic<Int>(0)
    /// Statuses that mean "token expired": refresh and replay.
    let refreshOn: Set<Int>

    package init(
        configuration: Configuration,
        router: Router,
        requestGuard: RequestGuard,
        session: TokenSession,
        connector: OutboundConnector,
        accessLog: LogSink? = nil,
        logger: Logger
    ) {
        self.accessLog = accessLog
        self.configuration = configuration
        self.router = router
        self.requestGuard = requestGuard
        self.session = session
        self.connector = connector
        self.logger = logger
        self.refreshOn = Set(configuration.refreshOn)
    }

    /// Takes `bytes` from the replay memory budget; false when it would pass replay_memory_limit.
    func reserveReplayMemory(_ bytes: Int) -> Bool {
        let total = self.replayMemoryInUse.add(bytes, ordering: .relaxed).newValue
        if total > self.configuration.replayMemoryLimit {
            self.replayMemoryInUse.subtract(bytes, ordering: .relaxed)
            return false
        }
        return true
    }

    func releaseReplayMemory(_ bytes: Int) {
        if bytes > 0 { self.replayMemoryInUse.subtract(bytes, ordering: .relaxed) }
    }
}

/// What the connections of one event loop share: the loop, its upstream pool.
/// Confined to its loop.
final class LoopContext {
    unowned(unsafe) let loop: EventLoop
    let runtime: ProxyRuntime
    let pool = UpstreamPool()
    var metrics = LoopMetrics()
    /// Client connections open on this loop, for shutdown.
    var clients: [ObjectIdentifier: ClientConnection] = [:]

    init(loop: EventLoop, runtime: ProxyRuntime) {
        self.loop = loop
        self.runtime = runtime
    }
}

@available(*, unavailable)
extension LoopContext: Sendable {}
