/// Turns the bytes of a complete request head into a `RequestHead` (RFC 9112 §3, §5).
enum RequestHeadParser {
    /// `head` is consumed: the head keeps the bytes it was parsed from (a copy was a retain, and
    /// the caller's release after, on every request).
    static func parse(_ head: consuming [UInt8], maximumFieldCount: Int) throws(HTTPParseError) -> RequestHead {
        let parsed = try head.withUnsafeBytesTypedThrows { (raw) throws(HTTPParseError) -> ParsedParts in
            try Self.parseParts(raw, maximumFieldCount: maximumFieldCount)
        }
        return RequestHead(
            bytes: head,
            method: parsed.method,
            methodRange: parsed.methodRange,
            target: parsed.target,
            targetForm: parsed.targetForm,
            version: parsed.version,
            fields: parsed.fields,
            framing: parsed.framing,
            hostField: parsed.semantics.hostField,
            hostAuthority: parsed.hostAuthority,
            connectionClose: parsed.semantics.connectionClose,
            keepAliveRequested: parsed.semantics.connectionKeepAlive,
            nominatesOtherFields: parsed.semantics.nominatesOtherFields,
            expectsContinue: parsed.semantics.expectsContinue,
            upgradesToWebSocket: parsed.semantics.connectionUpgrade && parsed.semantics.upgradeToWebSocket
                && parsed.method == .get && parsed.version == .http11,
            hasIdempotencyKey: parsed.semantics.hasIdempotencyKey
        )
    }

    private struct ParsedParts {
        var method: HTTPMethod
        var methodRange: Range<Int>
        var target: Range<Int>
        var targetForm: RequestTargetForm
        var version: HTTPVersion
        var fields: [HTTPField]
        var semantics: FieldSemantics
        var framing: RequestFraming
        var hostAuthority: Authority?
    }

    private static func parseParts(
        _ bytes: UnsafeRawBufferPointer,
        maximumFieldCount: Int
    ) throws(HTTPParseError) -> ParsedParts {
        // request-line = method SP request-target SP HTTP-version CRLF
        var index = 0
        while bytes[index].isTokenCharacter { index += 1 }
        let methodRange = 0..<index
        guard !methodRange.isEmpty, bytes[index] == ASCII.space else {
            throw bytes[index] == ASCII.nul ? .nulByte : .invalidRequestLine
        }
        index += 1
        let targetStart = index
        while bytes[index].isTargetCharacter { index += 1 }
        let target = targetStart..<index
        guard !target.isEmpty else { throw .invalidRequestLine }
        guard bytes[index] == ASCII.space else {
            throw bytes[index] == ASCII.nul ? .nulByte : bytes[index] == ASCII.cr ? .invalidRequestLine : .invalidTarget
        }
        index += 1
        let version = try parseVersion(bytes, at: index)
        index += 8
        guard bytes[index] == ASCII.cr else { throw .invalidRequestLine }
        guard bytes[index + 1] == ASCII.lf else { throw .bareCarriageReturn }
        index += 2

        var fields: [HTTPField] = []
        fields.reserveCapacity(16)
        try parseFieldLines(bytes, from: index, maximumCount: maximumFieldCount, into: &fields)
        let semantics = try FieldSemantics(bytes, fields)

        let method = HTTPMethod(bytes, methodRange)
        let targetForm = try parseTargetForm(bytes, target, method: method)

        var hostAuthority: Authority?
        if let hostField = semantics.hostField {
            let value = fields[hostField].value
            if !value.isEmpty {
                guard let authority = Authority.parse(bytes, value) else { throw .invalidHost }
                hostAuthority = authority
            }
        } else if version == .http11 {
            throw .missingHost
        }

        let framing: RequestFraming
        switch semantics.transferEncoding {
        case .absent:
            if let length = semantics.contentLength {
                framing = .contentLength(length)
            } else {
                framing = .none
            }
        case .chunked:
            if version == .http10 { throw .transferEncodingInHTTP10 }
            framing = .chunked
        case .unsupported(let finalIsChunked):
            if version == .http10 { throw .transferEncodingInHTTP10 }
            // RFC 9112 §6.3: a request whose final coding is not chunked cannot be framed at all.
            throw finalIsChunked ? .unsupportedTransferCoding : .invalidTransferEncoding
        }
        if semantics.hasUnknownExpectation { throw .unsupportedExpectation }

        return ParsedParts(
            method: method,
            methodRange: methodRange,
            target: target,
            targetForm: targetForm,
            version: version,
            fields: fields,
            semantics: semantics,
            framing: framing,
            hostAuthority: hostAuthority
        )
    }

    private static func parseTargetForm(
        _ bytes: UnsafeRawBufferPointer,
        _ target: Range<Int>,
        method: HTTPMethod
    ) throws(HTTPParseError) -> RequestTargetForm {
        let first = bytes[target.lowerBound]
        if method == .connect {
            guard let authority = Authority.parse(bytes, target), authority.port != nil else { throw .invalidTarget }
            return .authority(authority)
        }
        if first == ASCII.slash {
            if target.contains(where: { bytes[$0] == UInt8(ascii: "#") }) { throw .invalidTarget }
            return .origin
        }
        if first == UInt8(ascii: "*") && target.count == 1 {
            guard method == .options else { throw .invalidTarget }
            return .asterisk
        }
        // absolute-form: "http" / "https" "://" authority path-abempty [ "?" query ]
        let isHTTPS: Bool
        var index = target.lowerBound
        if equalsCaseInsensitive(bytes, index..<min(index + 7, target.upperBound), "http://") {
            isHTTPS = false
            index += 7
        } else if equalsCaseInsensitive(bytes, index..<min(index + 8, target.upperBound), "https://") {
            isHTTPS = true
            index += 8
        } else {
            throw .invalidTarget
        }
        let authorityStart = index
        while index < target.upperBound && bytes[index] != ASCII.slash && bytes[index] != UInt8(ascii: "?") {
            index += 1
        }
        let authority = authorityStart..<index
        guard let parsedAuthority = Authority.parse(bytes, authority) else { throw .invalidTarget }
        let pathAndQuery = index..<target.upperBound
        if pathAndQuery.contains(where: { bytes[$0] == UInt8(ascii: "#") }) { throw .invalidTarget }
        return .absolute(
            AbsoluteTarget(
                isHTTPS: isHTTPS,
                authority: authority,
                parsedAuthority: parsedAuthority,
                pathAndQuery: pathAndQuery
            )
        )
    }
}

/// Parses `HTTP/1.0` or `HTTP/1.1` (8 bytes) at `index`.
func parseVersion(_ bytes: UnsafeRawBufferPointer, at index: Int) throws(HTTPParseError) -> HTTPVersion {
    guard index + 8 <= bytes.count else { throw .invalidRequestLine }
    let prefix: StaticString = "HTTP/"
    for offset in 0..<5 where bytes[index + offset] != prefix.utf8Start[offset] {
        throw .invalidRequestLine
    }
    let major = bytes[index + 5]
    let dot = bytes[index + 6]
    let minor = bytes[index + 7]
    guard major.isDigit, dot == UInt8(ascii: "."), minor.isDigit else { throw .invalidRequestLine }
    switch (major, minor) {
    case (UInt8(ascii: "1"), UInt8(ascii: "1")): return .http11
    case (UInt8(ascii: "1"), UInt8(ascii: "0")): return .http10
    default: throw .unsupportedVersion
    }
}
