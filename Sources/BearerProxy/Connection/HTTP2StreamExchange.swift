import BearerCore
import BearerHTTP
import BearerHTTP2
import BearerIO

/// One HTTP/2 stream, served by the exchange machinery an HTTP/1.1 request has: the stream's request
/// is written as HTTP/1.1 into an in-memory pipe whose far end is a `ClientConnection` of its own
/// (`servingHTTP2StreamOf`), which routes it, guards it, adds the token, forwards it through the pool,
/// joins the one coalesced refresh on a 401 and replays it, and logs it; its HTTP/1.1 answer comes
/// back through the pipe and goes out as HEADERS and DATA.
///
/// One mechanism, not a copy: nothing of routing, tokens or replay is decided here. Backpressure
/// crosses the pipe as it crosses a socket: the pipe holds `pipeCapacity` bytes each way, so a client
/// whose window is closed stops this side reading the pipe, which stops the exchange reading its
/// upstream; request credit goes back to the client only once the exchange took the bytes out of
/// the pipe. Confined to the loop.
final class HTTP2StreamExchange {
    let streamID: UInt32
    unowned let connection: HTTP2Connection
    /// This side's end of the pipe; the exchange's `ClientConnection` owns the other.
    private let pipe: StreamConnection
    private let exchange: ClientConnection
    @exclusivity(unchecked) private var request: HTTP2RequestTranslation
    @exclusivity(unchecked) private var parser: HTTPResponseParser
    /// Request body bytes written to the pipe and not yet taken by the exchange. Taken, they are
    /// credited to the client.
    @exclusivity(unchecked) private var credit = PipeCredit()
    /// Response body bytes waiting for the client's window.
    @exclusivity(unchecked) private var pendingBody = ByteBuffer()
    /// Since when response bytes have been waiting and none went out: the client gives no window, or
    /// does not read its socket. nil while the response flows. The connection resets a stream stalled
    /// for `client_idle_timeout` (`HTTP2Connection.deadline`), so that a zero window held forever holds
    /// no upstream connection and no buffers forever.
    @exclusivity(unchecked) private(set) var stalledSince: Instant?
    @exclusivity(unchecked) private var state = State.awaitingResponse
    /// The response's trailers, sent as the stream's last HEADERS once its body went out.
    @exclusivity(unchecked) private var trailers: HeaderList?
    /// The response head went out with END_STREAM: its body was empty (`content-length: 0`).
    @exclusivity(unchecked) private var headEndedStream = false

    private enum State {
        case awaitingResponse
        case streaming
        /// The response's end is parsed; it goes out once `pendingBody` did.
        case responseComplete
        case finished
    }

    /// Each direction of the pipe; response bytes above it wait in the exchange, whose own
    /// watermarks then stop it reading the upstream.
    static let pipeCapacity = 64 * 1024

    init(streamID: UInt32, head: HTTP2RequestHead, endStream: Bool, connection: HTTP2Connection) {
        self.streamID = streamID
        self.connection = connection
        let owner = connection.owner
        let (near, far) = StreamConnection.pipe(on: owner.loop, capacity: Self.pipeCapacity)
        self.pipe = near
        self.exchange = ClientConnection(
            stream: far,
            context: owner.context,
            isFromUnixSocket: owner.machine.isFromUnixSocket,
            listenerSession: owner.machine.listenerSession,
            servingHTTP2StreamOf: owner
        )
        // Inside an intercepted tunnel every stream goes to the tunnel's host, as its requests would.
        self.exchange.machine.servedTunnelTarget = owner.machine.servedTunnelTarget
        self.request = HTTP2RequestTranslation(head, endStream: endStream)
        self.parser = HTTPResponseParser(maximumHeadBytes: owner.runtime.maxHeaderBytes)
        self.parser.expectResponse(to: head.method)
    }

    func start() {
        // The exchange's connection counts as one until it closes (`ProxyRuntime.connectionClosed`).
        self.connection.owner.runtime.openConnections.add(1, ordering: .relaxed)
        self.exchange.start()
        self.pipe.start(delegate: self)
        self.pipe.write(self.request.head)
        self.pipe.flush()
    }

    // MARK: The request

    /// Request body bytes of a DATA frame; credit goes back once the exchange read them.
    func requestData(_ bytes: UnsafeRawBufferPointer, endStream: Bool) {
        guard self.state != .finished else { return }
        if !bytes.isEmpty {
            self.pipe.writeBodyPart(bytes, chunked: self.request.isChunked)
            self.credit.written(bytes.count, into: self.pipe)
        }
        if endStream && self.request.isChunked { self.pipe.withOutbound { $0.writeLastChunk() } }
        self.pipe.flush()
        self.creditTakenBytes()
    }

    /// Credits the client with the body bytes the exchange took out of the pipe.
    private func creditTakenBytes() {
        let taken = self.credit.taken(from: self.pipe)
        guard taken > 0 else { return }
        self.connection.perform(self.connection.machine.requestDataConsumed(streamID: self.streamID, count: taken))
    }

    /// The client reset the stream (or the connection ended): the exchange is cancelled, and with it
    /// its upstream request.
    func cancel() {
        guard self.state != .finished else { return }
        self.state = .finished
        self.pipe.setResetOnClose()
        self.pipe.close()
    }

    // MARK: The response

    /// Parses the exchange's answer as far as the client's window lets it go out.
    private func processResponse() {
        while self.state != .finished && self.pendingBody.isEmpty && self.state != .responseComplete {
            let event: HTTPResponseParser.Event
            do throws(HTTPParseError) {
                event = try self.pipe.inbound.parseNext(payload: { self.pendingBody.writeBytes($0) }) {
                    raw throws(HTTPParseError) in try self.parser.next(raw)
                }
            } catch {
                return self.fail()
            }
            switch event {
            case .needMore:
                if self.pipe.hasReadEnded { self.fail() }
                return
            case .head(let head, _):
                guard !head.isInformational else { continue }
                self.state = .streaming
                let list = HTTP2ResponseTranslation.headerList(head)
                // An empty body ends the stream with the head: gRPC's Trailers-Only answer is one
                // HEADERS frame with END_STREAM, and a client takes a DATA frame after it for a
                // call that ended without its status (docs/grpc.md).
                self.headEndedStream = head.contentLength == 0
                self.connection.perform(
                    self.connection.machine.sendHeaders(streamID: self.streamID, list, endStream: self.headEndedStream)
                )
            case .body:
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

    /// Sends what the window allows of the parsed response body, and its end.
    func sendResponse() {
        self.processResponse()
        guard self.state == .streaming || self.state == .responseComplete else { return }
        let connection = self.connection
        var sent = 0
        while !self.pendingBody.isEmpty {
            if connection.stream.pendingWriteBytes > ClientConnection.highWatermark { return self.stalled(sent: sent) }
            let count = min(
                self.pendingBody.readableBytes,
                connection.machine.sendableByteCount(streamID: self.streamID)
            )
            guard count > 0 else { return self.stalled(sent: sent) }
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
            if ends { return self.finish() }
        }
        self.stalledSince = nil
        if self.state == .responseComplete, let trailers = self.trailers {
            connection.perform(connection.machine.sendHeaders(streamID: self.streamID, trailers, endStream: true))
            self.finish()
        } else if self.state == .responseComplete && self.headEndedStream {
            self.finish()
        } else if self.state == .responseComplete {
            connection.stream.withOutbound {
                HTTP2FrameSerializer.writeData(
                    streamID: self.streamID,
                    endStream: true,
                    UnsafeRawBufferPointer(start: nil, count: 0),
                    into: &$0
                )
            }
            connection.perform(connection.machine.dataSent(streamID: self.streamID, count: 0, endStream: true))
            self.finish()
        } else {
            self.processResponse()
        }
        self.pipe.setReading(self.pendingBody.isEmpty && self.pipe.inbound.readableBytes < Self.pipeCapacity)
    }

    /// Response bytes are left that cannot go out now: the pipe is not read until they went (what
    /// bounds the stream's buffers, and makes the exchange stop reading its upstream), and the stall
    /// starts, or goes on if none went out.
    private func stalled(sent: Int) {
        self.pipe.setReading(false)
        if sent > 0 || self.stalledSince == nil { self.stalledSince = self.connection.owner.loop.now }
    }

    private func finish() {
        self.state = .finished
        self.pipe.close()
        self.connection.exchangeEnded(self.streamID)
    }

    /// The exchange ended without a whole response: the stream is reset.
    private func fail() {
        guard self.state != .finished else { return }
        self.state = .finished
        self.pipe.close()
        self.connection.exchangeEnded(self.streamID)
        self.connection.perform(self.connection.machine.resetStream(streamID: self.streamID, code: .internalError))
    }
}

extension HTTP2StreamExchange: StreamConnectionDelegate {
    func streamReceived(_ connection: StreamConnection) { self.connection.pump() }
    func streamReadEnded(_ connection: StreamConnection) { self.connection.pump() }
    func streamWritable(_ connection: StreamConnection) {
        self.creditTakenBytes()
        self.connection.pump()
    }
    func streamConnected(_ connection: StreamConnection) {}
    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        if self.state != .finished { self.fail() }
        self.connection.pump()
    }
}

@available(*, unavailable)
extension HTTP2StreamExchange: Sendable {}
