import BearerCore

/// Writes frames (RFC 9113 §4, §6) into a buffer: the inverse of `HTTP2FrameParser`.
///
/// It never pads and never sends priority information it was not given; a header block longer than
/// the peer's SETTINGS_MAX_FRAME_SIZE goes out as HEADERS plus CONTINUATION frames, back to back.
package enum HTTP2FrameSerializer {
    /// Writes any frame but DATA (whose bytes are not in the frame: `writeData`).
    package static func write(_ frame: HTTP2Frame, maxFrameSize: Int, into buffer: inout ByteBuffer) {
        switch frame {
        case .data:
            preconditionFailure("DATA is written with writeData(streamID:endStream:_:into:)")
        case .headers(let headers):
            self.writeHeaders(headers, maxFrameSize: maxFrameSize, into: &buffer)
        case .priority(let streamID, let priority):
            self.writeHeader(length: 5, type: .priority, flags: 0, streamID: streamID, into: &buffer)
            self.writePriority(priority, into: &buffer)
        case .rstStream(let streamID, let code):
            self.writeHeader(length: 4, type: .rstStream, flags: 0, streamID: streamID, into: &buffer)
            self.writeUInt32(code.rawValue, into: &buffer)
        case .settings(let settings):
            self.writeHeader(length: 6 * settings.count, type: .settings, flags: 0, streamID: 0, into: &buffer)
            for setting in settings {
                buffer.writeByte(UInt8(setting.identifier.rawValue >> 8))
                buffer.writeByte(UInt8(truncatingIfNeeded: setting.identifier.rawValue))
                self.writeUInt32(setting.value, into: &buffer)
            }
        case .settingsAck:
            self.writeHeader(length: 0, type: .settings, flags: HTTP2Flags.ack, streamID: 0, into: &buffer)
        case .ping(let ack, let data):
            self.writeHeader(length: 8, type: .ping, flags: ack ? HTTP2Flags.ack : 0, streamID: 0, into: &buffer)
            self.writeUInt32(UInt32(truncatingIfNeeded: data >> 32), into: &buffer)
            self.writeUInt32(UInt32(truncatingIfNeeded: data), into: &buffer)
        case .goAway(let lastStreamID, let code, let debugData):
            self.writeHeader(length: 8 + debugData.count, type: .goAway, flags: 0, streamID: 0, into: &buffer)
            self.writeUInt32(lastStreamID, into: &buffer)
            self.writeUInt32(code.rawValue, into: &buffer)
            buffer.writeBytes(debugData)
        case .windowUpdate(let streamID, let increment):
            self.writeHeader(length: 4, type: .windowUpdate, flags: 0, streamID: streamID, into: &buffer)
            self.writeUInt32(UInt32(increment), into: &buffer)
        }
    }

    /// Writes one DATA frame; `data` must fit the peer's SETTINGS_MAX_FRAME_SIZE.
    package static func writeData(
        streamID: UInt32,
        endStream: Bool,
        _ data: UnsafeRawBufferPointer,
        into buffer: inout ByteBuffer
    ) {
        let flags = endStream ? HTTP2Flags.endStream : 0
        self.writeHeader(length: data.count, type: .data, flags: flags, streamID: streamID, into: &buffer)
        buffer.writeBytes(data)
    }

    private static func writeHeaders(_ headers: HTTP2HeadersFrame, maxFrameSize: Int, into buffer: inout ByteBuffer) {
        let priorityLength = headers.priority == nil ? 0 : 5
        var start = min(headers.block.count, maxFrameSize - priorityLength)
        var flags: UInt8 = headers.endStream ? HTTP2Flags.endStream : 0
        if headers.priority != nil { flags |= HTTP2Flags.priority }
        if start == headers.block.count { flags |= HTTP2Flags.endHeaders }
        self.writeHeader(
            length: priorityLength + start,
            type: .headers,
            flags: flags,
            streamID: headers.streamID,
            into: &buffer
        )
        if let priority = headers.priority { self.writePriority(priority, into: &buffer) }
        buffer.writeBytes(headers.block[..<start])
        while start < headers.block.count {
            let end = min(headers.block.count, start + maxFrameSize)
            let flags = end == headers.block.count ? HTTP2Flags.endHeaders : 0
            self.writeHeader(
                length: end - start,
                type: .continuation,
                flags: flags,
                streamID: headers.streamID,
                into: &buffer
            )
            buffer.writeBytes(headers.block[start..<end])
            start = end
        }
    }

    private static func writeHeader(
        length: Int,
        type: HTTP2FrameType,
        flags: UInt8,
        streamID: UInt32,
        into buffer: inout ByteBuffer
    ) {
        buffer.writeByte(UInt8(truncatingIfNeeded: length >> 16))
        buffer.writeByte(UInt8(truncatingIfNeeded: length >> 8))
        buffer.writeByte(UInt8(truncatingIfNeeded: length))
        buffer.writeByte(type.rawValue)
        buffer.writeByte(flags)
        self.writeUInt32(streamID, into: &buffer)
    }

    private static func writePriority(_ priority: HTTP2Priority, into buffer: inout ByteBuffer) {
        self.writeUInt32(priority.dependency | (priority.exclusive ? 0x8000_0000 : 0), into: &buffer)
        buffer.writeByte(priority.weight)
    }

    private static func writeUInt32(_ value: UInt32, into buffer: inout ByteBuffer) {
        buffer.writeByte(UInt8(truncatingIfNeeded: value >> 24))
        buffer.writeByte(UInt8(truncatingIfNeeded: value >> 16))
        buffer.writeByte(UInt8(truncatingIfNeeded: value >> 8))
        buffer.writeByte(UInt8(truncatingIfNeeded: value))
    }
}
