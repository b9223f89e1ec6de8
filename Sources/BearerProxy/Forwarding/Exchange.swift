import BearerCore
import BearerHTTP

/// One request and its response, from the moment its head is parsed until the response is delivered.
/// Confined to the client connection's loop.
final class Exchange {
    let head: RequestHead
    let target: Target
    let path: ForwardedPath
    let startedAt: Instant

    /// The `Authorization` line sent, and the token generation it belongs to (nil: no token injected).
    var authorization: [UInt8]?
    var generation: Int?
    /// Waiting for the token session (a refresh): the ticket it gave.
    var waiterID: TokenSession.WaiterID?
    /// The upstream rejected the token once; the next send is the replay.
    var wasRejected = false
    /// This send is the replay after a refresh; its 401 goes to the client.
    var isReplay = false

    /// The body bytes read so far, kept until the response status is known so the request can be
    /// sent again byte for byte (replay after a refresh, or a pooled connection that was dead).
    var replayBody = ByteBuffer()
    /// Every byte of the body read so far is in `replayBody` (or there is no body).
    var isReplayable = true
    /// Bytes of the replay memory budget this exchange holds.
    var replayReserved = 0

    var upstream: UpstreamConnection?
    var connectAttempt: ConnectAttempt?
    var upstreamWasReused = false
    var attempts = 0

    var isRequestHeadSent = false
    /// Every body byte has been read from the client (and, once the head is sent, forwarded).
    var isRequestComplete = false

    /// A byte of the response has arrived from the upstream.
    var hasResponseStarted = false
    var responseHead: ResponseHead?
    var isResponseHeadSent = false
    var clientFraming: ClientFraming = .none
    /// Reading the upstream paused because the client is not taking bytes fast enough.
    var isUpstreamPaused = false
    var responseBodyBytes = 0

    init(head: RequestHead, target: Target, path: ForwardedPath, startedAt: Instant) {
        self.head = head
        self.target = target
        self.path = path
        self.startedAt = startedAt
    }

    var hasBody: Bool {
        switch self.head.framing {
        case .none, .contentLength(0): false
        case .contentLength, .chunked: true
        }
    }
}

@available(*, unavailable)
extension Exchange: Sendable {}
