import BearerCore
import BearerCrypto
import BearerHTTP

extension ByteBuffer {
    /// Writes the head sent upstream for a client's request.
    ///
    /// The request line gets the forwarded target and HTTP/1.1; `Host` becomes the target's authority;
    /// the token (a whole `Authorization` line) replaces any the client sent; hop-by-hop fields
    /// (RFC 9110 §7.6.1) are dropped; framing is re-declared from what was parsed, so the upstream
    /// reads exactly the body the proxy read; `Via` is appended. A WebSocket handshake keeps its
    /// `Connection: upgrade` and `Upgrade: websocket` (RFC 6455 §4.1); no other upgrade is forwarded.
    /// With `dpop` (given for a DPoP-bound token's line only) the request gets a fresh proof (RFC 9449
    /// §7.1), made over the target as written here, which replaces any `DPoP` field the client sent.
    /// `keepsTrailersTE`: a `TE: trailers` line is kept, for an HTTP/2 upstream stream (which
    /// carries it as `te: trailers`, RFC 9113 §8.2.2, what gRPC servers require). `spent`: the time
    /// the request already spent with the proxy (waiting for a refresh, a first attempt), taken off a
    /// gRPC call's `grpc-timeout` (docs/grpc.md).
    mutating func writeForwardedRequestHead(
        _ head: RequestHead,
        target: Target,
        path: ForwardedPath,
        authorization: [UInt8]?,
        dpop: DPoPProver? = nil,
        keepsTrailersTE: Bool = false,
        spent: Duration? = nil
    ) {
        var grpcTimeout: Duration?
        head.bytes.withUnsafeBytes { raw in
            let method = UnsafeRawBufferPointer(rebasing: raw[head.methodRange])
            self.writeBytes(method)
            self.writeByte(0x20)
            // Offsets among the readable bytes, not indices: a write that grows the buffer may move
            // the bytes still unsent to its front, and the indices with them.
            let pathStart = self.readableBytes
            switch path {
            case .prefixed(let range):
                // A mount removed from `/github` or `/github?q` leaves nothing or a query: the path is `/`.
                if target.pathPrefix.isEmpty && (range.isEmpty || raw[range.lowerBound] != UInt8(ascii: "/")) {
                    self.writeByte(UInt8(ascii: "/"))
                } else {
                    self.writeBytes(target.pathPrefix)
                }
                self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[range]))
            case .absolute(let range):
                if range.isEmpty || raw[range.lowerBound] != UInt8(ascii: "/") { self.writeByte(UInt8(ascii: "/")) }
                self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[range]))
            case .asterisk:
                self.writeByte(UInt8(ascii: "*"))
            }
            let pathBytes = pathStart..<self.readableBytes
            self.writeStaticString(" HTTP/1.1\r\nHost: ")
            self.writeBytes(target.authority)
            self.writeStaticString("\r\n")
            if let authorization {
                self.writeBytes(authorization)
                if let dpop {
                    self.writeDPoPProof(
                        dpop,
                        method: method,
                        origin: target.origin,
                        authority: target.authority,
                        pathBytes: pathBytes,
                        line: authorization
                    )
                }
            }
            let dropsClientProof = dpop != nil && authorization != nil
            let dropsClientAuthorization = authorization != nil
            self.writeFieldLines(head.fields, of: raw) { index, field in
                switch field.knownName {
                case .host:
                    return false
                case .authorization:
                    if dropsClientAuthorization { return false }
                case .te:
                    return keepsTrailersTE && equalsCaseInsensitive(raw, field.value, "trailers")
                case .contentLength, .transferEncoding, .connection, .keepAlive, .proxyConnection, .proxyAuthorization,
                    .trailer, .upgrade:
                    return false
                case .other:
                    // Not a known name: the parser does not look for it in every field of every head.
                    if dropsClientProof && DPoPLine.isDPoPFieldName(raw, field.name) { return false }
                    if let spent, equalsCaseInsensitive(raw, field.name, "grpc-timeout"),
                        let timeout = GRPC.timeout(raw[field.value])
                    {
                        grpcTimeout = timeout - spent
                        return false
                    }
                case .expect, .via, .origin, .secFetchSite, .idempotencyKey:
                    break
                }
                return !(head.nominatesOtherFields && head.isNominatedByConnection(index))
            }
            if let grpcTimeout {
                self.writeStaticString("grpc-timeout: ")
                self.writeString(GRPC.timeoutValue(grpcTimeout))
                self.writeStaticString("\r\n")
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

    /// Writes the field lines of a head (its `fields`, its bytes `raw`) that `keeping` accepts, as they
    /// were received: each run of consecutive kept lines is one copy (field lines are contiguous in a
    /// head, each ending where the next begins, the last before the head's final empty line), not four
    /// writes per field. The fields, not the head: read through `ParsedHead`, a protocol witness this
    /// compiler does not inline across modules, the array was retained and released once more.
    @inline(__always)
    mutating func writeFieldLines(
        _ fields: [HTTPField],
        of raw: UnsafeRawBufferPointer,
        keeping: (Int, HTTPField) -> Bool
    ) {
        var runStart = -1
        for index in fields.indices {
            let field = fields[index]
            if keeping(index, field) {
                if runStart < 0 { runStart = field.name.lowerBound }
            } else if runStart >= 0 {
                self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[runStart..<field.name.lowerBound]))
                runStart = -1
            }
        }
        if runStart >= 0 { self.writeBytes(UnsafeRawBufferPointer(rebasing: raw[runStart..<(raw.count - 2)])) }
    }
}
