import BearerCore
import BearerCrypto
import BearerIO
import BearerSession

/// Every metric the proxy exports, in one place, with bounded label values.
///
/// Counters touched per request live per event loop (`LoopMetrics`, no atomics on the data path) and
/// are summed when `/metrics` is scraped; session figures live with the session, under its lock. With
/// named sessions every session figure carries `session="NAME"` (`SessionFigures`).
enum MetricNames {
    static let requests = "bearer_proxy_requests_total"
    static let requestDuration = "bearer_proxy_request_duration_seconds"
    static let upstreamConnectErrors = "bearer_proxy_upstream_connect_errors_total"
    static let upstreamRejections = "bearer_proxy_upstream_401s_total"
    static let replays = "bearer_proxy_replays_total"
    static let refreshes = "bearer_proxy_token_refreshes_total"
    static let refreshDuration = "bearer_proxy_token_refresh_duration_seconds"
    static let parked = "bearer_proxy_parked_requests"
    static let openConnections = "bearer_proxy_open_connections"
    static let poolIdle = "bearer_proxy_upstream_pool_idle_connections"
    static let generation = "bearer_proxy_token_generation"
    static let loopTurns = "bearer_proxy_loop_turn_seconds"
    static let storeOperations = "bearer_proxy_session_store_operations_total"
    static let storeErrors = "bearer_proxy_session_store_errors_total"
    static let storeUp = "bearer_proxy_session_store_up"
    static let logLinesDropped = "bearer_proxy_log_lines_dropped_total"
    static let logQueueBytes = "bearer_proxy_log_queue_bytes"
    static let interceptedTunnels = "bearer_proxy_intercepted_tunnels_total"
    static let interceptHandshakeFailures = "bearer_proxy_intercept_handshake_failures_total"
    static let leafCertificatesIssued = "bearer_proxy_leaf_certificates_issued_total"
    static let dpopProofs = "bearer_proxy_dpop_proofs_total"
    static let dpopNonceRetries = "bearer_proxy_dpop_nonce_retries_total"
    static let requestsRefused = "bearer_proxy_requests_refused_total"
    static let auditLinesDropped = "bearer_proxy_audit_lines_dropped_total"
    static let trailersDropped = "bearer_proxy_trailers_dropped_total"
    static let grpcUnauthenticatedUnreplayable = "bearer_proxy_grpc_unauthenticated_unreplayable_total"
}

/// Per-loop counters. Confined to the loop (plain integers).
struct LoopMetrics: Sendable {
    /// Index 0: 1xx … 4: 5xx over HTTP/1.1, then 5 … 9 the same over HTTP/2.
    var requestsByClass = [Int](repeating: 0, count: 10)
    var requestDuration = Histogram()
    var upstreamConnectErrors = 0
    var upstreamRejections = 0
    var replays = 0
    var poolIdle = 0
    /// CONNECT tunnels whose TLS the proxy terminated (tls_intercept).
    var interceptedTunnels = 0
    /// Intercepted tunnels whose TLS handshake with the client failed, timed out or had no certificate.
    var interceptHandshakeFailures = 0
    /// HTTP/2 trailers dropped where HTTP/1.1 could not carry them (an HTTP/2 request's, towards an
    /// HTTP/1.1 upstream).
    var trailersDropped = 0
    /// gRPC calls whose UNAUTHENTICATED came in trailers after response DATA: passed to the client.
    var grpcUnauthenticatedUnreplayable = 0
    /// Filled in when scraped, from the loop itself.
    var loopTurns = LoopTurnHistogram()
    /// Requests and upstream refusals by session (`NamedSession.index`), for the admin page's chart
    /// of each session; grown as sessions are first seen.
    var bySession: [SessionCounts] = []

    /// One session's share of the request and refusal counts.
    struct SessionCounts: Sendable, Equatable {
        var requests = 0
        var upstreamRejections = 0
    }

    /// `session`: the index of the session the request was for, nil for none (another host, unrouted).
    mutating func recordRequest(status: Int, seconds: Double, isHTTP2: Bool = false, session: Int? = nil) {
        let index = min(max(status / 100 - 1, 0), 4) + (isHTTP2 ? 5 : 0)
        self.requestsByClass[index] += 1
        self.requestDuration.record(seconds)
        if let session { self.withSession(session) { $0.requests += 1 } }
    }

    /// An upstream refused the token a request of session `session` carried (a status in refresh_on).
    mutating func recordUpstreamRejection(session: Int?) {
        self.upstreamRejections += 1
        if let session { self.withSession(session) { $0.upstreamRejections += 1 } }
    }

    private mutating func withSession(_ index: Int, _ body: (inout SessionCounts) -> Void) {
        if self.bySession.count <= index {
            self.bySession.append(contentsOf: repeatElement(SessionCounts(), count: index + 1 - self.bySession.count))
        }
        body(&self.bySession[index])
    }

    mutating func add(_ other: LoopMetrics) {
        for index in self.requestsByClass.indices { self.requestsByClass[index] += other.requestsByClass[index] }
        self.requestDuration.add(other.requestDuration)
        self.upstreamConnectErrors += other.upstreamConnectErrors
        self.upstreamRejections += other.upstreamRejections
        self.replays += other.replays
        self.poolIdle += other.poolIdle
        self.interceptedTunnels += other.interceptedTunnels
        self.interceptHandshakeFailures += other.interceptHandshakeFailures
        self.trailersDropped += other.trailersDropped
        self.grpcUnauthenticatedUnreplayable += other.grpcUnauthenticatedUnreplayable
        self.loopTurns.add(other.loopTurns)
        for (index, counts) in other.bySession.enumerated() {
            self.withSession(index) {
                $0.requests += counts.requests
                $0.upstreamRejections += counts.upstreamRejections
            }
        }
    }
}

/// One session's figures in a scrape.
struct SessionFigures {
    /// `session="NAME"` on each of its lines; nil for the one session of a file without sections,
    /// whose lines carry no session label (as they did before sessions had names).
    var name: String?
    var metrics: SessionMetrics
    var parked: Int
    var generation: Int
    var store: SessionStoreStatus?
    /// With dpop on: the session's proof counts.
    var dpop: DPoPProver?

    /// `session="NAME",` to put first among a line's labels, or nothing.
    var labelPrefix: String { self.name.map { "session=\"\($0)\"," } ?? "" }
    /// `{session="NAME"}` for a line with no other label, or nothing.
    var labels: String { self.name.map { "{session=\"\($0)\"}" } ?? "" }
}

/// Renders a scrape: loop counters summed, session figures (each session's), gauges.
func renderMetrics(loops: LoopMetrics, sessions: [SessionFigures], openConnections: Int) -> String {
    var text =
        "# HELP \(MetricNames.requests) Requests answered to clients, by status class and protocol.\n# TYPE \(MetricNames.requests) counter\n"
    for (index, count) in loops.requestsByClass.enumerated() {
        let label = index < 5 ? "http/1.1" : "h2"
        text += "\(MetricNames.requests){class=\"\(index % 5 + 1)xx\",protocol=\"\(label)\"} \(count)\n"
    }
    text += loops.requestDuration.render(
        MetricNames.requestDuration,
        help: "Time from a request head to the end of its response."
    )
    text += counter(
        MetricNames.upstreamConnectErrors,
        "Upstream connections that could not be opened (refused, DNS, TLS, timeout).",
        loops.upstreamConnectErrors
    )
    text += counter(
        MetricNames.upstreamRejections,
        "Answers in refresh_on (401) from upstreams to requests carrying the token.",
        loops.upstreamRejections
    )
    text += counter(MetricNames.replays, "Requests sent again with a newer token after a 401.", loops.replays)
    text += counter(
        MetricNames.trailersDropped,
        "Trailers dropped because HTTP/1.1 could not carry them (a request's towards an HTTP/1.1 upstream; a response's to a client that did not send TE: trailers, or in a body framed by its length).",
        loops.trailersDropped
    )
    text += counter(
        MetricNames.grpcUnauthenticatedUnreplayable,
        "gRPC calls answered UNAUTHENTICATED (grpc-status 16) in trailers after response data had reached the client: passed through, not replayed.",
        loops.grpcUnauthenticatedUnreplayable
    )
    text += "# HELP \(MetricNames.refreshes) Token refreshes, by outcome.\n# TYPE \(MetricNames.refreshes) counter\n"
    for session in sessions {
        for result in [
            "ok", "adopted", "rejected", "unreachable", "timeout", "rate_limited", "command_failed", "no_refresh_token",
            "kept",
        ] {
            text +=
                "\(MetricNames.refreshes){\(session.labelPrefix)result=\"\(result)\"} \(session.metrics.refreshes[result] ?? 0)\n"
        }
    }
    let refreshDuration = MetricNames.refreshDuration
    text +=
        "# HELP \(refreshDuration) Time from the start of a refresh to its end, retries included.\n# TYPE \(refreshDuration) histogram\n"
    for session in sessions {
        text += session.metrics.refreshDuration.samples(refreshDuration, labels: session.labelPrefix)
    }
    text += renderLoopTurns(loops.loopTurns)
    text += gauge(MetricNames.parked, "Requests waiting for a token now.", sessions.map { ($0.labels, $0.parked) })
    text += gauge(MetricNames.openConnections, "Client connections open now.", openConnections)
    text += gauge(MetricNames.poolIdle, "Idle pooled upstream connections now.", loops.poolIdle)
    text += gauge(
        MetricNames.generation,
        "Generation of the current token (increases with every new token).",
        sessions.map { ($0.labels, $0.generation) }
    )
    return text
}

/// The event loops' turn durations (a long turn delays every connection of its loop: tail latency).
private func renderLoopTurns(_ turns: LoopTurnHistogram) -> String {
    let name = MetricNames.loopTurns
    var text =
        "# HELP \(name) Event loop turns that handled I/O, by how long they took (all loops).\n# TYPE \(name) histogram\n"
    var cumulative = 0
    for (index, bound) in LoopTurnHistogram.bounds.enumerated() {
        cumulative += turns.counts[index]
        text += "\(name)_bucket{le=\"\(prometheusNumber(Double(bound) / 1e9))\"} \(cumulative)\n"
    }
    let total = turns.count
    text += "\(name)_bucket{le=\"+Inf\"} \(total)\n"
    text += "\(name)_sum \(prometheusNumber(Double(turns.totalNanoseconds) / 1e9))\n\(name)_count \(total)\n"
    return text
}

/// The session store's figures (with session_store set), for each session: commands by kind, their
/// failures, reachability.
func renderStoreMetrics(_ sessions: [SessionFigures]) -> String {
    let stores = sessions.compactMap { session in session.store.map { (session, $0) } }
    guard !stores.isEmpty else { return "" }
    var text =
        "# HELP \(MetricNames.storeOperations) Commands sent to the session store, by kind.\n# TYPE \(MetricNames.storeOperations) counter\n"
    for (session, status) in stores {
        for operation in SessionStoreStatus.operationNames {
            text +=
                "\(MetricNames.storeOperations){\(session.labelPrefix)operation=\"\(operation)\"} \(status.operations[operation] ?? 0)\n"
        }
    }
    text +=
        "# HELP \(MetricNames.storeErrors) Session store commands that failed (unreachable, timed out, refused), by kind.\n# TYPE \(MetricNames.storeErrors) counter\n"
    for (session, status) in stores {
        for operation in SessionStoreStatus.operationNames {
            text +=
                "\(MetricNames.storeErrors){\(session.labelPrefix)operation=\"\(operation)\"} \(status.errors[operation] ?? 0)\n"
        }
    }
    text += gauge(
        MetricNames.storeUp,
        "1 while the session store is reachable.",
        stores.map { session, status in (session.labels, status.state == "connected" ? 1 : 0) }
    )
    return text
}

/// DPoP's figures (with dpop on), for each session that has it: proofs made (token requests and
/// upstream requests), requests sent again with a server's new nonce.
func renderDPoPMetrics(_ sessions: [SessionFigures]) -> String {
    let provers = sessions.compactMap { session in session.dpop.map { (session.labels, $0) } }
    guard !provers.isEmpty else { return "" }
    return counter(
        MetricNames.dpopProofs,
        "DPoP proofs signed, for token requests and for upstream requests with a DPoP-bound token.",
        provers.map { ($0, $1.proofsMade.load(ordering: .relaxed)) }
    )
        + counter(
            MetricNames.dpopNonceRetries,
            "Requests sent again because a server asked for a new DPoP nonce (use_dpop_nonce): never a refresh.",
            provers.map { ($0, $1.nonceRetries.load(ordering: .relaxed)) }
        )
}

/// Requests a session's `allow` or `deny` refused, by session and rule (the rule as the 403 names
/// it: a label bounded by the config). Nothing for a proxy whose sessions have refused nothing yet.
func renderRefusalMetrics(_ sessions: [(name: String, refusals: [String: Int])]) -> String {
    let samples = sessions.flatMap { session in
        session.refusals.sorted { $0.key < $1.key }.map { rule, count in
            ("{session=\"\(labelValue(session.name))\",rule=\"\(labelValue(rule))\"}", count)
        }
    }
    guard !samples.isEmpty else { return "" }
    return counter(MetricNames.requestsRefused, "Requests refused by a session's allow or deny rule.", samples)
}

/// A label value as the text format escapes it: backslash, double quote and newline.
private func labelValue(_ text: String) -> String {
    var escaped = ""
    for character in text {
        switch character {
        case "\\": escaped += "\\\\"
        case "\"": escaped += "\\\""
        case "\n": escaped += "\\n"
        default: escaped.append(character)
        }
    }
    return escaped
}

/// Log lines lost because the log did not take them (a pipe nobody reads): the loops drop rather than
/// wait. The audit log's are counted apart: a gap in it is a gap in a record someone may rely on.
func renderLogMetrics(droppedLines: Int, droppedAuditLines: Int, queuedBytes: Int) -> String {
    counter(
        MetricNames.logLinesDropped,
        "Log and access log lines dropped because the log was not taking them (see docs/operations.md).",
        droppedLines
    )
        + counter(
            MetricNames.auditLinesDropped,
            "Audit log lines dropped because the audit file could not be opened or written.",
            droppedAuditLines
        )
        + gauge(
            MetricNames.logQueueBytes,
            "Bytes of log and access log lines queued for the log's writer thread and not yet written.",
            queuedBytes
        )
}

/// TLS interception's figures (0 with tls_intercept off).
func renderInterceptMetrics(leavesIssued: Int, loops: LoopMetrics) -> String {
    counter(
        MetricNames.leafCertificatesIssued,
        "Leaf certificates the local CA issued for intercepted hosts (renewals included).",
        leavesIssued
    )
        + counter(
            MetricNames.interceptedTunnels,
            "CONNECT tunnels to inject hosts whose TLS the proxy terminated.",
            loops.interceptedTunnels
        )
        + counter(
            MetricNames.interceptHandshakeFailures,
            "Intercepted tunnels whose TLS handshake with the client failed (certificate refused, timeout, no certificate).",
            loops.interceptHandshakeFailures
        )
}

private func counter(_ name: String, _ help: String, _ value: Int) -> String {
    counter(name, help, [("", value)])
}

/// One counter with a sample per label set (`{session="x"}`, or `` for none).
private func counter(_ name: String, _ help: String, _ samples: [(labels: String, value: Int)]) -> String {
    "# HELP \(name) \(help)\n# TYPE \(name) counter\n" + samples.map { "\(name)\($0.labels) \($0.value)\n" }.joined()
}

private func gauge(_ name: String, _ help: String, _ value: Int) -> String {
    gauge(name, help, [("", value)])
}

/// One gauge with a sample per label set (`{session="x"}`, or `` for none).
private func gauge(_ name: String, _ help: String, _ samples: [(labels: String, value: Int)]) -> String {
    "# HELP \(name) \(help)\n# TYPE \(name) gauge\n" + samples.map { "\(name)\($0.labels) \($0.value)\n" }.joined()
}
