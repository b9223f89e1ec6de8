import BearerCore
import BearerHTTP
import BearerHTTP2
import BearerIO

/// One HTTP/2 stream, served by the exchange machinery an HTTP/1.1 request has: the stream's request
/// is handed as HTTP/1.1 to a `ClientConnection` of its own (`servingHTTP2StreamOf`), which routes
/// it, guards it, adds the token, forwards it through the pool, joins the one coalesced refresh on a
/// 401 and replays it, and logs it; its HTTP/1.1 answer goes out as HEADERS and DATA.
///
/// One mechanism, not a copy: nothing of routing, tokens or replay is decided here. The exchange's
/// client side is a detached stream (`StreamConnection.detached`): this side puts the request in its
/// inbound buffer and takes the answer out of its outbound one, and each side tells the other when to
/// look (`exchangeProgressed`, `exchangeClosed`, `ClientConnection.pump`). A pipe between them cost
/// each stream two more streams, their events, a lingering close and its timer: a fifth of an HTTP/2
/// request's CPU. Backpressure is the exchange's own: answer bytes not taken yet count in its
/// `pendingWriteBytes`, which stops it reading its upstream, and they are taken only while the
/// client's window lets the last ones out; request credit goes back to the client once the exchange
/// took the bytes out of its inbound buffer.
///
/// A lane: the exchange's connection is an HTTP/1.1 keep-alive connection, so the object outlives
/// its stream. When a stream's answer ended cleanly and the exchange is idle, ready for its next
/// request head (nothing unread or untaken either way), the connection keeps it in its free list
/// (`HTTP2Connection.park`) and the next stream takes it (`start`) instead of making and closing a
/// connection, a detached stream and their buffers and timer for each stream. Reuse is safe for the
/// reason keep-alive is: everything of one request (its route, session, token and generation, kept
/// body, replay, waiter, upgrade, trailers) lives in the machine's `.exchange` state, which is gone
/// once the machine is `.idle`; what stays is the connection's own (who the client is for the
/// audit log, an intercepted tunnel's target), the same for every stream of the client's connection.
/// Anything else — a reset, an answer that failed or closes its connection, a body not all taken —
/// closes the exchange as before. Confined to the loop.
final class HTTP2StreamExchange {
    /// The stream served now; while parked, the last one served.
    @exclusivity(unchecked) private(set) var streamID: UInt32 = 0
    /// Not counted: the connection holds its streams' exchanges (`exchanges`) and drops them
    /// before it goes. `unowned(unsafe)`: a safe `unowned` one paid an unowned retain on every use.
    unowned(unsafe) let connection: HTTP2Connection
    private let exchange: ClientConnection
    /// The exchange's client side: its inbound buffer is the request, its outbound one the answer.
    private let exchangeStream: StreamConnection
    /// The request body goes in as chunks (the client gave no `content-length`).
    @exclusivity(unchecked) private var isRequestChunked = false
    @exclusivity(unchecked) private var parser: HTTPResponseParser
    /// Request body bytes handed to the exchange and not yet taken by it. Taken, they are credited to
    /// the client.
    @exclusivity(unchecked) private var credit = PipeCredit()
    /// Request bytes (framing included) put in the exchange's inbound buffer so far.
    @exclusivity(unchecked) private var requestBytesWritten = 0
    /// Answer bytes taken from the exchange and not parsed yet.
    @exclusivity(unchecked) private var response = ByteBuffer()
    /// The exchange closed: what it wrote is all it will.
    @exclusivity(unchecked) private var isExchangeClosed = false
    /// Response body bytes waiting for the client's window.
    @exclusivity(unchecked) private var pendingBody = ByteBuffer()
    /// Since when response bytes have been waiting and none went out: the client gives no window, or
    /// does not read its socket. nil while the response flows. The connection resets a stream stalled
    /// for `client_idle_timeout` (`HTTP2Connection.deadline`), so that a zero window held forever holds
    /// no upstream connection and no buffers forever.
    @exclusivity(unchecked) private(set) var stalledSince: Instant?
    @exclusivity(unchecked) private var state = State.parked
    /// The response's trailers, sent as the stream's last HEADERS once its body went out.
    @exclusivity(unchecked) private var trailers: HeaderList?
    /// The upstream's answer head, handed over by the exchange (`responseHeadForwarded`), not sent yet.
    @exclusivity(unchecked) private var forwardedHead: (head: ResponseHead, framing: ClientFraming)?
    /// The response head went out with END_STREAM: its body was empty (`content-length: 0`).
    @exclusivity(unchecked) private var headEndedStream = false

    /// Valid transitions: each case to the next, and to .finished; .parked to .awaitingResponse.
    private enum State {
        case awaitingResponse
        case streaming
        /// The response's end is parsed; it goes out once `pendingBody` did.
        case responseComplete
        /// The stream is over and the exchange closed (or closing).
        case finished
        /// Between streams: a new lane, or one in its connection's free list.
        case parked
    }

    /// Whether a stream is served now.
    private var isServing: Bool {
        switch self.state {
        case .awaitingResponse, .streaming, .responseComplete: true
        case .finished, .parked: false
        }
    }

    /// A new lane, its exchange started; `start` gives it its first stream.
    init(connection: HTTP2Connection) {
        self.connection = connection
        let owner = connection.owner
        self.exchangeStream = StreamConnection.detached(on: owner.loop)
        self.exchange = ClientConnection(
            stream: self.exchangeStream,
            context: owner.context,
            isFromUnixSocket: owner.machine.isFromUnixSocket,
            listenerSession: owner.machine.listenerSession,
            servingHTTP2StreamOf: owner
        )
        // Inside an intercepted tunnel every stream goes to the tunnel's host, as its requests would.
        self.exchange.machine.servedTunnelTarget = owner.machine.servedTunnelTarget
        self.parser = HTTPResponseParser(maximumHeadBytes: owner.runtime.maxHeaderBytes)
        self.exchange.http2Stream = self
        self.exchange.start()
    }

    deinit {
        self.exchange.http2Stream = nil
    }

    /// Serves stream `streamID` on this lane: its request goes to the exchange, which is idle.
    func start(streamID: UInt32, head: HTTP2RequestHead, endStream: Bool) {
        precondition(self.state == .parked, "Invalid state for a new stream: \(self.state)")
        self.streamID = streamID
        self.state = .awaitingResponse
        self.credit = PipeCredit()
        self.requestBytesWritten = 0
        self.stalledSince = nil
        self.trailers = nil
        self.headEndedStream = false
        self.forwardedHead = nil
        let request = HTTP2RequestTranslation(head, endStream: endStream)
        self.isRequestChunked = request.isChunked
        self.parser.expectResponse(to: head.method)
        // A stream counts as a connection while it lives, as its exchange's connection did when it
        // served one stream; a parked lane is no client's connection (`ended`).
        self.connection.owner.runtime.openConnections.add(1, ordering: .relaxed)
        self.writeRequest { buffer in request.head.withUnsafeBytes { buffer.writeBytes($0) } }
        self.exchange.pump()
    }

    // MARK: The request

    /// Request body bytes of a DATA frame; credit goes back once the exchange took them.
    func requestData(_ bytes: UnsafeRawBufferPointer, endStream: Bool) {
        guard self.isServing else { return self.connection.dropRequestData(self.streamID, count: bytes.count) }
        if !bytes.isEmpty {
            let chunked = self.isRequestChunked
            self.writeRequest { chunked ? $0.writeChunk(bytes) : $0.writeBytes(bytes) }
            self.credit.written(bytes.count, endingAt: self.requestBytesWritten)
        }
        if endStream && self.isRequestChunked { self.writeRequest { $0.writeLastChunk() } }
        self.exchange.pump()
        self.creditTakenBytes()
    }

    /// Appends request bytes to the exchange's inbound buffer.
    private func writeRequest(_ write: (inout ByteBuffer) -> Void) {
        let before = self.exchangeStream.inbound.readableBytes
        write(&self.exchangeStream.inbound)
        self.requestBytesWritten += self.exchangeStream.inbound.readableBytes - before
    }

    /// Credits the client with the body bytes the exchange took out of its inbound buffer.
    private func creditTakenBytes() {
        let taken = self.credit.taken(upTo: self.requestBytesWritten - self.exchangeStream.inbound.readableBytes)
        guard taken > 0 else { return }
        self.connection.perform(self.connection.machine.requestDataConsumed(streamID: self.streamID, count: taken))
    }

    /// The client reset the stream (or the connection ended): the exchange is cancelled, and with it
    /// its upstream request.
    func cancel() {
        guard self.isServing else { return }
        self.state = .finished
        self.exchange.closeNow()
        self.ended()
    }

    /// Closes a parked lane (its connection is closing).
    func close() {
        guard self.state == .parked else { return }
        self.state = .finished
        self.exchange.closeNow()
    }

    /// The exchange is over: the request body bytes it never took are credited, as the client's
    /// DATA for the stream from now on is (`HTTP2Connection.dropRequestData`). Without it a
    /// response that ended before its request (an upstream answering without reading the body)
    /// kept those bytes out of the connection's window for good, and the client's other streams
    /// stalled once the window was spent.
    private func creditAbandonedBytes() {
        self.connection.dropRequestData(self.streamID, count: self.credit.abandoned())
    }

    // MARK: The exchange's news

    /// The exchange ran (`ClientConnection.pump`): it may have taken request bytes, or written answer ones.
    func exchangeProgressed() {
        guard self.isServing else { return }
        self.creditTakenBytes()
        self.connection.pumpAtTurnEnd()
    }

    /// The exchange's connection is closing: what it wrote is taken before it goes, and the rest
    /// happens on this loop turn's end, as a pipe's end would have been heard.
    /// A parked lane's connection closed on its own (its idle timeout, a drain): it leaves the free list.
    func exchangeClosed() {
        if self.state == .parked {
            self.state = .finished
            // The free list held the last reference: kept until this call returns.
            return withExtendedLifetime(self) { self.connection.laneClosed(self) }
        }
        guard self.isServing else { return }
        self.exchangeStream.takeWritten(into: &self.response)
        self.isExchangeClosed = true
        self.connection.pumpAtTurnEnd()
    }

    // MARK: The response

    /// The exchange forwards its upstream's answer: the head comes here parsed, its body after it in
    /// the exchange's outbound buffer, framed as `framing` says. Writing the head as HTTP/1.1 for this
    /// side to parse again cost 4% of a stream's CPU. Sent on the next `sendResponse`, in turn with
    /// the stream's other news.
    func responseHeadForwarded(_ head: ResponseHead, framing: ClientFraming) {
        guard self.state == .awaitingResponse else { return }
        self.forwardedHead = (head, framing)
    }

    /// Parses the exchange's answer as far as the client's window lets it go out.
    private func processResponse() {
        if let (head, framing) = self.forwardedHead, self.state == .awaitingResponse {
            // Nothing of the answer is in `response` yet: its body follows the head in the exchange's buffer.
            self.forwardedHead = nil
            self.parser.expectBody(framed: framing.responseFraming)
            let list = HTTP2ResponseTranslation.headerList(forwarding: head, framing: framing)
            self.startStreaming(
                list,
                endsStream: framing == .contentLength(0) || (framing == .none && head.contentLength == 0)
            )
        }
        while self.state == .awaitingResponse || self.state == .streaming {
            let event: HTTPResponseParser.Event
            do throws(HTTPParseError) {
                event = try self.response.parseNext(payload: { self.pendingBody.writeBytes($0) }) {
                    raw throws(HTTPParseError) in try self.parser.next(raw)
                }
            } catch {
                return self.fail()
            }
            switch event {
            case .needMore:
                // More is taken from the exchange only once the body parsed so far went out.
                guard self.pendingBody.isEmpty else { return }
                if self.exchangeStream.pendingWriteBytes > 0 && !self.isExchangeClosed {
                    self.takeResponse()
                    continue
                }
                // Everything it will write is here (it closed, or half-closed after its answer).
                if self.isExchangeClosed || !self.exchangeStream.isOpen { self.fail() }
                return
            case .head(let head, _):
                guard !head.isInformational else { continue }
                self.startStreaming(HTTP2ResponseTranslation.headerList(head), endsStream: head.contentLength == 0)
            case .body:
                // Parsing on past the body finds its end when it is there: the last DATA frame then
                // carries END_STREAM, instead of an empty one after it.
                continue
            case .end:
                self.state = .responseComplete
                if !self.parser.trailers.isEmpty {
                    self.trailers = HTTP2ResponseTranslation.trailerList(self.parser.trailers)
                    if self.trailers == nil { self.connection.owner.context.metrics.trailersDropped += 1 }
                }
            }
        }
    }

    /// Sends the response's head. An empty body ends the stream with it: gRPC's Trailers-Only answer
    /// is one HEADERS frame with END_STREAM, and a client takes a DATA frame after it for a call that
    /// ended without its status (docs/grpc.md).
    private func startStreaming(_ list: HeaderList, endsStream: Bool) {
        self.state = .streaming
        self.headEndedStream = endsStream
        self.connection.perform(
            self.connection.machine.sendHeaders(streamID: self.streamID, list, endStream: endsStream)
        )
    }

    /// Sends what the window allows of the parsed response body, and its end.
    func sendResponse() {
        // Parsing and sending alternate until the window closes, the answer ends, or the exchange
        // wrote nothing more.
        while true {
            self.processResponse()
            guard self.state == .streaming || self.state == .responseComplete else { return }
            // Parsing stops where the bytes taken from the exchange end.
            let parsedBody = !self.pendingBody.isEmpty
            guard self.sendPendingBody() else { return }
            self.stalledSince = nil
            if self.state == .responseComplete { return self.sendEnd() }
            if !parsedBody { return }
        }
    }

    /// Sends what the window allows of the parsed response body (with END_STREAM on its last bytes
    /// when nothing follows them). Returns whether all of it went and the stream goes on.
    private func sendPendingBody() -> Bool {
        let connection = self.connection
        var sent = 0
        while !self.pendingBody.isEmpty {
            if connection.stream.pendingWriteBytes > ClientConnection.highWatermark {
                self.stalled(sent: sent)
                return false
            }
            let count = min(
                self.pendingBody.readableBytes,
                connection.machine.sendableByteCount(streamID: self.streamID)
            )
            guard count > 0 else {
                self.stalled(sent: sent)
                return false
            }
            let ends =
                self.state == .responseComplete && self.trailers == nil && count == self.pendingBody.readableBytes
            self.pendingBody.withUnsafeReadableBytes { bytes in
                connection.stream.withOutbound {
                    HTTP2FrameSerializer.writeData(
                        streamID: self.streamID,
                        endStream: ends,
                        UnsafeRawBufferPointer(rebasing: bytes.prefix(count)),
                        into: &$0
                    )
                }
            }
            self.pendingBody.moveReaderIndex(forwardBy: count)
            sent += count
            connection.perform(connection.machine.dataSent(streamID: self.streamID, count: count, endStream: ends))
            if ends {
                self.finish()
                return false
            }
        }
        return true
    }

    /// The whole answer went out but its end: trailers, or an empty DATA frame with END_STREAM
    /// (nothing when the head ended the stream).
    private func sendEnd() {
        let connection = self.connection
        if let trailers = self.trailers {
            connection.perform(connection.machine.sendHeaders(streamID: self.streamID, trailers, endStream: true))
        } else if !self.headEndedStream {
            connection.stream.withOutbound {
                HTTP2FrameSerializer.writeData(
                    streamID: self.streamID,
                    endStream: true,
                    UnsafeRawBufferPointer(start: nil, count: 0),
                    into: &$0
                )
            }
            connection.perform(connection.machine.dataSent(streamID: self.streamID, count: 0, endStream: true))
        }
        self.finish()
    }

    /// Takes what the exchange wrote; if that had stopped it reading its upstream, it reads again.
    private func takeResponse() {
        let wasBackedUp = self.exchangeStream.pendingWriteBytes > ClientConnection.highWatermark
        self.exchangeStream.takeWritten(into: &self.response)
        if wasBackedUp { self.exchange.pump() }
    }

    /// Response bytes are left that cannot go out now: nothing more is taken from the exchange until
    /// they went (what bounds the stream's buffers, and makes the exchange stop reading its upstream), and the stall
    /// starts, or goes on if none went out.
    private func stalled(sent: Int) {
        if sent > 0 || self.stalledSince == nil { self.stalledSince = self.connection.owner.loop.now }
    }

    /// The answer went out whole: the lane waits for the next stream if its exchange is ready for it
    /// and the connection keeps it, else the exchange closes.
    private func finish() {
        if self.isReadyForNextStream && self.connection.park(self) {
            self.state = .parked
            self.releaseLargeBuffers()
        } else {
            self.state = .finished
            self.exchange.closeNow()
        }
        self.ended()
        self.connection.exchangeEnded(self.streamID)
    }

    /// The exchange ended without a whole response: the stream is reset.
    private func fail() {
        guard self.isServing else { return }
        self.state = .finished
        self.exchange.closeNow()
        self.ended()
        self.connection.exchangeEnded(self.streamID)
        self.connection.perform(self.connection.machine.resetStream(streamID: self.streamID, code: .internalError))
    }

    /// The stream is over: what the exchange did not take of its body is credited, and it no longer
    /// counts as a connection.
    private func ended() {
        self.creditAbandonedBytes()
        self.connection.owner.runtime.connectionClosed()
    }

    /// The exchange is between requests as a keep-alive connection is, and every byte of the stream
    /// is through: nothing of the request left unread, nothing of the answer left untaken or unsent.
    /// An exchange that closes after its answer (its request body not all read, a drain) is not.
    private var isReadyForNextStream: Bool {
        self.exchange.machine.isIdle && self.exchangeStream.inbound.isEmpty
            && self.exchangeStream.pendingWriteBytes == 0 && self.response.isEmpty && self.pendingBody.isEmpty
    }

    /// A parked lane keeps small buffers for its next stream and gives large ones back to the loop:
    /// a burst of large answers held a lane's worth of them each.
    private func releaseLargeBuffers() {
        let loop = self.connection.owner.loop
        if self.response.capacity > Self.keptBufferCapacity { loop.returnBuffer(from: &self.response) }
        if self.pendingBody.capacity > Self.keptBufferCapacity { loop.returnBuffer(from: &self.pendingBody) }
        if self.exchangeStream.inbound.capacity > Self.keptBufferCapacity {
            loop.returnBuffer(from: &self.exchangeStream.inbound)
        }
    }

    private static let keptBufferCapacity = 16 * 1024
}

@available(*, unavailable)
extension HTTP2StreamExchange: Sendable {}
