/// Why the connection must end (RFC 9113 §5.4.1): the peer gets GOAWAY with `code`.
///
/// Thrown by the frame parser and the connection machine; each case says in one line what the peer
/// did, never with header bytes in it.
package enum HTTP2ConnectionError: Error, Equatable, Sendable {
    case badPreface
    case frameTooLarge(length: Int, limit: Int)
    case streamIDRequired(HTTP2FrameType)
    case streamIDForbidden(HTTP2FrameType)
    case invalidLength(HTTP2FrameType, Int)
    case paddingTooLong(HTTP2FrameType)
    case invalidSetting(HTTP2Setting)
    case zeroWindowIncrement
    case pushPromise
    case continuationExpected(streamID: UInt32)
    case unexpectedContinuation
    case headerBlockTooLarge(limit: Int)
    case compression(HPACKError)
    /// The state machine's refusals (RFC 9113 §5.1, §6.9, §10.5).
    case firstFrameNotSettings
    case streamIDNotIncreasing(UInt32)
    case evenStreamIDFromClient(UInt32)
    case frameOnIdleStream(HTTP2FrameType, UInt32)
    case flowControlWindowExceeded
    case windowOverflow
    case rapidReset
    case settingsFlood
    case pingFlood

    package var code: HTTP2ErrorCode {
        switch self {
        case .frameTooLarge, .invalidLength: .frameSizeError
        case .invalidSetting(let setting): setting.identifier == .initialWindowSize ? .flowControlError : .protocolError
        case .compression(.headerListTooLarge), .headerBlockTooLarge, .rapidReset, .settingsFlood, .pingFlood:
            .enhanceYourCalm
        case .compression: .compressionError
        case .flowControlWindowExceeded, .windowOverflow: .flowControlError
        case .badPreface, .streamIDRequired, .streamIDForbidden, .paddingTooLong, .zeroWindowIncrement, .pushPromise,
            .continuationExpected, .unexpectedContinuation, .firstFrameNotSettings, .streamIDNotIncreasing,
            .evenStreamIDFromClient, .frameOnIdleStream:
            .protocolError
        }
    }

    package var message: String {
        switch self {
        case .badPreface: "the connection did not start with the HTTP/2 client preface"
        case .frameTooLarge(let length, let limit): "\(length)-byte frame exceeds SETTINGS_MAX_FRAME_SIZE \(limit)"
        case .streamIDRequired(let type): "\(type) frame on stream 0"
        case .streamIDForbidden(let type): "\(type) frame on a stream (it belongs to stream 0)"
        case .invalidLength(let type, let length): "\(type) frame with an invalid length \(length)"
        case .paddingTooLong(let type): "\(type) frame's padding is as long as its payload or longer"
        case .invalidSetting(let setting):
            "SETTINGS parameter \(setting.identifier.rawValue) has an invalid value \(setting.value)"
        case .zeroWindowIncrement: "WINDOW_UPDATE with an increment of 0 on the connection"
        case .pushPromise: "PUSH_PROMISE received, but push is disabled (SETTINGS_ENABLE_PUSH = 0)"
        case .continuationExpected(let stream): "another frame inside stream \(stream)'s header block"
        case .unexpectedContinuation: "CONTINUATION frame that continues no header block"
        case .headerBlockTooLarge(let limit): "header block larger than \(limit) bytes (max_header_bytes)"
        case .compression(let error): error.message
        case .firstFrameNotSettings: "the first frame after the preface is not SETTINGS"
        case .streamIDNotIncreasing(let stream): "HEADERS on stream \(stream), not above every stream opened before"
        case .evenStreamIDFromClient(let stream): "client opened stream \(stream), an even (server) number"
        case .frameOnIdleStream(let type, let stream): "\(type) frame on stream \(stream), which is idle"
        case .flowControlWindowExceeded: "DATA beyond the connection's flow-control window"
        case .windowOverflow: "WINDOW_UPDATE took the connection's window past 2^31-1"
        case .rapidReset: "streams opened and reset faster than allowed (rapid reset)"
        case .settingsFlood: "too many SETTINGS frames awaiting acknowledgement"
        case .pingFlood: "too many PING frames"
        }
    }
}
