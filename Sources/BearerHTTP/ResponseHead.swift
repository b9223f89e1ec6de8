/// A parsed response head: the received bytes and where each part lies in them. A class for the
/// same reason as `RequestHead`. Immutable.
package final class ResponseHead: ParsedHead, Sendable {
    package let bytes: [UInt8]
    package let version: HTTPVersion
    package let status: Int
    /// The status line's reason phrase (possibly empty).
    package let reason: Range<Int>
    package let fields: [HTTPField]
    package let contentLength: Int?
    package let isChunked: Bool
    package let connectionClose: Bool
    package let keepAliveRequested: Bool
    package let nominatesOtherFields: Bool

    package init(
        bytes: [UInt8],
        version: HTTPVersion,
        status: Int,
        reason: Range<Int>,
        fields: [HTTPField],
        contentLength: Int?,
        isChunked: Bool,
        connectionClose: Bool,
        keepAliveRequested: Bool,
        nominatesOtherFields: Bool
    ) {
        self.bytes = bytes
        self.version = version
        self.status = status
        self.reason = reason
        self.fields = fields
        self.contentLength = contentLength
        self.isChunked = isChunked
        self.connectionClose = connectionClose
        self.keepAliveRequested = keepAliveRequested
        self.nominatesOtherFields = nominatesOtherFields
    }

    /// Whether the upstream lets the connection be reused after this response.
    package var allowsReuse: Bool {
        switch self.version {
        case .http11: !self.connectionClose
        case .http10: self.keepAliveRequested && !self.connectionClose
        }
    }

    package var isInformational: Bool { self.status >= 100 && self.status < 200 }

    /// How this response's body is delimited, given the method of the request it answers
    /// (RFC 9112 §6.3: HEAD responses, 1xx, 204 and 304 responses, and 2xx answers to CONNECT never
    /// have a body).
    package func framing(requestMethod: HTTPMethod) -> ResponseFraming {
        if requestMethod == .head || self.isInformational || self.status == 204 || self.status == 304 {
            return .none
        }
        if requestMethod == .connect && (200..<300).contains(self.status) { return .none }
        if self.isChunked { return .chunked }
        if let length = self.contentLength { return .contentLength(length) }
        return .untilClose
    }
}

package enum ResponseFraming: Equatable, Sendable {
    case none
    case contentLength(Int)
    case chunked
    case untilClose
}

enum ResponseHeadParser {
    /// `head` is consumed, as by the request parser: the head keeps the bytes it was parsed from.
    static func parse(_ head: consuming [UInt8], maximumFieldCount: Int) throws(HTTPParseError) -> ResponseHead {
        let parts = try head.withUnsafeBytesTypedThrows { (bytes) throws(HTTPParseError) -> ParsedParts in
            // status-line = HTTP-version SP status-code SP [ reason-phrase ] CRLF
            let version: HTTPVersion
            do throws(HTTPParseError) {
                version = try parseVersion(bytes, at: 0)
            } catch {
                throw error == .unsupportedVersion ? .unsupportedVersion : .invalidStatusLine
            }
            var index = 8
            guard bytes[index] == ASCII.space,
                bytes[index + 1].isDigit, bytes[index + 2].isDigit, bytes[index + 3].isDigit
            else { throw .invalidStatusLine }
            let status =
                Int(bytes[index + 1] &- 0x30) * 100 + Int(bytes[index + 2] &- 0x30) * 10
                + Int(bytes[index + 3] &- 0x30)
            guard status >= 100 else { throw .invalidStatusLine }
            index += 4
            var reason = index..<index
            if bytes[index] == ASCII.space {
                index += 1
                let reasonStart = index
                while bytes[index].isFieldValueCharacter { index += 1 }
                reason = reasonStart..<index
            }
            guard bytes[index] == ASCII.cr else { throw bytes[index] == ASCII.nul ? .nulByte : .invalidStatusLine }
            guard bytes[index + 1] == ASCII.lf else { throw .bareCarriageReturn }
            index += 2

            var fields: [HTTPField] = []
            fields.reserveCapacity(16)
            try parseFieldLines(bytes, from: index, maximumCount: maximumFieldCount, into: &fields)
            let semantics = try FieldSemantics(bytes, fields)
            let isChunked: Bool
            switch semantics.transferEncoding {
            case .absent: isChunked = false
            case .chunked: isChunked = true
            case .unsupported: throw .unsupportedTransferCoding
            }
            if isChunked && version == .http10 { throw .transferEncodingInHTTP10 }
            return ParsedParts(
                version: version,
                status: status,
                reason: reason,
                fields: fields,
                isChunked: isChunked,
                semantics: semantics
            )
        }
        return ResponseHead(
            bytes: head,
            version: parts.version,
            status: parts.status,
            reason: parts.reason,
            fields: parts.fields,
            contentLength: parts.semantics.contentLength,
            isChunked: parts.isChunked,
            connectionClose: parts.semantics.connectionClose,
            keepAliveRequested: parts.semantics.connectionKeepAlive,
            nominatesOtherFields: parts.semantics.nominatesOtherFields
        )
    }

    /// What the bytes say, made into a head outside the closure that reads them: built inside, the
    /// head took a copy of the bytes it captured.
    private struct ParsedParts {
        var version: HTTPVersion
        var status: Int
        var reason: Range<Int>
        var fields: [HTTPField]
        var isChunked: Bool
        var semantics: FieldSemantics
    }
}

/// Heads are equal when their bytes are: everything else is parsed from them.
extension ResponseHead: Equatable {
    package static func == (lhs: ResponseHead, rhs: ResponseHead) -> Bool { lhs.bytes == rhs.bytes }
}
