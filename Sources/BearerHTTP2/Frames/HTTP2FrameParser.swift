import BearerCore

/// Reads HTTP/2 frames incrementally (RFC 9113 §4): bytes in, one event out per call.
///
/// Fed the unread bytes of a connection's buffer (`ByteBuffer.parseNext`), it consumes whole frames
/// only; a frame that has not fully arrived is `needMore`, its length already checked against
/// SETTINGS_MAX_FRAME_SIZE so that nobody waits for, or buffers, a frame larger than allowed. The
/// server role first expects the client preface.
///
/// HEADERS and its CONTINUATION frames are joined here into one header block (§4.3: nothing may
/// come between them), bounded by `maxHeaderBlockBytes` counted on the wire (frame headers, padding
/// included), so that neither a huge block nor a flood of empty CONTINUATION frames (CVE-2024-27316)
/// is buffered past the bound. PUSH_PROMISE is always refused: this side never enables push.
package struct HTTP2FrameParser: Sendable {
    package enum Role: Sendable {
        /// Reads what a client sends: the preface first.
        case server
        /// Reads what a server sends.
        case client
    }

    let role: Role
    private var expectsPreface: Bool
    /// SETTINGS_MAX_FRAME_SIZE this side advertised.
    package var maxFrameSize: Int
    package var maxHeaderBlockBytes: Int
    /// A header block whose END_HEADERS has not arrived yet.
    private var pendingBlock: PendingBlock?

    struct PendingBlock {
        var frame: HTTP2HeadersFrame
        var wireBytes: Int
    }

    package init(role: Role, maxFrameSize: Int = HTTP2.defaultMaxFrameSize, maxHeaderBlockBytes: Int) {
        self.role = role
        self.expectsPreface = role == .server
        self.maxFrameSize = maxFrameSize
        self.maxHeaderBlockBytes = maxHeaderBlockBytes
    }

    /// Parses the next event from the front of `bytes`.
    package mutating func next(_ bytes: UnsafeRawBufferPointer) throws(HTTP2ConnectionError) -> HTTP2FrameParserEvent {
        if self.expectsPreface {
            let preface = HTTP2.clientPreface
            let available = min(bytes.count, preface.count)
            guard bytes[..<available].elementsEqual(preface[..<available]) else { throw .badPreface }
            guard available == preface.count else { return HTTP2FrameParserEvent(.needMore, consumed: 0) }
            self.expectsPreface = false
            return HTTP2FrameParserEvent(.preface, consumed: preface.count)
        }
        var offset = 0
        while bytes.count - offset >= HTTP2.frameHeaderSize {
            let header = HTTP2FrameHeader(bytes, at: offset)
            if header.length > self.maxFrameSize {
                throw .frameTooLarge(length: header.length, limit: self.maxFrameSize)
            }
            let payloadStart = offset + HTTP2.frameHeaderSize
            guard bytes.count - payloadStart >= header.length else { break }
            let payload = payloadStart..<payloadStart + header.length
            offset = payload.upperBound
            if let event = try self.frame(header, bytes, payload, consumed: offset) { return event }
        }
        return HTTP2FrameParserEvent(.needMore, consumed: offset)
    }

    /// The event for one whole frame, or nil for one that yields none (an unknown type, a
    /// HEADERS or CONTINUATION that does not end its block).
    private mutating func frame(
        _ header: HTTP2FrameHeader,
        _ bytes: UnsafeRawBufferPointer,
        _ payload: Range<Int>,
        consumed: Int
    ) throws(HTTP2ConnectionError) -> HTTP2FrameParserEvent? {
        if let pending = self.pendingBlock {
            guard header.type == .continuation else {
                throw .continuationExpected(streamID: pending.frame.streamID)
            }
        }
        guard let type = header.type else { return nil }
        try header.checkStreamID()
        let reader = HTTP2PayloadReader(bytes: bytes, payload: payload, header: header)
        func event(_ frame: HTTP2Frame) -> HTTP2FrameParserEvent {
            HTTP2FrameParserEvent(.frame(frame), consumed: consumed)
        }
        switch type {
        case .data:
            let data = try reader.unpadded()
            let frame = HTTP2Frame.data(
                streamID: header.streamID,
                endStream: header.has(HTTP2Flags.endStream),
                flowControlledLength: payload.count
            )
            return HTTP2FrameParserEvent(.frame(frame), consumed: consumed, payload: data)
        case .headers:
            var fragment = try reader.unpadded()
            var priority: HTTP2Priority?
            if header.has(HTTP2Flags.priority) {
                guard fragment.count >= 5 else { throw .invalidLength(.headers, payload.count) }
                priority = reader.priority(at: fragment.lowerBound)
                fragment = fragment.lowerBound + 5..<fragment.upperBound
            }
            let frame = HTTP2HeadersFrame(
                streamID: header.streamID,
                endStream: header.has(HTTP2Flags.endStream),
                priority: priority,
                block: []
            )
            self.pendingBlock = PendingBlock(frame: frame, wireBytes: 0)
            return try self.continueBlock(header, bytes, fragment, consumed: consumed)
        case .continuation:
            guard let pending = self.pendingBlock else { throw .unexpectedContinuation }
            guard pending.frame.streamID == header.streamID else {
                throw .continuationExpected(streamID: pending.frame.streamID)
            }
            return try self.continueBlock(header, bytes, payload, consumed: consumed)
        case .priority:
            guard payload.count == 5 else {
                return HTTP2FrameParserEvent(
                    .streamError(HTTP2StreamError(streamID: header.streamID, .priorityLength(payload.count))),
                    consumed: consumed
                )
            }
            let priority = reader.priority(at: payload.lowerBound)
            if priority.dependency == header.streamID {
                return HTTP2FrameParserEvent(
                    .streamError(HTTP2StreamError(streamID: header.streamID, .dependsOnItself)),
                    consumed: consumed
                )
            }
            return event(.priority(streamID: header.streamID, priority))
        case .rstStream:
            guard payload.count == 4 else { throw .invalidLength(.rstStream, payload.count) }
            return event(.rstStream(streamID: header.streamID, code: HTTP2ErrorCode(rawValue: reader.uint32(at: 0))))
        case .settings:
            return event(try reader.settings(fromServer: self.role == .client))
        case .pushPromise:
            throw .pushPromise
        case .ping:
            guard payload.count == 8 else { throw .invalidLength(.ping, payload.count) }
            let data = UInt64(reader.uint32(at: 0)) << 32 | UInt64(reader.uint32(at: 4))
            return event(.ping(ack: header.has(HTTP2Flags.ack), opaqueData: data))
        case .goAway:
            guard payload.count >= 8 else { throw .invalidLength(.goAway, payload.count) }
            return event(
                .goAway(
                    lastStreamID: reader.uint32(at: 0) & 0x7fff_ffff,
                    code: HTTP2ErrorCode(rawValue: reader.uint32(at: 4)),
                    debugData: Array(bytes[payload.lowerBound + 8..<payload.upperBound])
                )
            )
        case .windowUpdate:
            guard payload.count == 4 else { throw .invalidLength(.windowUpdate, payload.count) }
            let increment = Int(reader.uint32(at: 0) & 0x7fff_ffff)
            if increment == 0 {
                if header.streamID == 0 { throw .zeroWindowIncrement }
                return HTTP2FrameParserEvent(
                    .streamError(HTTP2StreamError(streamID: header.streamID, .zeroWindowIncrement)),
                    consumed: consumed
                )
            }
            return event(.windowUpdate(streamID: header.streamID, increment: increment))
        }
    }

    /// Adds a HEADERS or CONTINUATION fragment to the pending block; the block is the event once
    /// END_HEADERS arrives.
    private mutating func continueBlock(
        _ header: HTTP2FrameHeader,
        _ bytes: UnsafeRawBufferPointer,
        _ fragment: Range<Int>,
        consumed: Int
    ) throws(HTTP2ConnectionError) -> HTTP2FrameParserEvent? {
        guard var pending = self.pendingBlock else { preconditionFailure("Invalid state: no pending header block") }
        pending.wireBytes += HTTP2.frameHeaderSize + header.length
        if pending.wireBytes > self.maxHeaderBlockBytes { throw .headerBlockTooLarge(limit: self.maxHeaderBlockBytes) }
        self.pendingBlock = nil  // the frame's array is uniquely referenced while it grows
        pending.frame.block.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[fragment]))
        guard header.has(HTTP2Flags.endHeaders) else {
            self.pendingBlock = pending
            return nil
        }
        return HTTP2FrameParserEvent(.frame(.headers(pending.frame)), consumed: consumed)
    }
}

/// What the frame parser made of the front of its input.
package struct HTTP2FrameParserEvent: IncrementalParserEvent, Equatable, Sendable {
    package enum Kind: Equatable, Sendable {
        /// The client preface, read whole (server role).
        case preface
        case frame(HTTP2Frame)
        /// A frame that ends its stream but not the connection (it was consumed).
        case streamError(HTTP2StreamError)
        /// No whole frame in the input; `consumedBytes` covers frames read past (unknown types,
        /// fragments of a header block).
        case needMore
    }

    package var kind: Kind
    package var consumedBytes: Int
    /// A DATA frame's data, padding removed, as a range of the input.
    package var payload: Range<Int>?

    init(_ kind: Kind, consumed: Int, payload: Range<Int>? = nil) {
        self.kind = kind
        self.consumedBytes = consumed
        self.payload = payload
    }
}
