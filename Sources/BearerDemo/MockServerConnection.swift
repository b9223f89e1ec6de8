import BearerCore
import BearerHTTP
import BearerIO
import Glibc

/// One connection to a `MockHTTPServer`. Confined to its loop.
final class MockServerConnection: StreamConnectionDelegate {
    let stream: StreamConnection
    unowned let server: MockHTTPServer
    private var parser = HTTPRequestParser(maximumHeadBytes: 1 << 20)
    private var currentHead: RequestHead?
    private var body: [UInt8] = []
    private var streaming: (remaining: Int, offset: Int, chunked: Bool)?
    private var isWaitingForResponse = false
    /// Answering `.none` (`/hang`): no response ever comes, so the client's end closes the connection
    /// (a test sees the proxy let its request go through `openConnections`).
    private var isHanging = false
    private var closesAfterResponse = false
    private var isClosed = false
    private var requestsSeen = 0
    /// After a WebSocket handshake: frames are echoed, HTTP is over.
    private var isWebSocket = false

    init(stream: StreamConnection, server: MockHTTPServer) {
        self.stream = stream
        self.server = server
    }

    func start() {
        self.stream.start(delegate: self)
    }

    func close() {
        guard !self.isClosed else { return }
        self.isClosed = true
        self.stream.close()
        self.server.connectionClosed(self)
    }

    func streamReceived(_ connection: StreamConnection) {
        if self.isWebSocket {
            self.echoFrames()
        } else {
            self.process()
        }
    }

    func streamReadEnded(_ connection: StreamConnection) {
        if self.isHanging {
            self.close()
        } else if self.streaming == nil && !self.isWaitingForResponse {
            self.stream.closeAfterFlush()
        } else {
            self.closesAfterResponse = true
        }
    }

    func streamWritable(_ connection: StreamConnection) {
        self.continueStreaming()
    }

    func streamConnected(_ connection: StreamConnection) {
        if connection.tls?.wasSessionReused == true { self.server.resumedTLSSessions.add(1, ordering: .relaxed) }
    }

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.isClosed = true
        self.server.connectionClosed(self)
    }

    private func process() {
        while !self.isClosed && self.streaming == nil && !self.isWaitingForResponse {
            let event: HTTPRequestParser.Event
            do throws(HTTPParseError) {
                event = try self.stream.inbound.parseNext(payload: { bytes in self.body += bytes }) {
                    raw throws(HTTPParseError) in
                    try self.parser.next(raw)
                }
            } catch {
                self.stream.withOutbound {
                    $0.writeString("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                }
                self.stream.closeAfterFlush()
                return
            }
            switch event {
            case .needMore:
                return
            case .head(let head, _):
                self.currentHead = head
                self.body = []
                if head.expectsContinue {
                    if let early = self.server.expectHandler?(head) {
                        // Answered before the body: the body will not be read, so close afterwards.
                        self.closesAfterResponse = true
                        self.send(early, to: head)
                        return
                    }
                    self.stream.withOutbound { $0.writeString("HTTP/1.1 100 Continue\r\n\r\n") }
                    self.stream.flush()
                }
            case .body:
                continue
            case .end:
                guard let head = self.currentHead else { return }
                self.server.handledRequests.add(1, ordering: .relaxed)
                if !head.wantsKeepAlive { self.closesAfterResponse = true }
                self.requestsSeen += 1
                var request = MockRequest(head: head, body: self.body, sequenceOnConnection: self.requestsSeen)
                request.clientCertificateSubject = self.stream.tls?.peerCertificateSubject
                let response = self.server.handler(request)
                self.body = []
                self.send(response, to: head)
            }
        }
    }

    private func send(_ response: MockResponse, to head: RequestHead) {
        if response.delay > .zero {
            var due = response
            due.delay = .zero
            self.isWaitingForResponse = true
            self.stream.loop.schedule(after: response.delay) { [weak self] in
                guard let self, !self.isClosed else { return }
                self.isWaitingForResponse = false
                self.send(due, to: head)
            }
            return
        }
        let isHead = head.method == .head
        func writeHead(_ framing: String) {
            self.stream.withOutbound { buffer in
                buffer.writeString("HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n")
                for (name, value) in response.headers { buffer.writeString("\(name): \(value)\r\n") }
                buffer.writeString(framing)
                if self.closesAfterResponse { buffer.writeString("Connection: close\r\n") }
                buffer.writeString("\r\n")
            }
        }
        switch response.body {
        case .fixed(let bytes):
            writeHead("Content-Length: \(bytes.count)\r\n")
            if !isHead { self.stream.write(bytes) }
            self.finishResponse()
        case .chunked(let chunks):
            writeHead("Transfer-Encoding: chunked\r\n")
            if !isHead {
                self.stream.withOutbound { buffer in
                    for chunk in chunks { chunk.withUnsafeBytes { buffer.writeChunk($0) } }
                    buffer.writeLastChunk()
                }
            }
            self.finishResponse()
        case .streamed(let length, let chunked):
            writeHead(chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(length)\r\n")
            if isHead {
                self.finishResponse()
            } else {
                self.streaming = (length, 0, chunked)
                self.continueStreaming()
            }
        case .closeDelimited(let bytes):
            self.closesAfterResponse = true
            writeHead("")
            if !isHead { self.stream.write(bytes) }
            self.finishResponse()
        case .raw(let bytes, let thenClose):
            self.stream.write(bytes)
            if thenClose { self.closesAfterResponse = true }
            self.finishResponse()
        case .none:
            self.isWaitingForResponse = true
            self.isHanging = true
        case .reset:
            self.reset()
        case .delayed(let delay, let bytes):
            self.isWaitingForResponse = true
            self.stream.loop.schedule(after: delay) { [weak self] in
                guard let self, !self.isClosed else { return }
                self.isWaitingForResponse = false
                writeHead("Content-Length: \(bytes.count)\r\n")
                if !isHead { self.stream.write(bytes) }
                self.finishResponse()
            }
        case .webSocketEcho(let greeting):
            let key = head.value(of: "sec-websocket-key") ?? ""
            self.stream.withOutbound { buffer in
                buffer.writeString(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Accept: \(WebSocketFrames.acceptValue(for: key))\r\n\r\n"
                )
                buffer.writeBytes(WebSocketFrames.encode(.text(greeting), masked: false))
            }
            self.stream.flush()
            self.isWebSocket = true
            if !self.stream.inbound.isEmpty { self.echoFrames() }
        case .resetMidBody(let length, let after):
            writeHead("Content-Length: \(length)\r\n")
            self.stream.write((0..<after).map(mockPatternByte))
            self.stream.flush()
            // Give the peer time to read what was sent: a reset discards data the peer has not read yet.
            self.isWaitingForResponse = true
            self.stream.loop.schedule(after: .milliseconds(100)) { [weak self] in self?.reset() }
        }
    }

    /// Echoes each complete client frame unmasked; answers a close with a close and ends.
    private func echoFrames() {
        var bytes = self.stream.inbound.readableBytesArray[...]
        var consumed = 0
        while let (frame, count) = WebSocketFrames.decode(bytes) {
            bytes = bytes.dropFirst(count)
            consumed += count
            let reply = frame.opcode == 0x9 ? WebSocketFrames.Frame(opcode: 0xA, payload: frame.payload) : frame
            self.stream.write(WebSocketFrames.encode(reply, masked: false))
            if frame.opcode == 0x8 {
                self.stream.inbound.clear()
                self.stream.closeAfterFlush()
                return
            }
        }
        self.stream.inbound.moveReaderIndex(forwardBy: consumed)
        self.stream.flush()
    }

    private func continueStreaming() {
        guard var streaming = self.streaming, !self.isClosed else { return }
        while streaming.remaining > 0 && self.stream.pendingWriteBytes < 256 * 1024 {
            let count = min(streaming.remaining, 64 * 1024)
            let offset = streaming.offset
            self.stream.withOutbound { buffer in
                if streaming.chunked { buffer.writeChunkSize(count) }
                _ = buffer.writeWithUnsafeMutableBytes(minimumWritable: count) { tail in
                    fillMockPattern(UnsafeMutableRawBufferPointer(rebasing: tail[0..<count]), offset: offset)
                    return count
                }
                if streaming.chunked { buffer.writeChunkDataEnd() }
            }
            streaming.remaining -= count
            streaming.offset += count
            self.server.streamedBodyBytes.add(count, ordering: .relaxed)
            self.stream.flush()
            if self.isClosed { return }
        }
        if streaming.remaining > 0 {
            self.streaming = streaming
            return
        }
        self.streaming = nil
        if streaming.chunked { self.stream.withOutbound { $0.writeLastChunk() } }
        self.finishResponse()
    }

    private func finishResponse() {
        if self.closesAfterResponse {
            self.stream.closeAfterFlush()
            return
        }
        self.stream.flush()
        if !self.stream.inbound.isEmpty { self.process() }
    }

    /// Closes with RST: the client's next read fails with a reset.
    private func reset() {
        self.stream.setResetOnClose()
        self.close()
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}

@available(*, unavailable)
extension MockServerConnection: Sendable {}
