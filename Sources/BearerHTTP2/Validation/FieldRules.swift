import BearerHTTP

/// The rules every field of an HTTP/2 message obeys, pseudo-header or not (RFC 9113 §8.2), and what
/// the regular fields of a head say that the validators need (content-length, host).
///
/// Stricter than §8.2.1's minimum where HTTP/1.1 would disagree: a name must be a token (RFC 9110
/// §5.1) and a value may hold no control character but HTAB, as the HTTP/1.1 parser demands, so
/// that nothing accepted here changes meaning when it is translated for an HTTP/1.1 peer.
enum FieldRules {
    /// Checks a regular field's name (lower-case token) and value.
    static func checkRegular(_ bytes: UnsafeRawBufferPointer, _ field: HeaderList.Field) throws(HeaderValidationError) {
        guard !field.name.isEmpty else { throw .invalidFieldName }
        for index in field.name {
            let byte = bytes[index]
            if byte >= 0x41 && byte <= 0x5a { throw .uppercaseFieldName }
            guard byte.isTokenCharacter else { throw .invalidFieldName }
        }
        try self.checkValue(bytes, field.value)
    }

    /// Checks a value: no NUL, CR, LF or other control but HTAB; no whitespace at either end.
    static func checkValue(_ bytes: UnsafeRawBufferPointer, _ value: Range<Int>) throws(HeaderValidationError) {
        for index in value where !bytes[index].isFieldValueCharacter { throw .invalidFieldValue }
        if let first = value.first, bytes[first] == 0x20 || bytes[first] == 0x09 { throw .fieldValueWhitespace }
        if let last = value.last, bytes[last] == 0x20 || bytes[last] == 0x09 { throw .fieldValueWhitespace }
    }

    /// What the regular fields of a head carry that the message's framing and routing depend on.
    struct Semantics {
        var contentLength: Int?
        var host: Range<Int>?
    }

    /// Checks the regular fields `fields[start...]`: each one's syntax, connection-specific fields
    /// (§8.2.2), pseudo-headers among them (§8.3), and content-length's value.
    static func checkRegularFields(
        _ bytes: UnsafeRawBufferPointer,
        _ fields: ArraySlice<HeaderList.Field>
    ) throws(HeaderValidationError) -> Semantics {
        var semantics = Semantics()
        for field in fields {
            if let first = field.name.first, bytes[first] == UInt8(ascii: ":") {
                throw .pseudoHeaderAfterRegularField
            }
            try self.checkRegular(bytes, field)
            switch KnownFieldName(bytes, field.name) {
            case .connection: throw .connectionSpecificField("connection")
            case .keepAlive: throw .connectionSpecificField("keep-alive")
            case .proxyConnection: throw .connectionSpecificField("proxy-connection")
            case .transferEncoding: throw .connectionSpecificField("transfer-encoding")
            case .upgrade: throw .connectionSpecificField("upgrade")
            case .te:
                if !equalsCaseInsensitive(bytes, field.value, "trailers") { throw .teOtherThanTrailers }
            case .contentLength:
                try self.readContentLength(bytes, field.value, into: &semantics.contentLength)
            case .host:
                if semantics.host != nil { throw .hostDiffersFromAuthority }
                semantics.host = field.value
            case .other, .proxyAuthorization, .trailer, .authorization, .expect, .via, .origin, .secFetchSite,
                .idempotencyKey:
                break
            }
        }
        return semantics
    }

    /// Reads a content-length value, a list of equal numbers at most (as the HTTP/1.1 parser allows).
    private static func readContentLength(
        _ bytes: UnsafeRawBufferPointer,
        _ value: Range<Int>,
        into contentLength: inout Int?
    ) throws(HeaderValidationError) {
        if value.isEmpty { throw .invalidContentLength }
        do {
            try forEachListElement(bytes, value) { (element) throws(HTTPParseError) in
                let length = try parseContentLength(bytes, element)
                if let existing = contentLength, existing != length { throw .conflictingContentLength }
                contentLength = length
            }
        } catch {
            throw .invalidContentLength
        }
    }

    /// The number of pseudo-header fields at the front of the list.
    static func pseudoHeaderCount(_ bytes: UnsafeRawBufferPointer, _ fields: [HeaderList.Field]) -> Int {
        fields.prefix { field in field.name.first.map { bytes[$0] == UInt8(ascii: ":") } ?? false }.count
    }
}
