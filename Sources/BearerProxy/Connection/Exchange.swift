import BearerCore
import BearerHTTP

/// One request and its response, from its head to the end of its response: the data the
/// connection machine's `.exchange` state carries.
///
/// A class, so that the machine's events reach it through a pointer instead of copying (and
/// retaining) all it holds at every event; only `ClientConnectionStateMachine` mutates it. Its
/// mutable fields skip the dynamic exclusivity check: the machine's methods are pure and never call
/// out while they mutate it, so no two accesses can overlap. Confined to its connection's loop.
final class Exchange {
    let head: RequestHead
    let target: Target
    let path: ForwardedPath
    let startedAt: Instant
    /// The connection closes once this exchange ends (the client asked, HTTP/1.0, a body the
    /// response cut short, a close-delimited response, shutdown).
    @exclusivity(unchecked) var closesConnection: Bool
    /// Every byte of the request body has been read from the client.
    @exclusivity(unchecked) var isRequestComplete: Bool
    /// The body kept so that the request can be sent again.
    @exclusivity(unchecked) var body: BodyCopy
    @exclusivity(unchecked) var phase: Phase
    /// The token this request carries (nil: the target gets none).
    @exclusivity(unchecked) var token: InjectedToken?
    /// The current send is the replay after a refused token: a second refusal goes to the client.
    @exclusivity(unchecked) var isReplay = false
    /// Connections the request was sent on (a pooled one found dead, then fresh ones).
    @exclusivity(unchecked) var attempts = 0
    /// Body bytes written upstream on the current connection.
    @exclusivity(unchecked) var forwardedBodyBytes = 0

    init(
        head: RequestHead,
        target: Target,
        path: ForwardedPath,
        startedAt: Instant,
        closesConnection: Bool,
        isRequestComplete: Bool,
        body: BodyCopy,
        phase: Phase
    ) {
        self.head = head
        self.target = target
        self.path = path
        self.startedAt = startedAt
        self.closesConnection = closesConnection
        self.isRequestComplete = isRequestComplete
        self.body = body
        self.phase = phase
    }

    /// Where the request is.
    enum Phase {
        /// Routed; the token session is being asked for the token (it answers at once).
        case routed
        /// Parked in the token session. Deadline: the session's refresh_timeout, plus a margin.
        case waitingForToken(TokenSession.WaiterID, since: Instant, afterRejection: Bool)
        /// The outbound connector is making a connection (bounded by its own connect timeout).
        case connecting
        /// The head is upstream. Deadline: see `deadline(_:)`.
        case sent(Sent)
    }

    struct Sent {
        var response: ResponseProgress
        /// The last byte either way (request body or response): deadlines run from here.
        var lastActivity: Instant
        /// The connection came from the pool (it may have died while idle).
        var isReusedConnection: Bool
    }

    enum ResponseProgress {
        case awaitingHead
        /// The upstream refused the token; the token session is being asked what to do (it answers at once).
        case refused(ResponseHead)
        /// The head is with the client; the body follows.
        case streaming(status: Int, framing: ClientFraming, upstreamKeepsAlive: Bool, bodyBytes: Int)
    }

    /// A request body kept until the response status is known, so the request can be sent again:
    /// after a refresh, or when a pooled connection turns out dead.
    enum BodyCopy: Equatable {
        /// Every body byte forwarded so far is here, within `reserved` bytes of the replay budget.
        case kept(ByteBuffer, reserved: Int)
        /// Not kept (too large, or over `replay_memory_limit`), but nothing of it has been forwarded
        /// either: the request can still be sent again (the body has not left the client).
        case untouched
        /// Forwarded without a copy: the request cannot be sent again.
        case lost
    }

    var isReplayable: Bool { self.body != .lost }
    var hasForwardedBody: Bool { self.forwardedBodyBytes > 0 }

    var waiterID: TokenSession.WaiterID? {
        if case .waitingForToken(let id, _, _) = self.phase { return id }
        return nil
    }

    var isSent: Bool {
        if case .sent = self.phase { return true }
        return false
    }

    var isResponseHeadSent: Bool {
        if case .sent(let sent) = self.phase, case .streaming = sent.response { return true }
        return false
    }

    /// The body is read while the head is upstream (a response that started early does not stop it:
    /// the upstream may still be reading).
    var wantsRequestBody: Bool { self.isSent && !self.isRequestComplete }

    var record: ClientConnectionStateMachine.RequestRecord {
        .init(head: self.head, startedAt: self.startedAt, target: self.target)
    }

    /// When the exchange gives up: a parked request after the token wait limit; a request body that
    /// stopped arriving after `client_idle_timeout`; an upstream silent for `upstream_timeout`.
    func deadline(_ settings: ClientConnectionStateMachine.Settings) -> Instant? {
        switch self.phase {
        case .routed, .connecting:
            return nil
        case .waitingForToken(_, let since, _):
            return since + settings.tokenWaitLimit
        case .sent(let sent):
            if self.isWaitingForRequestBody(sent) { return sent.lastActivity + settings.clientIdleTimeout }
            return sent.lastActivity + settings.upstreamTimeout
        }
    }

    func isWaitingForRequestBody(_ sent: Sent) -> Bool {
        if case .awaitingHead = sent.response { return !self.isRequestComplete }
        return false
    }
}

/// The `Authorization` line a request carries, and the token generation it belongs to.
struct InjectedToken: Equatable {
    var line: [UInt8]
    var generation: Int
}

@available(*, unavailable)
extension Exchange: Sendable {}
