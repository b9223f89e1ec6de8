/// Why a decoded header list is a malformed request or response (RFC 9113 §8.1.1, §8.2, §8.3).
///
/// Each is a stream error of type PROTOCOL_ERROR: the stream is reset and nothing of it is forwarded.
package enum HeaderValidationError: Error, Equatable, Sendable {
    case placeholder

    package var message: String {
        switch self {
        case .placeholder: "malformed"
        }
    }
}
