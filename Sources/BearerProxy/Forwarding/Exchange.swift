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

    var upstream: UpstreamConnection?
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

    /// The request can be sent again on another connection: no body, or one that is fully known.
    var canBeResent: Bool {
        switch self.head.framing {
        case .none, .contentLength(0): true
        case .contentLength, .chunked: false
        }
    }
}

@available(*, unavailable)
extension Exchange: Sendable {}
