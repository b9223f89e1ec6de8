import BearerCore
import BearerHTTP

extension ByteBuffer {
    /// Writes the head sent upstream for a client's request.
    ///
    /// The request line gets the forwarded target and HTTP/1.1; `Host` becomes the target's authority;
    /// the token (a whole `Authorization` line) replaces any the client sent; hop-by-hop fields
    /// (RFC 9110 §7.6.1) are dropped; framing is re-declared from what was parsed, so the upstream
    /// reads exactly the body the proxy read; `Via` is appended. A WebSocket handshake keeps its
    /// `Connection: upgrade` and `Upgrade: websocket` (RFC 6455 §4.1); no other upgrade is forwarded.
    mutating func writeForwardedRequestHead(
        _ head: RequestHead,
        target: Target,
        path: ForwardedPath,
        authorization: [UInt8]?
    ) {
        head.bytes.withUnsafeBytes { raw in
            self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[head.methodRange]))
            self.writeByte(0x20)
            switch path {
            case .prefixed(let range):
                self.writeBytes(target.pathPrefix)
                self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[range]))
            case .absolute(let range):
                if range.isEmpty || raw[range.lowerBound] != UInt8(ascii: "/") { self.writeByte(UInt8(ascii: "/")) }
                self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[range]))
            case .asterisk:
                self.writeByte(UInt8(ascii: "*"))
            }
            self.writeStaticString(" HTTP/1.1\r\nHost: ")
            self.writeBytes(target.authority)
            self.writeStaticString("\r\n")
            if let authorization { self.writeBytes(authorization) }
            let dropsClientAuthorization = authorization != nil
            for index in head.fields.indices {
                let field = head.fields[index]
                switch field.knownName {
                case .host:
                    continue
                case .authorization:
                    if dropsClientAuthorization { continue }
                case .contentLength, .transferEncoding, .connection, .keepAlive, .proxyConnection, .proxyAuthorization,
                    .te, .trailer, .upgrade:
                    continue
                case .other, .expect, .via, .origin, .secFetchSite, .idempotencyKey:
                    break
                }
                if head.nominatesOtherFields && head.isNominatedByConnection(index) { continue }
                self.writeField(raw, field)
            }
            if head.upgradesToWebSocket { self.writeStaticString("Connection: upgrade\r\nUpgrade: websocket\r\n") }
            switch head.framing {
            case .none:
                break
            case .contentLength(let length):
                self.writeStaticString("Content-Length: ")
                self.writeDecimal(length)
                self.writeStaticString("\r\n")
            case .chunked:
                self.writeStaticString("Transfer-Encoding: chunked\r\n")
            }
            self.writeStaticString(
                head.version == .http11 ? "Via: 1.1 bearer-proxy\r\n\r\n" : "Via: 1.0 bearer-proxy\r\n\r\n"
            )
        }
    }

    /// `name: value\r\n` from a parsed field.
    @inline(__always)
    mutating func writeField(_ raw: UnsafeRawBufferPointer, _ field: HTTPField) {
        self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[field.name]))
        self.writeStaticString(": ")
        self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[field.value]))
        self.writeStaticString("\r\n")
    }
}
