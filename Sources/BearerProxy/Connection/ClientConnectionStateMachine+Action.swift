import BearerCore
import BearerCrypto
import BearerHTTP
import BearerIO
import BearerSession

extension ClientConnectionStateMachine {
    /// What `ClientConnection` must do after an event. Each event returns one action; an action
    /// whose I/O produces an answer at once (the token session, a pooled connection) is followed by
    /// the matching event, never by a second action of the same event.
    enum Action: Equatable {
        case none

        // MARK: Token and upstream

        /// Ask the session's port for the token (`SessionPort.tokenForRequest`), and reserve `reserving`
        /// bytes of the replay budget (`replay_memory_limit`, shared by every connection) for the body's
        /// copy; answer with `tokenAnswered`: one trip for both.
        case requestToken(NamedSession, reserving: Int)
        /// Reserve this many more bytes of the replay budget for a growing (chunked) body's copy;
        /// answer with `replayBodyReserved`.
        case reserveReplayBody(Int)
        /// Give this many bytes back to the replay budget.
        case releaseReplayBody(Int)
        /// Lease an idle pooled connection to `origin` (when `allowReuse`), else make one; answer with
        /// `upstreamReady` or `upstreamConnectFailed`.
        case connectUpstream(Origin, allowReuse: Bool)
        /// The same for a replay (the request goes again with a newer token): counted as one.
        case replay(Origin)
        /// Write the request head upstream, then the body kept so far, then the chunked terminator
        /// when the body is complete.
        case sendRequest(RequestToSend)
        /// Write the body bytes just parsed upstream (as one chunk when `chunked`).
        case forwardRequestBody(chunked: Bool)
        /// The body is complete: write the chunked terminator when `chunked`.
        case endRequestBody(chunked: Bool)
        /// Tell the session's port the upstream refused the token of `generation`
        /// (`SessionPort.upstreamRejected`; `canWait`: the request can go again); answer with
        /// `rejectionAnswered`.
        case reportRejection(NamedSession, generation: Int, canWait: Bool)
        /// Hand the rest of a refused response to a drainer (the connection is pooled afterwards
        /// when `reusable`, else closed), then do `next`.
        case discardResponse(reusable: Bool, next: AfterDiscard)

        // MARK: Client

        /// Relay a 1xx head (100 Continue must reach the client at once: flush).
        case writeInformational(ResponseHead)
        /// Write the response head; tell the session its token worked when `accepted` is set.
        case forwardResponseHead(ResponseToForward)
        /// Write the response body bytes just parsed to the client (as one chunk when `chunked`).
        case forwardResponseBody(chunked: Bool)
        /// The response is complete.
        case finishExchange(ExchangeEnd)
        /// The proxy answers itself: status and a one-line body. Indirect: the largest payload, off
        /// the forwarding path; inline it made every action over 128 bytes, each move of one a memcpy.
        indirect case respond(LocalResponse)

        // MARK: Tunnels and WebSocket

        /// CONNECT to a host that gets no token: connect; answer with `tunnelConnected` or
        /// `tunnelConnectFailed`.
        case openTunnel(Origin)
        /// The tunnel's upstream connection is up: write `200 Connection established`, relay.
        case writeTunnelEstablished(RequestRecord)
        /// CONNECT to an inject host: write `200 Connection established`; the requests inside are
        /// served by this connection.
        case acceptServedTunnel(RequestRecord)
        /// Terminate the client's TLS inside the served tunnel with the certificate for `host` (from
        /// the local CA's cache, or made now); answer with `tlsEstablished` (the stream's
        /// `streamConnected`), `clientClosed(tlsFailure:)` or `serverCertificateUnavailable`.
        case startTLS(host: String)
        /// A tunnel's TLS is terminated: count it (`bearer_proxy_intercepted_tunnels_total`).
        case countInterceptedTunnel
        /// The upstream switched to WebSocket: write its 101, relay bytes both ways from now on;
        /// give the body copy's replay budget back.
        case switchProtocols(ResponseHead, RequestRecord, accepted: AcceptedToken?, releasesReplayBytes: Int)
        /// One side of a relay finished sending: half-close the other.
        case shutDownUpstreamWrite
        case shutDownClientWrite

        // MARK: Closing

        /// Send what is buffered, then close.
        case closeAfterFlush
        /// Close both sides now and let go of everything the connection holds.
        case close(CloseReason)
    }

    /// What to do once a refused response is handed to a drainer.
    enum AfterDiscard: Equatable {
        /// The request waits in its session for a token.
        case wait
        /// A newer token exists: send again (`Action.replay`).
        case replay(Origin)
        /// The upstream asked for a new DPoP nonce: remember it, count the retry and send the request
        /// again with the same token and a new proof.
        case retryWithDPoPNonce(DPoPNonceUpdate)
    }

    /// Everything needed to write one request upstream.
    struct RequestToSend: Equatable {
        var head: RequestHead
        var target: Target
        var path: ForwardedPath
        /// The whole `Authorization: Bearer …` line, when the target gets the token.
        var authorization: [UInt8]?
        /// The body read so far, sent again after the head (a replay or a resend); empty otherwise.
        var keptBody: ByteBuffer
        var endsChunkedBody: Bool
        /// How long the request has been with the proxy, for one that waited for a token or is sent
        /// again: a gRPC call's `grpc-timeout` goes on less it. Nil for a first send.
        var spent: Duration? = nil
    }

    struct ResponseToForward: Equatable {
        var head: ResponseHead
        var framing: ClientFraming
        var keepAlive: Bool
        var clientVersion: HTTPVersion
        var accepted: AcceptedToken?
        /// The status is known: the body copy's replay budget goes back.
        var releasesReplayBytes = 0
        /// A `DPoP-Nonce` the response carried, to remember for the next proofs to its origin.
        var dpopNonce: DPoPNonceUpdate?
        /// The upstream refused a replay's token (of this session): counted in
        /// `bearer_proxy_upstream_401s_total`, since no `reportRejection` counted it.
        var refusalOf: NamedSession?
    }

    /// A `DPoP-Nonce` from an upstream, for the session's nonce store. A class: in every response's
    /// action it is one pointer, nil on the plain bearer path (a struct of it measured more per request).
    final class DPoPNonceUpdate: Equatable {
        let prover: DPoPProver
        let origin: Origin
        let nonce: String

        init(prover: DPoPProver, origin: Origin, nonce: String) {
            self.prover = prover
            self.origin = origin
            self.nonce = nonce
        }

        static func == (lhs: DPoPNonceUpdate, rhs: DPoPNonceUpdate) -> Bool {
            lhs.prover === rhs.prover && lhs.origin == rhs.origin && lhs.nonce == rhs.nonce
        }

        func remember() {
            self.prover.nonces.remember(self.nonce, for: self.origin)
        }
    }

    /// A request for the access log, the audit log and the request metrics.
    struct RequestRecord: Equatable {
        /// Nil when no complete head arrived (a head that timed out).
        var head: RequestHead?
        var startedAt: Instant
        /// Where it went, when it was routed.
        var target: Target?
        /// The generation of the token it carried (nil: none), for the audit log; never the token.
        var tokenGeneration: Int?
        /// It waited in its session's queue for a refresh.
        var waitedForToken = false
        /// Request body bytes sent upstream (on the last connection it was sent on).
        var bodyBytesIn = 0

        init(head: RequestHead?, startedAt: Instant, target: Target? = nil, tokenGeneration: Int? = nil) {
            self.head = head
            self.startedAt = startedAt
            self.target = target
            self.tokenGeneration = tokenGeneration
        }
    }

    struct ExchangeEnd: Equatable {
        var record: RequestRecord
        var status: Int
        var bodyBytes: Int
        /// The access log's `replayed=yes`: the exchange was a replay (`Exchange.isReplay`).
        var replayed: Bool
        var writesChunkedEnd: Bool
        /// Return the upstream connection to the pool (else close it).
        var poolsUpstream: Bool
        var closesConnection: Bool
        var releasesReplayBytes = 0
    }

    struct LocalResponse: Equatable {
        var error: ProxyError
        var closesConnection: Bool
        /// A place in a session's queue to give up.
        var cancelsWaiter: ParkedRequest?
        var record: RequestRecord?
        /// An exchange ends with it: close its upstream connection (or connection attempt).
        var endsExchange: Bool
        /// The replay budget the ended exchange's body copy held.
        var releasesReplayBytes: Int
        /// The request was a gRPC call: the answer is a Trailers-Only `grpc-status` (docs/grpc.md).
        var isGRPC = false

        init(
            error: ProxyError,
            closesConnection: Bool,
            cancelsWaiter: ParkedRequest? = nil,
            record: RequestRecord? = nil,
            endsExchange: Bool = false,
            releasesReplayBytes: Int = 0
        ) {
            self.error = error
            self.closesConnection = closesConnection
            self.cancelsWaiter = cancelsWaiter
            self.record = record
            self.endsExchange = endsExchange
            self.releasesReplayBytes = releasesReplayBytes
        }
    }

    enum CloseReason: Equatable {
        /// Idle past `client_idle_timeout`, or idle when the proxy began shutting down.
        case idle
        /// A relay carried nothing for `tunnel_idle_timeout`.
        case tunnelIdle
        /// Both sides of a relay finished, or one side closed.
        case relayEnded
        /// The client is gone.
        case clientGone(cancelsWaiter: ParkedRequest?, releasesReplayBytes: Int = 0)
        /// An exchange cannot be completed (the client vanished mid-request, the upstream mid-response).
        case aborted(reason: String, cancelsWaiter: ParkedRequest?, releasesReplayBytes: Int = 0)
        /// The client started TLS inside a tunnel the proxy serves itself, with tls_intercept off.
        case tlsInsideServedTunnel(Origin?)
        /// The client sent bytes that are not TLS into a tunnel that takes only TLS (an intercepted 443).
        case clearTextInsideInterceptedTunnel(Origin?)
        /// The client's TLS handshake in an intercepted tunnel to `host` failed (it refused the
        /// certificate, closed, or spoke an old TLS).
        case interceptHandshakeFailed(host: String, TLSFailure)
        /// The handshake did not complete within client_header_timeout.
        case interceptHandshakeTimedOut(host: String)
        /// The local CA could not give a certificate for `host`.
        case interceptCertificateUnavailable(host: String, reason: String)

        var cancelsWaiter: ParkedRequest? {
            switch self {
            case .clientGone(let id, _), .aborted(_, let id, _): id
            case .idle, .tunnelIdle, .relayEnded, .tlsInsideServedTunnel, .clearTextInsideInterceptedTunnel,
                .interceptHandshakeFailed, .interceptHandshakeTimedOut, .interceptCertificateUnavailable:
                nil
            }
        }

        /// The replay budget the exchange in flight held.
        var releasesReplayBytes: Int {
            switch self {
            case .clientGone(_, let bytes), .aborted(_, _, let bytes): bytes
            case .idle, .tunnelIdle, .relayEnded, .tlsInsideServedTunnel, .clearTextInsideInterceptedTunnel,
                .interceptHandshakeFailed, .interceptHandshakeTimedOut, .interceptCertificateUnavailable:
                0
            }
        }
    }
}
