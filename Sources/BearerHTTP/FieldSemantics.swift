/// What the framing and connection fields of a head say, gathered in one pass over its fields.
///
/// Ambiguity is an error here rather than a guess: differing Content-Lengths, Content-Length with
/// Transfer-Encoding, chunked that is not the final coding (RFC 9112 §6.1–6.3).
struct FieldSemantics {
    var hostField: Int?
    var contentLength: Int?
    var transferEncoding: TransferEncoding = .absent
    var connectionClose = false
    var connectionKeepAlive = false
    var nominatesOtherFields = false
    var expectsContinue = false
    var hasUnknownExpectation = false
    /// `Connection` lists `upgrade`.
    var connectionUpgrade = false
    /// `Upgrade` names `websocket` (RFC 6455 §4.1).
    var upgradeToWebSocket = false
    var hasIdempotencyKey = false

    enum TransferEncoding: Equatable {
        case absent
        /// `chunked` is the final and only coding.
        case chunked
        /// Codings other than a final `chunked` (gzip, chunked; or a final non-chunked coding).
        case unsupported(finalIsChunked: Bool)
    }

    /// `fields` borrowed: an initializer takes its arguments owned, so the parser's array was
    /// retained for the call and released in it, for every head.
    init(_ bytes: UnsafeRawBufferPointer, _ fields: borrowing [HTTPField]) throws(HTTPParseError) {
        var chunkedCount = 0
        var codingCount = 0
        var lastIsChunked = false
        for position in fields.indices {
            let field = fields[position]
            switch field.knownName {
            case .host:
                if self.hostField != nil { throw .duplicateHost }
                self.hostField = position
            case .contentLength:
                try forEachListElement(bytes, field.value) { (element) throws(HTTPParseError) in
                    let length = try parseContentLength(bytes, element)
                    if let existing = self.contentLength, existing != length { throw .conflictingContentLength }
                    self.contentLength = length
                }
                if field.value.isEmpty { throw .invalidContentLength }
            case .transferEncoding:
                if field.value.isEmpty { throw .invalidTransferEncoding }
                try forEachListElement(bytes, field.value) { (element) throws(HTTPParseError) in
                    codingCount += 1
                    if element.contains(where: { !bytes[$0].isTokenCharacter }) {
                        // A coding with parameters (or junk): not one this proxy can decode.
                        lastIsChunked = false
                        return
                    }
                    if equalsCaseInsensitive(bytes, element, "chunked") {
                        chunkedCount += 1
                        lastIsChunked = true
                    } else {
                        lastIsChunked = false
                    }
                }
            case .connection, .proxyConnection:
                try forEachListElement(bytes, field.value) { (element) throws(HTTPParseError) in
                    if equalsCaseInsensitive(bytes, element, "close") {
                        self.connectionClose = true
                    } else if equalsCaseInsensitive(bytes, element, "keep-alive") {
                        self.connectionKeepAlive = true
                    } else if field.knownName == .connection {
                        self.nominatesOtherFields = true
                        if equalsCaseInsensitive(bytes, element, "upgrade") { self.connectionUpgrade = true }
                    }
                }
            case .expect:
                if equalsCaseInsensitive(bytes, field.value, "100-continue") {
                    self.expectsContinue = true
                } else {
                    self.hasUnknownExpectation = true
                }
            case .upgrade:
                forEachListElementIgnoringErrors(bytes, field.value) { element in
                    if equalsCaseInsensitive(bytes, element, "websocket") { self.upgradeToWebSocket = true }
                }
            case .idempotencyKey:
                self.hasIdempotencyKey = true
            case .other, .keepAlive, .proxyAuthorization, .te, .trailer, .authorization, .via, .origin, .secFetchSite:
                break
            }
        }
        if codingCount > 0 {
            if chunkedCount > 1 || (chunkedCount == 1 && !lastIsChunked) {
                throw .invalidTransferEncoding
            }
            self.transferEncoding =
                codingCount == 1 && chunkedCount == 1 ? .chunked : .unsupported(finalIsChunked: lastIsChunked)
            if self.contentLength != nil { throw .contentLengthWithTransferEncoding }
        }
    }
}

/// Parses a Content-Length element: ASCII digits only, at most 18 of them (no overflow possible).
package func parseContentLength(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) throws(HTTPParseError) -> Int {
    guard !range.isEmpty, range.count <= 18 else { throw .invalidContentLength }
    var value = 0
    for index in range {
        let byte = bytes[index]
        guard byte.isDigit else { throw .invalidContentLength }
        value = value * 10 + Int(byte &- 0x30)
    }
    return value
}
