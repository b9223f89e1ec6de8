import BearerCore
import BearerHTTP
import BearerHTTP2
import BearerIO

/// One stream of a shared upstream HTTP/2 connection, as the exchange sees an upstream connection:
/// the far end of an in-memory pipe whose near end is the exchange's `UpstreamConnection`. The
/// exchange writes its HTTP/1.1 request into the pipe and reads an HTTP/1.1 response back, exactly
/// as over a socket, so that routing, the token, the one coalesced refresh and the replay after a
/// 401 stay the exchange's and are not decided again here (the mirror of `HTTP2StreamExchange`).
///
/// Here the request becomes HEADERS and DATA (within the server's windows: request bytes wait in
/// the pipe, and the exchange's own buffers, while the window is closed), and the response's
/// HEADERS, DATA and trailers become the HTTP/1.1 response. Credit goes back to the server only
/// once the exchange took the bytes out of the pipe: a slow client slows the upstream stream.
/// One request per pipe: the exchange's pool closes such a connection after its exchange.
/// Confined to the loop.
final class HTTP2UpstreamStream {
    /// Each direction of the pipe; response bytes above it wait here, and the exchange's own
    /// watermarks then stop it reading its client.
    static let pipeCapacity = 64 * 1024

    let pipe: StreamConnection
    let origin: Origin
    /// The connection the stream is (or will be) opened on; nil once detached.
    var connection: HTTP2UpstreamConnection?
    private(set) var streamID: UInt32?
    private var parser: HTTPRequestParser
    private(set) var request: HeaderList?
    private(set) var isHeadRequest = false
    /// Request body bytes read from the pipe, waiting for the server's window.
    private var pendingBody = ByteBuffer()
    private var requestEnded = false
    /// The request's head was handed to the connection to open the stream.
    private var isOpening = false
    private var requestEndSent = false
    /// The whole request body while it fits `retryBodyLimit`: a stream the server refused or never
    /// processed (REFUSED_STREAM, above a GOAWAY's last stream id) is opened again elsewhere with it.
    private var keptBody: [UInt8]? = []
    private var responseFraming: HTTP2UpstreamResponseTranslation.Framing?
    private var credit = PipeCredit()
    private(set) var isFinished = false
    /// How many times the stream was opened again on another connection.
    private(set) var reopenings = 0

    static let retryBodyLimit = 64 * 1024

    init(pipe: StreamConnection, origin: Origin, maxHeaderBytes: Int) {
        self.pipe = pipe
        self.origin = origin
        self.parser = HTTPRequestParser(maximumHeadBytes: maxHeaderBytes)
    }

    func start() {
        self.pipe.start(delegate: self)
    }

    /// Whether the stream may be opened on another connection: nothing of its response was
    /// written, and its whole request is still here.
    var isRetryable: Bool { self.responseFraming == nil && self.keptBody != nil && !self.isFinished }

    // MARK: The request

    private func readRequest() {
        reading: while !self.isFinished && !self.requestEnded {
            let event: HTTPRequestParser.Event
            do throws(HTTPParseError) {
                event = try self.pipe.inbound.parseNext(payload: { self.requestBody($0) }) {
                    raw throws(HTTPParseError) in try self.parser.next(raw)
                }
            } catch {
                return self.fail()
            }
            switch event {
            case .needMore:
                if self.pipe.hasReadEnded && self.request == nil { return self.fail() }
                // The rest of the body is not here yet: a streaming call (gRPC bidi) needs its
                // stream open before its request ends.
                break reading
            case .head(let head, _):
                self.request = HTTP2UpstreamRequestTranslation.headerList(head, isHTTPS: self.origin.isHTTPS)
                self.isHeadRequest = head.method == .head
            case .body:
                continue
            case .end:
                self.requestEnded = true
            }
        }
        // Opened once the bytes at hand are parsed: a request without a body is one HEADERS frame
        // with END_STREAM.
        if self.request != nil && !self.isOpening && !self.isFinished {
            self.isOpening = true
            self.connection?.streamReady(self)
        }
    }

    private func requestBody(_ bytes: UnsafeRawBufferPointer) {
        self.pendingBody.writeBytes(bytes)
        if self.keptBody != nil {
            if self.keptBody!.count + bytes.count > Self.retryBodyLimit {
                self.keptBody = nil
            } else {
                self.keptBody!.append(contentsOf: bytes)
            }
        }
    }

    /// Whether the request's HEADERS can say END_STREAM: the whole request is a head.
    var requestIsOnlyAHead: Bool { self.requestEnded && self.pendingBody.isEmpty }

    /// The stream was opened with `streamID` (its HEADERS written).
    func opened(_ streamID: UInt32, endStream: Bool) {
        self.streamID = streamID
        self.requestEndSent = endStream
    }

    /// Sends what the server's windows allow of the request body, and its end.
    func sendRequestBody() {
        guard let connection = self.connection, let streamID = self.streamID, !self.requestEndSent else { return }
        while true {
            let count = min(self.pendingBody.readableBytes, connection.machine.sendableByteCount(streamID: streamID))
            let ends = self.requestEnded && count == self.pendingBody.readableBytes
            guard count > 0 || (ends && self.pendingBody.isEmpty) else { break }
            self.pendingBody.withUnsafeReadableBytes { bytes in
                connection.stream?.withOutbound {
                    HTTP2FrameSerializer.writeData(
                        streamID: streamID,
                        endStream: ends,
                        UnsafeRawBufferPointer(rebasing: bytes.prefix(count)),
                        into: &$0
                    )
                }
            }
            self.pendingBody.moveReaderIndex(forwardBy: count)
            connection.machine.dataSent(streamID: streamID, count: count, endStream: ends)
            if ends {
                self.requestEndSent = true
                break
            }
        }
        self.pipe.setReading(self.pendingBody.readableBytes < Self.pipeCapacity)
    }

    /// The stream goes to another connection (it was refused, or the server went away before
    /// processing it): its request is sent again from the head.
    func reopen(on connection: HTTP2UpstreamConnection) {
        self.connection = connection
        self.reopenings += 1
        self.streamID = nil
        self.requestEndSent = false
        self.pendingBody.clear()
        if let kept = self.keptBody { self.pendingBody.writeBytes(kept) }
        connection.streamReady(self)
    }

    // MARK: The response

    func responseHead(_ head: HTTP2ResponseHead, endStream: Bool) {
        self.responseFraming = self.pipe.withOutbound {
            HTTP2UpstreamResponseTranslation.writeHead(
                head,
                isHeadRequest: self.isHeadRequest,
                endStream: endStream,
                into: &$0
            )
        }
        if endStream { self.responseEnded() }
        self.pipe.flush()
    }

    func responseData(_ bytes: UnsafeRawBufferPointer, endStream: Bool) {
        if !bytes.isEmpty {
            self.pipe.writeBodyPart(bytes, chunked: self.responseFraming == .chunked)
            self.credit.written(bytes.count, into: self.pipe)
        }
        if endStream { self.responseEnded() }
        self.pipe.flush()
        self.creditTakenBytes()
    }

    /// Trailers end the response: a chunked body's trailer section, which the exchange passes on
    /// to a client that takes trailers. A body framed by its `content-length` has no place for
    /// them: dropped and counted.
    func responseTrailers(_ trailers: HeaderList, countDropped: () -> Void) {
        if self.responseFraming == .chunked {
            self.pipe.withOutbound { buffer in
                buffer.writeStaticString("0\r\n")
                for index in trailers.fields.indices {
                    buffer.writeBytes(trailers.name(index))
                    buffer.writeStaticString(": ")
                    buffer.writeBytes(trailers.value(index))
                    buffer.writeStaticString("\r\n")
                }
                buffer.writeStaticString("\r\n")
            }
            self.responseFraming = .noBody
        } else {
            countDropped()
        }
        self.responseEnded()
        self.pipe.flush()
    }

    private func responseEnded() {
        if self.responseFraming == .chunked { self.pipe.withOutbound { $0.writeLastChunk() } }
        self.isFinished = true
        // A response may end before its request did (RFC 9113 §8.1): the rest is not sent.
        if !self.requestEndSent { self.resetIfOpen() }
        self.detach()
    }

    /// Credits the server with the response bytes the exchange took out of the pipe.
    private func creditTakenBytes() {
        let taken = self.credit.taken(from: self.pipe)
        guard taken > 0, let streamID = self.streamID, let connection = self.connection else { return }
        connection.perform(connection.machine.responseDataConsumed(streamID: streamID, count: taken))
        connection.flush()
    }

    // MARK: Ending

    /// The stream ended without a whole response: the exchange sees its upstream connection reset
    /// (before the head: a 502 naming the upstream; after: a cut response, as over HTTP/1.1).
    func fail() {
        guard !self.isFinished else { return }
        self.isFinished = true
        self.resetIfOpen()
        self.detach()
        self.pipe.setResetOnClose()
        self.pipe.close()
    }

    /// The exchange let go of its end before the response ended (its client went away, or it
    /// gave up): the stream is reset (CANCEL), and with it the upstream's work.
    fileprivate func exchangeClosedEarly() {
        guard !self.isFinished else { return }
        self.isFinished = true
        self.resetIfOpen()
        self.detach()
    }

    private func resetIfOpen() {
        guard let connection = self.connection, let streamID = self.streamID else { return }
        connection.perform(connection.machine.resetStream(streamID: streamID, code: .cancel))
        connection.flush()
    }

    private func detach() {
        let connection = self.connection
        self.connection = nil
        connection?.streamDetached(self)
    }
}

extension HTTP2UpstreamStream: StreamConnectionDelegate {
    func streamReceived(_ connection: StreamConnection) {
        self.readRequest()
        self.sendRequestBody()
        self.connection?.flush()
    }

    /// The exchange let go of its end (its exchange finished, or gave up): this end closes too,
    /// which ends the pipe's hold on this object.
    func streamReadEnded(_ connection: StreamConnection) {
        self.readRequest()
        if !self.requestEnded || !self.isFinished { self.exchangeClosedEarly() }
        self.pipe.close()
    }

    func streamWritable(_ connection: StreamConnection) {
        self.creditTakenBytes()
    }

    func streamConnected(_ connection: StreamConnection) {}

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.exchangeClosedEarly()
    }
}

@available(*, unavailable)
extension HTTP2UpstreamStream: Sendable {}
