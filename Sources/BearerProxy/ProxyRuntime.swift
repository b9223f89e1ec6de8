import BearerConfig
import BearerCore
import BearerIO
import BearerSession
import Synchronization

/// What every connection of a running proxy shares: configuration, routes, the sessions.
package final class ProxyRuntime: Sendable {
    package let configuration: Configuration
    /// `configuration.maxHeaderBytes`, read once: through the configuration's key path it cost every
    /// HTTP/2 stream a copy of the whole configuration, twice.
    package let maxHeaderBytes: Int
    package let router: Router
    package let requestGuard: RequestGuard
    /// Every session: the default one first, then the named ones in file order (`NamedSession.index`).
    package let sessions: [NamedSession]
    /// The sessions the user sees: every one, less a default session that reaches no API
    /// (`Configuration.hasDefaultSession`), which stays in `sessions` only for the indexes.
    package let shownSessions: [NamedSession]
    /// The one way out: upstreams, tunnels, token endpoints.
    package let connector: OutboundConnector
    package let logger: Logger
    /// One logfmt line per request, when access_log is on. SIGHUP may move it (`changeAccessLog`).
    package var accessLog: LogSink? { self.accessLogSink.withLock { $0 } }
    private let accessLogSink: Locked<LogSink?>
    /// Lines the access logs SIGHUP replaced had dropped, so that the count never goes down.
    private let retiredDroppedLines = Atomic<Int>(0)
    /// One JSON line per exchange, when audit_log is on. SIGUSR1 opens its file again (`reopenAuditLog`).
    package var auditLog: LogSink? { self.auditLogSink.withLock { $0 } }
    private let auditLogSink: Locked<LogSink?>
    /// The audit log's last lines, for the admin page (none while it is off).
    package let recentExchanges = RecentExchanges()
    /// Lines the audit files SIGUSR1 replaced had dropped.
    private let retiredDroppedAuditLines = Atomic<Int>(0)
    package let openConnections = Atomic<Int>(0)
    /// Wakes a drain when the last connection closes (`ProxyServer.drain`).
    let lastConnectionClosed = LastConnectionClosed()
    /// Request body bytes held for replay across all connections (bounded by replay_memory_limit).
    package let replayBudget: ReplayMemoryBudget
    /// What every client connection's state machine shares.
    let connectionRules: ClientConnectionStateMachine.Rules
    /// Leaf certificates for intercepted CONNECT tunnels, with tls_intercept on.
    package let interceptCertificates: InterceptCertificates?

    /// A client connection let go of everything it held: one fewer is open.
    func connectionClosed() {
        // Sequentially consistent: see `LastConnectionClosed.wait(until:openCount:)`.
        if self.openConnections.subtract(1, ordering: .sequentiallyConsistent).newValue == 0 {
            self.lastConnectionClosed.signal()
        }
    }

    /// Lines the log and the access log dropped (one count when both go to stderr).
    var droppedLogLines: Int {
        let sink = self.logger.sink
        let retired = self.retiredDroppedLines.load(ordering: .relaxed)
        guard let accessLog = self.accessLog, accessLog !== sink else { return sink.droppedLines + retired }
        return sink.droppedLines + accessLog.droppedLines + retired
    }

    /// Bytes the log and the access log hold queued (`bearer_proxy_log_queue_bytes`).
    var queuedLogBytes: Int {
        let sink = self.logger.sink
        guard let accessLog = self.accessLog, accessLog !== sink else { return sink.queuedBytes }
        return sink.queuedBytes + accessLog.queuedBytes
    }

    /// Lines the audit log dropped (`bearer_proxy_audit_lines_dropped_total`); 0 when it is stderr,
    /// whose losses are the log's.
    var droppedAuditLines: Int {
        let retired = self.retiredDroppedAuditLines.load(ordering: .relaxed)
        guard let auditLog = self.auditLog, auditLog !== self.logger.sink else { return retired }
        return auditLog.droppedLines + retired
    }

    /// Makes `sink` the audit log's from now on and returns the one it replaces (the loops' buffers
    /// are moved by the server, `ProxyServer.reopenAuditLog`).
    func replaceAuditLog(with sink: LogSink?) -> LogSink? {
        self.replace(self.auditLogSink, with: sink, keepingDropsIn: self.retiredDroppedAuditLines)
    }

    /// Makes `sink` the access log's from now on (nil: off) and returns the one it replaces; the
    /// loops' buffers are moved by the server (`ProxyServer.changeAccessLog`).
    func replaceAccessLog(with sink: LogSink?) -> LogSink? {
        self.replace(self.accessLogSink, with: sink, keepingDropsIn: self.retiredDroppedLines)
    }

    /// Puts `sink` in `slot` and returns what it held, whose dropped lines `retired` keeps (a sink
    /// that is the log's own keeps counting them there).
    private func replace(
        _ slot: Locked<LogSink?>,
        with sink: LogSink?,
        keepingDropsIn retired: borrowing Atomic<Int>
    ) -> LogSink? {
        let old = slot.withLock { current in
            defer { current = sink }
            return current
        }
        if let old, old !== self.logger.sink { retired.add(old.droppedLines, ordering: .relaxed) }
        return old
    }

    /// The default session's token session (the one session of a file without sections).
    package var session: TokenSession { self.sessions[0].tokens }

    /// Whether the configuration has `[session NAME]` sections: then logs, the access log, `/status`
    /// and `/metrics` say which session each line or figure is about (a file without sections keeps
    /// the shapes it always had).
    package var namesSessions: Bool { self.sessions.count > 1 }

    package init(
        configuration: Configuration,
        router: Router,
        requestGuard: RequestGuard,
        sessions: [NamedSession],
        connector: OutboundConnector,
        accessLog: LogSink? = nil,
        auditLog: LogSink? = nil,
        interceptCertificates: InterceptCertificates? = nil,
        logger: Logger
    ) {
        self.accessLogSink = Locked(accessLog)
        self.auditLogSink = Locked(auditLog)
        self.interceptCertificates = interceptCertificates
        self.configuration = configuration
        self.maxHeaderBytes = configuration.maxHeaderBytes
        self.router = router
        self.requestGuard = requestGuard
        self.sessions = sessions
        self.shownSessions = configuration.hasDefaultSession ? sessions : Array(sessions.dropFirst())
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
    /// Strong, as `StreamConnection.loop` is (why there): every connection reaches its loop through
    /// here on the data path, at no reference counting.
    let loop: EventLoop
    let runtime: ProxyRuntime
    let pool = UpstreamPool()
    /// This loop's HTTP/2 upstream connections, whose streams exchanges lease (`upstream_http2`).
    lazy var http2Upstreams = HTTP2UpstreamPool(
        loop: self.loop,
        connector: self.runtime.connector,
        logger: self.runtime.logger,
        maxHeaderBytes: self.runtime.maxHeaderBytes,
        settingsTimeout: self.runtime.configuration.process.upstreamConnectTimeout,
        trailersDropped: { [unowned self] in self.metrics.trailersDropped += 1 },
        grpcUnauthenticatedUnreplayable: { [unowned self] in self.metrics.grpcUnauthenticatedUnreplayable += 1 }
    )
    @exclusivity(unchecked) var metrics = LoopMetrics()
    /// This loop's access log lines, written in batches (nil: no access log). Replaced on the loop
    /// when SIGHUP moves the access log.
    @exclusivity(unchecked) var accessLog: AccessLogBuffer?
    /// This loop's audit log lines (nil: no audit log). Replaced on the loop by SIGUSR1.
    @exclusivity(unchecked) var auditLog: AuditLogBuffer?
    /// Each session as this loop's connections meet it (its token, kept without a lock while it
    /// stands), by `NamedSession.index`.
    let ports: [SessionPort]
    /// Client connections open on this loop, for shutdown.
    @exclusivity(unchecked) var clients: [ObjectIdentifier: ClientConnection] = [:]

    init(loop: EventLoop, runtime: ProxyRuntime) {
        self.loop = loop
        self.runtime = runtime
        self.accessLog = runtime.accessLog.map {
            AccessLogBuffer(sink: $0, loop: loop, namesSessions: runtime.namesSessions)
        }
        self.auditLog = runtime.auditLog.map { AuditLogBuffer(sink: $0, loop: loop, recent: runtime.recentExchanges) }
        self.ports = runtime.sessions.map { SessionPort($0.tokens, loop: loop) }
    }
}

@available(*, unavailable)
extension LoopContext: Sendable {}
