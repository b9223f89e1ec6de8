import BearerConfig
import BearerCore
import BearerHTTP
import BearerIO

/// The logic of one client connection: what it is doing, what it waits for, and what each event
/// means for it.
///
/// A value type with no I/O, no clock and no logging: events come in (a request head parsed, the
/// upstream answered, the token session granted a token, a timer fired), one `Action` goes out, and
/// `ClientConnection` performs it on the loop. The deadline in force follows from the state
/// (`deadline`). Implements docs/forwarding.md's "Two ways to use it" (the target, and the 502s that say why),
/// the refusals of its "Security", and the per-request half of "Tokens: refresh on expiry, replay,
/// never a 401 for the client".
///
/// The connection's `State` has a few cases; one request in flight is an `Exchange` carried by the
/// `.exchange` case (its request and response progress, its kept body, the token it carries), in the
/// way async-http-client nests its request machine in its connection machine.
struct ClientConnectionStateMachine {
    /// What the machine needs to know of the configuration.
    struct Settings: Sendable {
        var clientHeaderTimeout: TimeSpan
        var clientIdleTimeout: TimeSpan
        var upstreamTimeout: TimeSpan
        /// A parked request's safety net behind the session's own `refresh_timeout`.
        var tokenWaitLimit: TimeSpan
        var tunnelIdleTimeout: TimeSpan

        init(_ configuration: Configuration) {
            self.clientHeaderTimeout = TimeSpan(configuration.clientHeaderTimeout)
            self.clientIdleTimeout = TimeSpan(configuration.clientIdleTimeout)
            self.upstreamTimeout = TimeSpan(configuration.upstreamTimeout)
            self.tokenWaitLimit = TimeSpan(configuration.refreshTimeout + .seconds(5))
            self.tunnelIdleTimeout = TimeSpan(configuration.tunnelIdleTimeout)
        }
    }

    /// The cases off the request path (a served tunnel, its TLS handshake, a relay) are `indirect`:
    /// their payloads (a relay's is the largest) live in a box, so that the state is one word and a
    /// tag, and every copy and destroy of it on the request path is a pointer's, not a walk over
    /// payloads a request never has (callgrind, plain HTTP: 22,759 -> 21,868 instructions a request).
    /// A relay pays one small allocation per relayed read for it (its `lastActivity`).
    enum State {
        /// Between requests, nothing of the next one read. Deadline: `client_idle_timeout`.
        /// Valid transitions: .readingHead, .exchange, .relay, .closing, .closed.
        case idle(since: Instant)
        /// Part of a request head arrived. Deadline: `client_header_timeout` from its first byte.
        /// Valid transitions: .exchange, .relay, .closing, .closed.
        case readingHead(startedAt: Instant)
        /// One request and its response. Deadline: the exchange's (see `Exchange.deadline`).
        /// Valid transitions: .idle, .relay (WebSocket), .closing, .closed.
        case exchange(Exchange)
        /// The proxy answered a CONNECT to an inject host and serves the tunnel itself; the first
        /// bytes inside say whether the client speaks TLS or HTTP in clear, and whether the tunnel
        /// takes it. Deadline: `client_idle_timeout`. Valid transitions: .idle, .tlsHandshake, .closed.
        indirect case servedTunnelOpened(ServedTunnel, since: Instant)
        /// The client's TLS inside a served tunnel is being terminated: the certificate for `host` is
        /// looked up (or made), then the handshake runs. Deadline: `client_header_timeout` from the
        /// first byte. Valid transitions: .idle, .closing, .closed.
        indirect case tlsHandshake(host: String, since: Instant)
        /// Bytes both ways: a CONNECT tunnel, or a WebSocket after its 101. Deadline:
        /// `tunnel_idle_timeout` after the last byte. Valid transitions: .closed.
        indirect case relay(Relay)
        /// The last response is being flushed; the connection closes after it. No deadline (the
        /// stream's own linger bound applies). Valid transitions: .closed.
        case closing
        /// Nothing left. Every event is ignored.
        case closed
        /// Transient, for the length of one event: the exchange is out of `.exchange` and being
        /// changed in place (`modifyExchange`). Never seen between events.
        case modifying
    }

    /// What every connection of the proxy shares.
    let rules: Rules
    /// Accepted on a unix socket: no browser can reach it, so any Host is fine.
    let isFromUnixSocket: Bool
    /// Accepted on a named session's own listener: its origin-form requests are that session's.
    let listenerSession: NamedSession?
    /// Set only by the machine's own events (in this file and its extensions).
    var state: State
    /// After a CONNECT to an inject host and its first bytes: every request on this connection goes
    /// to this target (the https one when the proxy terminates the client's TLS).
    var servedTunnelTarget: Target?

    /// The configuration, routes and limits every connection of a proxy shares. A class, immutable:
    /// the machine is copied whenever the connection reads it, and a pointer is cheaper to copy.
    final class Rules: Sendable {
        let settings: Settings
        let router: Router
        let requestGuard: RequestGuard

        init(settings: Settings, router: Router, requestGuard: RequestGuard) {
            self.settings = settings
            self.router = router
            self.requestGuard = requestGuard
        }
    }

    var settings: Settings { self.rules.settings }

    init(rules: Rules, isFromUnixSocket: Bool, listenerSession: NamedSession? = nil, now: Instant) {
        self.rules = rules
        self.isFromUnixSocket = isFromUnixSocket
        self.listenerSession = listenerSession
        self.state = .idle(since: now)
    }

    // MARK: What the connection wants from its sides

    /// What the connection reads from the client now.
    enum ClientInput: Equatable {
        /// Nothing: bytes wait in the buffer (a request parked, a response in progress, closing).
        case none
        /// The next request head.
        case head
        /// The first bytes inside a served tunnel (TLS or plain HTTP?).
        case tunnelFirstBytes
        /// The current request's body, forwarded as it comes.
        case body
        /// Raw bytes for the relay.
        case relay
    }

    @inline(__always)
    var clientInput: ClientInput {
        switch self.state {
        case .idle, .readingHead: .head
        case .servedTunnelOpened: .tunnelFirstBytes
        case .tlsHandshake: .none
        case .exchange(let exchange): exchange.wantsRequestBody ? .body : .none
        case .relay(let relay): relay.isEstablished && !relay.hasClientFinished ? .relay : .none
        case .closing, .closed: .none
        case .modifying: preconditionFailure("Invalid state: modifying outside an event")
        }
    }

    /// What the connection reads from the upstream now.
    enum UpstreamInput: Equatable {
        case none
        case response
        case relay
    }

    @inline(__always)
    var upstreamInput: UpstreamInput {
        switch self.state {
        case .exchange(let exchange): exchange.isSent ? .response : .none
        case .relay(let relay): relay.isEstablished && !relay.hasUpstreamFinished ? .relay : .none
        case .idle, .readingHead, .servedTunnelOpened, .tlsHandshake, .closing, .closed: .none
        case .modifying: preconditionFailure("Invalid state: modifying outside an event")
        }
    }

    /// When the connection gives up on what it waits for; nil when it waits for nothing time-bound.
    @inline(__always)
    var deadline: Instant? {
        switch self.state {
        case .idle(let since): since + self.settings.clientIdleTimeout
        case .readingHead(let startedAt): startedAt + self.settings.clientHeaderTimeout
        case .exchange(let exchange): exchange.deadline(self.settings)
        case .servedTunnelOpened(_, let since): since + self.settings.clientIdleTimeout
        case .tlsHandshake(_, let since): since + self.settings.clientHeaderTimeout
        case .relay(let relay): relay.isEstablished ? relay.lastActivity + self.settings.tunnelIdleTimeout : nil
        case .closing, .closed: nil
        case .modifying: preconditionFailure("Invalid state: modifying outside an event")
        }
    }

    var isClosed: Bool {
        if case .closed = self.state { return true }
        return false
    }

    /// Between requests, nothing of the next one read: another request may come on this connection.
    var isIdle: Bool {
        if case .idle = self.state { return true }
        return false
    }

    // MARK: Requests

    /// Bytes of a request head arrived, not all of it.
    mutating func requestHeadStarted(now: Instant) {
        if case .idle = self.state { self.state = .readingHead(startedAt: now) }
    }

    /// The client sent bytes that are not HTTP: 400, then close.
    mutating func requestMalformed(_ error: HTTPParseError) -> Action {
        switch self.state {
        case .idle, .readingHead, .servedTunnelOpened:
            self.state = .closing
            return .respond(LocalResponse(error: .malformedRequest(error), closesConnection: true))
        case .exchange(let exchange):
            // Bad framing inside a body: the request cannot be finished.
            return self.answerLocally(exchange, .malformedRequest(error), closes: true)
        case .tlsHandshake, .relay, .closing, .closed, .modifying:
            preconditionFailure("Invalid state for a parse error: \(self.state)")
        }
    }

    /// A complete request head arrived.
    mutating func requestHeadReceived(_ head: RequestHead, now: Instant) -> Action {
        switch self.state {
        case .idle, .readingHead, .servedTunnelOpened:
            break
        case .exchange, .tlsHandshake, .relay, .closing, .closed, .modifying:
            preconditionFailure("Invalid state for a request head: \(self.state)")
        }
        // The record is made where a branch ends the request here: made up front, it was a retain
        // and a release of the head on the forwarded path too.
        let hasBody = head.framing != .none && head.framing != .contentLength(0)
        let isInsideServedTunnel = self.servedTunnelTarget != nil
        // A request refused with its body unread leaves the connection mid-message: close it.
        var closes = !head.wantsKeepAlive || hasBody
        // Held once: read through `self` (inout), the guard and the router were retained each.
        let rules = self.rules
        if let refusal = rules.requestGuard.check(
            head,
            fromUnixSocket: self.isFromUnixSocket || isInsideServedTunnel
        ) {
            return self.refuse(refusal, record: RequestRecord(head: head, startedAt: now), closes: closes)
        }
        let route: Route
        if let target = self.servedTunnelTarget, head.targetForm == .origin {
            // Inside a served tunnel, requests name their target through the tunnel, not Host.
            route = .forward(target, path: .absolute(head.target))
        } else {
            route = rules.router.route(head, arrivedOn: self.listenerSession)
        }
        // Consumed: the target moves into the exchange (a copy was a retain and a release).
        switch consume route {
        case .reject(let error):
            return self.refuse(error, record: RequestRecord(head: head, startedAt: now), closes: closes)
        case .tunnel(let origin):
            let record = RequestRecord(head: head, startedAt: now)
            self.state = .relay(Relay(kind: .connectTunnel(origin), record: record, now: now))
            return .openTunnel(origin)
        case .serveTunnel(let tunnel):
            // The CONNECT's own `Connection: close` (undici sends one) ends the CONNECT exchange, not
            // the tunnel: the requests inside carry their own keep-alive rules.
            self.state = .servedTunnelOpened(tunnel, since: now)
            return .acceptServedTunnel(RequestRecord(head: head, startedAt: now))
        case .forward(let target, let path):
            if let session = target.session, let rules = session.rules,
                let refusal = Self.ruleRefusal(head, path: path, session: session, rules: rules)
            {
                let record = RequestRecord(head: head, startedAt: now, target: target)
                return self.refuse(refusal, record: record, closes: closes)
            }
            closes = !head.wantsKeepAlive
            let body: Exchange.BodyCopy
            var reservation = 0
            switch head.framing {
            case .none, .contentLength(0):
                body = .kept(ByteBuffer(), reserved: 0)
            case _ where target.tokenSession == nil:
                // No token, no refresh to replay after: the body is not copied. (A pooled connection
                // found dead before any of it went out is still resent; after, it is a 502.)
                body = .untouched
            case .contentLength(let length):
                // Kept only within the proxy-wide budget too: asked for with the token (`tokenAnswered`).
                body = .untouched
                if length <= target.tokenSession?.replayBodyLimit ?? 0 { reservation = length }
            case .chunked:
                body = .kept(ByteBuffer(), reserved: 0)
            }
            let exchange = Exchange(
                head: head,
                target: target,
                path: path,
                startedAt: now,
                closesConnection: closes,
                isRequestComplete: !hasBody,
                body: body,
                phase: target.injectsToken ? .routed : .connecting
            )
            self.state = .exchange(exchange)
            guard let session = target.tokenSession else {
                return .connectUpstream(target.origin, allowReuse: true)
            }
            return .requestToken(session, reserving: reservation)
        }
    }

    /// The refusal of a request to `session` its `allow` or `deny` rules make, judged on the path the
    /// client asked the API for (without a mount, before the upstream's prefix), before a token is
    /// asked for or an upstream connection made.
    private static func ruleRefusal(
        _ head: RequestHead,
        path: ForwardedPath,
        session: NamedSession,
        rules: RequestRules
    ) -> ProxyError? {
        let target: String
        switch path {
        case .prefixed(let range), .absolute(let range): target = range.isEmpty ? "/" : head.string(range)
        case .asterisk: target = "*"
        }
        let method = head.string(head.methodRange)
        let requestPath = RequestPath(target)
        guard let rule = rules.refusal(method: method, path: requestPath) else { return nil }
        let request = oneLine("\(method) \(requestPath)", limit: 200)
        return .notAllowed(request: request, session: session, rule: rule)
    }

    private mutating func refuse(_ error: ProxyError, record: RequestRecord, closes: Bool) -> Action {
        self.state = closes ? .closing : .idle(since: record.startedAt)
        return .respond(LocalResponse(error: error, closesConnection: closes, record: record))
    }

    /// The connection was accepted beyond `max_connections`: 503, then close.
    mutating func overCapacity() -> Action {
        guard case .idle = self.state else { return .none }
        self.state = .closing
        return .respond(LocalResponse(error: .overCapacity, closesConnection: true))
    }

    // MARK: The client's side ending

    /// The client sent its last byte (FIN), and every complete request before it has been parsed
    /// (the caller reports it only then). Requests it sent are answered; a request cut short is
    /// abandoned.
    mutating func clientFinished() -> Action {
        switch self.state {
        case .idle, .readingHead, .servedTunnelOpened:
            self.state = .closing
            return .closeAfterFlush
        case .tlsHandshake:
            // The stream ends a handshake the client's end cut short itself (`clientClosed`).
            return .none
        case .exchange(let exchange):
            // The answer to a complete request still goes out; the end is seen again once idle.
            guard !exchange.isRequestComplete else { return .none }
            return self.abort(exchange, reason: "client closed the connection mid-request")
        case .relay(var relay):
            guard !relay.hasClientFinished else { return .none }
            relay.hasClientFinished = true
            if !relay.isEstablished || relay.hasUpstreamFinished {
                self.state = .closed
                return .close(.relayEnded)
            }
            self.state = .relay(relay)
            return .shutDownUpstreamWrite
        case .closing, .closed:
            return .none
        case .modifying:
            preconditionFailure("Invalid state: modifying outside an event")
        }
    }

    /// The client connection is gone (reset, a TLS failure, or closed after the last flush): release
    /// everything. During the handshake of an intercepted tunnel it is the handshake that failed.
    mutating func clientClosed(tlsFailure: TLSFailure? = nil) -> Action {
        switch self.state {
        case .tlsHandshake(let host, _):
            self.state = .closed
            return .close(.interceptHandshakeFailed(host: host, tlsFailure ?? .peerClosedDuringHandshake))
        case .exchange(let exchange):
            self.state = .closed
            return .close(
                .clientGone(cancelsWaiter: exchange.waiterID, releasesReplayBytes: exchange.reservedReplayBytes)
            )
        case .idle, .readingHead, .servedTunnelOpened, .relay, .closing:
            self.state = .closed
            return .close(.clientGone(cancelsWaiter: nil))
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("Invalid state: modifying outside an event")
        }
    }

    /// Shutting down: an idle connection closes now, a busy one after its response.
    ///
    /// Idle with nothing left to send, it closes outright, as the idle timeout closes it (and as Go's
    /// `Server.Shutdown` and nginx close idle keep-alive connections): its client is sending nothing
    /// that a close could turn into a reset, and a lingering close only waited, up to its bound (2 s),
    /// for a client with no reason to close first, holding the drain and the exit with it. A last
    /// response still going out, or a request head half sent, closes after a flush.
    mutating func drainRequested(hasPendingWrites: Bool) -> Action {
        switch self.state {
        case .idle, .servedTunnelOpened:
            guard hasPendingWrites else {
                self.state = .closed
                return .close(.idle)
            }
            self.state = .closing
            return .closeAfterFlush
        case .readingHead, .tlsHandshake:
            self.state = .closing
            return .closeAfterFlush
        case .exchange:
            return self.modifyExchange { _, exchange in
                exchange.closesConnection = true
                return .none
            } ?? .none
        case .relay, .closing, .closed:
            return .none
        case .modifying:
            preconditionFailure("Invalid state: modifying outside an event")
        }
    }

    // MARK: Time

    /// The connection's timer fired; acts only when the deadline in force has passed (a timer armed
    /// for an earlier state may fire after that state ended).
    mutating func timerFired(now: Instant) -> Action {
        guard let deadline = self.deadline, deadline <= now else { return .none }
        switch self.state {
        case .idle, .servedTunnelOpened:
            self.state = .closed
            return .close(.idle)
        case .readingHead(let startedAt):
            return self.refuse(
                .requestHeadTimeout,
                record: RequestRecord(head: nil, startedAt: startedAt),
                closes: true
            )
        case .exchange(let exchange):
            return self.exchangeTimedOut(exchange, now: now)
        case .tlsHandshake(let host, _):
            self.state = .closed
            return .close(.interceptHandshakeTimedOut(host: host))
        case .relay:
            self.state = .closed
            return .close(.tunnelIdle)
        case .closing, .closed, .modifying:
            preconditionFailure("Invalid state with a deadline: \(self.state)")
        }
    }

    // MARK: Ending an exchange

    /// Answers the current request with the proxy's own response and ends the exchange.
    mutating func answerLocally(_ exchange: Exchange, _ error: ProxyError, closes: Bool) -> Action {
        if exchange.isResponseHeadSent {
            // Part of the response is out: a second head cannot follow; cut the connection instead.
            return self.abort(exchange, reason: error.shortName)
        }
        let closesConnection = closes || exchange.closesConnection || !exchange.isRequestComplete
        self.state = closesConnection ? .closing : .idle(since: exchange.startedAt)
        var response = LocalResponse(
            error: error,
            closesConnection: closesConnection,
            cancelsWaiter: exchange.waiterID,
            record: exchange.record,
            endsExchange: true,
            releasesReplayBytes: exchange.reservedReplayBytes
        )
        response.isGRPC = exchange.head.isGRPC
        return .respond(response)
    }

    /// Ends the connection at once: the client sees a cut response, never a complete-looking one.
    mutating func abort(_ exchange: Exchange, reason: String) -> Action {
        self.state = .closed
        return .close(
            .aborted(
                reason: reason,
                cancelsWaiter: exchange.waiterID,
                releasesReplayBytes: exchange.reservedReplayBytes
            )
        )
    }

    /// The `upstream_http2` of the exchange in flight's session; nil without a session, and for a
    /// WebSocket handshake, which only HTTP/1.1 carries here (RFC 8441 is not spoken).
    var exchangeUpstreamHTTP2: UpstreamHTTP2Setting? {
        guard case .exchange(let exchange) = self.state, !exchange.head.upgradesToWebSocket else { return nil }
        return exchange.target.session?.settings.upstreamHTTP2
    }

    /// Whether the exchange in flight is a gRPC call (only asked where HTTP/1.1 would carry it).
    var exchangeIsGRPC: Bool {
        guard case .exchange(let exchange) = self.state else { return false }
        return exchange.head.isGRPC
    }

    /// Runs `body` on the exchange in flight, changed in place; nil when there is none (the event
    /// came for one that has ended). The exchange goes back into `.exchange` unless `body` moved
    /// the machine to another state.
    mutating func modifyExchange(_ body: (inout Self, inout Exchange) -> Action) -> Action? {
        guard case .exchange = self.state else { return nil }
        // Moved out, not copied: no second reference while the exchange changes (its storage is
        // not copied on write), and no reference counting for the move.
        var taken = State.modifying
        swap(&taken, &self.state)
        guard case .exchange(var exchange) = consume taken else { preconditionFailure("Invalid state: \(self.state)") }
        let action = body(&self, &exchange)
        if case .modifying = self.state { self.state = .exchange(exchange) }
        return action
    }
}

@available(*, unavailable)
extension ClientConnectionStateMachine: Sendable {}
