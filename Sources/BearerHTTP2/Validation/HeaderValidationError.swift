/// Why a decoded header list is a malformed request or response (RFC 9113 §8.1.1, §8.2, §8.3).
///
/// Each is a stream error of type PROTOCOL_ERROR: the stream is reset and nothing of it is forwarded
/// (`HTTP2StreamError.Reason.malformed`). Messages name fields only by names this module knows, never
/// with bytes from the message.
package enum HeaderValidationError: Error, Equatable, Sendable {
    case uppercaseFieldName
    case invalidFieldName
    case invalidFieldValue
    case fieldValueWhitespace
    case connectionSpecificField(String)
    case teOtherThanTrailers
    case unknownPseudoHeader
    case pseudoHeaderNotAllowed(String)
    case pseudoHeaderAfterRegularField
    case pseudoHeaderInTrailers
    case duplicatePseudoHeader(String)
    case missingPseudoHeader(String)
    case invalidMethod
    case invalidScheme
    case invalidPath
    case invalidAuthority
    case hostDiffersFromAuthority
    case invalidStatus
    case invalidContentLength
    case contentLengthMismatch(declared: Int, received: Int)
    case trailersWithoutEndStream
    case dataBeforeHeaders

    package var message: String {
        switch self {
        case .uppercaseFieldName: "upper-case letter in a field name (HTTP/2 field names are lower case)"
        case .invalidFieldName: "invalid character in a field name"
        case .invalidFieldValue: "invalid character (NUL, CR, LF or another control) in a field value"
        case .fieldValueWhitespace: "field value starts or ends with whitespace"
        case .connectionSpecificField(let name): "connection-specific field '\(name)' in an HTTP/2 message"
        case .teOtherThanTrailers: "te field with a value other than 'trailers'"
        case .unknownPseudoHeader: "unknown pseudo-header field"
        case .pseudoHeaderNotAllowed(let name): "pseudo-header field '\(name)' is not allowed here"
        case .pseudoHeaderAfterRegularField: "pseudo-header field after a regular field"
        case .pseudoHeaderInTrailers: "pseudo-header field in trailers"
        case .duplicatePseudoHeader(let name): "pseudo-header field '\(name)' appears more than once"
        case .missingPseudoHeader(let name): "missing pseudo-header field '\(name)'"
        case .invalidMethod: "malformed :method"
        case .invalidScheme: "malformed :scheme"
        case .invalidPath: "malformed :path (expected '/…', or '*' for OPTIONS)"
        case .invalidAuthority: "malformed :authority (expected host[:port], without userinfo)"
        case .hostDiffersFromAuthority: "host field differs from :authority"
        case .invalidStatus: "malformed :status (expected three digits, 100 to 599)"
        case .invalidContentLength: "malformed content-length"
        case .contentLengthMismatch(let declared, let received):
            "content-length \(declared) disagrees with the \(received) bytes of DATA"
        case .trailersWithoutEndStream: "trailers (a second HEADERS) that do not end the stream"
        case .dataBeforeHeaders: "DATA before the response's HEADERS"
        }
    }
}
