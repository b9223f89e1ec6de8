/// A frame as the parser hands it over and the serializer writes it (RFC 9113 §6).
///
/// HEADERS arrives with its CONTINUATION frames already joined: `headers` carries the whole header
/// block. DATA carries no bytes here: the parser's event hands them over as a range of its input
/// (`HTTP2FrameParserEvent.payload`), uncopied, and the serializer takes them apart.
package enum HTTP2Frame: Equatable, Sendable {
    /// `flowControlledLength` is the whole frame payload, padding included: what flow control
    /// counts (§6.1, §6.9).
    case data(streamID: UInt32, endStream: Bool, flowControlledLength: Int)
    case headers(HTTP2HeadersFrame)
    /// Parsed and otherwise ignored: RFC 9113 deprecates the priority scheme (§5.3.2).
    case priority(streamID: UInt32, HTTP2Priority)
    case rstStream(streamID: UInt32, code: HTTP2ErrorCode)
    case settings([HTTP2Setting])
    case settingsAck
    case ping(ack: Bool, opaqueData: UInt64)
    case goAway(lastStreamID: UInt32, code: HTTP2ErrorCode, debugData: [UInt8])
    case windowUpdate(streamID: UInt32, increment: Int)
}

package struct HTTP2HeadersFrame: Equatable, Sendable {
    package var streamID: UInt32
    package var endStream: Bool
    package var priority: HTTP2Priority?
    /// The header block: every fragment of the HEADERS and CONTINUATION frames, padding removed.
    package var block: [UInt8]

    package init(streamID: UInt32, endStream: Bool, priority: HTTP2Priority? = nil, block: [UInt8]) {
        self.streamID = streamID
        self.endStream = endStream
        self.priority = priority
        self.block = block
    }

    /// A stream that depends on itself is a stream error (§5.3.1); the block must still be decoded
    /// first, to keep the HPACK tables in step.
    package var dependsOnItself: Bool { self.priority?.dependency == self.streamID }
}

/// The priority fields of HEADERS and PRIORITY (RFC 9113 §6.2, §6.3; RFC 7540 §5.3).
package struct HTTP2Priority: Equatable, Sendable {
    package var exclusive: Bool
    package var dependency: UInt32
    /// The weight as sent (0–255, meaning 1–256).
    package var weight: UInt8

    package init(exclusive: Bool, dependency: UInt32, weight: UInt8) {
        self.exclusive = exclusive
        self.dependency = dependency
        self.weight = weight
    }
}
