/// Why one stream must end (RFC 9113 §5.4.2): the peer gets RST_STREAM with `code`, and the
/// connection goes on serving its other streams.
package struct HTTP2StreamError: Error, Equatable, Sendable {
    package enum Reason: Equatable, Sendable {
        case priorityLength(Int)
        case dependsOnItself
        case zeroWindowIncrement
        case windowOverflow
        case flowControlWindowExceeded
        case refused
        case closed(HTTP2FrameType)
        case malformed(HeaderValidationError)
    }

    package var streamID: UInt32
    package var reason: Reason

    package init(streamID: UInt32, _ reason: Reason) {
        self.streamID = streamID
        self.reason = reason
    }

    package var code: HTTP2ErrorCode {
        switch self.reason {
        case .priorityLength: .frameSizeError
        case .dependsOnItself, .zeroWindowIncrement, .malformed: .protocolError
        case .windowOverflow, .flowControlWindowExceeded: .flowControlError
        case .refused: .refusedStream
        case .closed: .streamClosed
        }
    }

    package var message: String {
        switch self.reason {
        case .priorityLength(let length): "stream \(self.streamID): PRIORITY frame of \(length) bytes (expected 5)"
        case .dependsOnItself: "stream \(self.streamID) depends on itself"
        case .zeroWindowIncrement: "stream \(self.streamID): WINDOW_UPDATE with an increment of 0"
        case .windowOverflow: "stream \(self.streamID): WINDOW_UPDATE took the window past 2^31-1"
        case .flowControlWindowExceeded: "stream \(self.streamID): DATA beyond the stream's flow-control window"
        case .refused: "stream \(self.streamID) refused: SETTINGS_MAX_CONCURRENT_STREAMS reached"
        case .closed(let type): "stream \(self.streamID): \(type) frame after the stream was closed"
        case .malformed(let error): "stream \(self.streamID): \(error.message)"
        }
    }
}
