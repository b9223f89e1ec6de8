/// Why bytes from a peer are not acceptable HTTP/1.1, with the status a client is answered with.
///
/// Strictness is deliberate: a proxy that accepts a message two parsers could read differently
/// (two Content-Lengths, a bare CR, obs-fold) lets an attacker smuggle a request past it
/// (RFC 9112 §11.2). Every case closes the connection after the error response.
package enum HTTPParseError: Error, Equatable, Sendable {
    case invalidRequestLine
    case invalidStatusLine
    case unsupportedVersion
    case invalidTarget
    case bareLineFeed
    case bareCarriageReturn
    case nulByte
    case obsoleteLineFolding
    case whitespaceBeforeColon
    case invalidFieldName
    case invalidFieldValue
    case missingHost
    case duplicateHost
    case invalidHost
    case contentLengthWithTransferEncoding
    case invalidContentLength
    case conflictingContentLength
    case unsupportedTransferCoding
    case invalidTransferEncoding
    case transferEncodingInHTTP10
    case invalidChunkSize
    case chunkSizeTooLarge
    case invalidChunkFraming
    case headTooLarge
    case tooManyFields
    case trailersTooLarge
    case unsupportedExpectation

    /// The status a client gets for this error in its request.
    package var status: Int {
        switch self {
        case .headTooLarge, .tooManyFields: 431
        case .unsupportedTransferCoding: 501
        case .unsupportedVersion: 505
        case .unsupportedExpectation: 417
        default: 400
        }
    }

    /// One line a person can act on. Never contains bytes from the message.
    package var message: String {
        switch self {
        case .invalidRequestLine: "malformed request line (expected 'METHOD TARGET HTTP/1.1')"
        case .invalidStatusLine: "malformed status line"
        case .unsupportedVersion: "unsupported HTTP version (only HTTP/1.0 and HTTP/1.1 are spoken)"
        case .invalidTarget: "malformed request target"
        case .bareLineFeed: "line ended with a bare LF (expected CRLF)"
        case .bareCarriageReturn: "bare CR in the message head"
        case .nulByte: "NUL byte in the message head"
        case .obsoleteLineFolding: "obsolete line folding (a header line starting with whitespace) is not accepted"
        case .whitespaceBeforeColon: "whitespace between a header name and its colon"
        case .invalidFieldName: "invalid character in a header name"
        case .invalidFieldValue: "invalid character in a header value"
        case .missingHost: "missing Host header (required in HTTP/1.1)"
        case .duplicateHost: "more than one Host header"
        case .invalidHost: "malformed Host header"
        case .contentLengthWithTransferEncoding: "both Content-Length and Transfer-Encoding are present"
        case .invalidContentLength: "malformed Content-Length"
        case .conflictingContentLength: "conflicting Content-Length values"
        case .unsupportedTransferCoding: "unsupported transfer-coding (only chunked is implemented)"
        case .invalidTransferEncoding: "malformed Transfer-Encoding (chunked must be the final coding, once)"
        case .transferEncodingInHTTP10: "Transfer-Encoding in an HTTP/1.0 message"
        case .invalidChunkSize: "malformed chunk size"
        case .chunkSizeTooLarge: "chunk size too large"
        case .invalidChunkFraming: "malformed chunked framing"
        case .headTooLarge: "request head larger than max_header_bytes"
        case .tooManyFields: "too many header fields"
        case .trailersTooLarge: "chunked trailers too large"
        case .unsupportedExpectation: "unsupported Expect value (only 100-continue is understood)"
        }
    }
}
