import BearerCore
import BearerHTTP

/// How the body of a response is delimited toward the client; may differ from the upstream's.
enum ClientFraming: Equatable {
    /// No body (HEAD, 1xx, 204, 304); a Content-Length the upstream sent is kept as is.
    case none
    case contentLength(Int)
    /// Re-chunked by the proxy (upstream chunked or close-delimited, HTTP/1.1 client).
    case chunked
    /// Raw bytes ended by closing the connection (an HTTP/1.0 client with no length known).
    case closeDelimited
}

extension ClientFraming {
    /// The framing as the response parser knows it, for whoever reads the body back.
    var responseFraming: ResponseFraming {
        switch self {
        case .none: .none
        case .contentLength(let length): .contentLength(length)
        case .chunked: .chunked
        case .closeDelimited: .untilClose
        }
    }
}

extension ResponseHead {
    /// Whether the upstream's field at `index` goes on to the client: not hop-by-hop, not framing the
    /// proxy declares again (`framing`), not one the upstream's `Connection` names. The one rule for
    /// both protocols: an HTTP/1.1 head (`writeForwardedResponseHead`) and an HTTP/2 header list
    /// (`HTTP2ResponseTranslation.headerList(forwarding:framing:)`).
    func forwardsField(_ index: Int, framing: ClientFraming) -> Bool {
        switch self.fields[index].knownName {
        case .contentLength:
            if framing != .none { return false }
        case .transferEncoding, .connection, .keepAlive, .proxyConnection, .proxyAuthorization, .te, .trailer,
            .upgrade:
            return false
        case .other, .host, .authorization, .expect, .via, .origin, .secFetchSite, .idempotencyKey:
            break
        }
        return !(self.nominatesOtherFields && self.isNominatedByConnection(index))
    }
}

extension ByteBuffer {
    /// Writes the head sent to the client for an upstream response.
    ///
    /// Hop-by-hop fields are dropped, framing is re-declared (`ClientFraming`), `Connection` says
    /// whether the client connection stays open, and `Via` is appended.
    mutating func writeForwardedResponseHead(
        _ head: ResponseHead,
        framing: ClientFraming,
        keepAlive: Bool,
        clientVersion: HTTPVersion
    ) {
        head.bytes.withUnsafeBytes { raw in
            if head.version == .http11 {
                // An HTTP/1.1 status line goes out as it came.
                self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[0..<(head.reason.upperBound + 2)]))
            } else {
                self.writeStatusLine(head.status, reason: UnsafeRawBufferPointer(rebasing: raw[head.reason]))
            }
            self.writeFieldLines(head.fields, of: raw) { index, _ in head.forwardsField(index, framing: framing) }
            switch framing {
            case .none, .closeDelimited:
                break
            case .contentLength(let length):
                self.writeStaticString("Content-Length: ")
                self.writeDecimal(length)
                self.writeStaticString("\r\n")
            case .chunked:
                self.writeStaticString("Transfer-Encoding: chunked\r\n")
            }
            if !keepAlive {
                self.writeStaticString("Connection: close\r\n")
            } else if clientVersion == .http10 {
                self.writeStaticString("Connection: keep-alive\r\n")
            }
            self.writeStaticString(
                head.version == .http11 ? "Via: 1.1 bearer-proxy\r\n\r\n" : "Via: 1.0 bearer-proxy\r\n\r\n"
            )
        }
    }

    /// Writes an informational (1xx) head, for HTTP/1.1 clients only.
    mutating func writeInformationalHead(_ head: ResponseHead) {
        head.bytes.withUnsafeBytes { raw in
            self.writeStatusLine(head.status, reason: UnsafeRawBufferPointer(rebasing: raw[head.reason]))
            self.writeEndToEndFields(head, raw)
            self.writeStaticString("\r\n")
        }
    }

    /// Writes the upstream's `101 Switching Protocols` to a WebSocket handshake: its own fields (the
    /// `Sec-WebSocket-*` answers) with `Connection: upgrade` and `Upgrade: websocket`.
    mutating func writeSwitchingProtocolsHead(_ head: ResponseHead) {
        head.bytes.withUnsafeBytes { raw in
            self.writeStatusLine(head.status, reason: UnsafeRawBufferPointer(rebasing: raw[head.reason]))
            self.writeEndToEndFields(head, raw)
            self.writeStaticString("Connection: upgrade\r\nUpgrade: websocket\r\nVia: 1.1 bearer-proxy\r\n\r\n")
        }
    }

    /// The head's fields except hop-by-hop and framing ones.
    private mutating func writeEndToEndFields(_ head: ResponseHead, _ raw: UnsafeRawBufferPointer) {
        self.writeFieldLines(head.fields, of: raw) { index, field in
            !field.knownName.isHopByHopOrFraming && !(head.nominatesOtherFields && head.isNominatedByConnection(index))
        }
    }

    mutating func writeStatusLine(_ status: Int, reason: UnsafeRawBufferPointer) {
        self.writeStaticString("HTTP/1.1 ")
        self.writeDecimal(status)
        self.writeByte(0x20)
        self.writeBytes(reason)
        self.writeStaticString("\r\n")
    }

    /// A complete response the proxy makes itself: a status and a one-line plain-text body.
    mutating func writeProxyResponse(status: Int, message: String, close: Bool, extraFields: [(String, String)] = []) {
        let body = message + "\n"
        self.writeStaticString("HTTP/1.1 ")
        self.writeDecimal(status)
        self.writeByte(0x20)
        self.writeString(reasonPhrase(status))
        self.writeStaticString("\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ")
        self.writeDecimal(body.utf8.count)
        self.writeStaticString("\r\n")
        for (name, value) in extraFields {
            self.writeString(name)
            self.writeStaticString(": ")
            self.writeString(value)
            self.writeStaticString("\r\n")
        }
        if close { self.writeStaticString("Connection: close\r\n") }
        self.writeStaticString("\r\n")
        self.writeString(body)
    }
}

extension ByteBuffer {
    /// A local answer to a gRPC call, Trailers-Only (one HEADERS frame with END_STREAM to an HTTP/2
    /// client, its body empty): `:status 200` with the call's outcome in `grpc-status` and the
    /// sentence in `grpc-message` (docs/grpc.md).
    mutating func writeGRPCResponse(status: Int, message: String, close: Bool) {
        self.writeStaticString("HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ngrpc-status: ")
        self.writeDecimal(status)
        self.writeStaticString("\r\ngrpc-message: ")
        self.writeString(GRPC.message(message))
        self.writeStaticString("\r\ncontent-length: 0\r\n")
        if close { self.writeStaticString("Connection: close\r\n") }
        self.writeStaticString("\r\n")
    }
}

package func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 200: "OK"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 408: "Request Timeout"
    case 409: "Conflict"
    case 411: "Length Required"
    case 413: "Content Too Large"
    case 414: "URI Too Long"
    case 415: "Unsupported Media Type"
    case 417: "Expectation Failed"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    case 505: "HTTP Version Not Supported"
    default: "Status"
    }
}
