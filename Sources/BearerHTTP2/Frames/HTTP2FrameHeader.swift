/// The 9-byte header every frame starts with (RFC 9113 §4.1).
struct HTTP2FrameHeader {
    var length: Int
    /// nil: a type RFC 9113 does not define, to be ignored (§4.1).
    var type: HTTP2FrameType?
    var flags: UInt8
    /// The reserved bit is ignored on receipt (§4.1).
    var streamID: UInt32

    init(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        self.length = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
        self.type = HTTP2FrameType(rawValue: bytes[offset + 3])
        self.flags = bytes[offset + 4]
        self.streamID =
            (UInt32(bytes[offset + 5]) << 24 | UInt32(bytes[offset + 6]) << 16 | UInt32(bytes[offset + 7]) << 8
                | UInt32(bytes[offset + 8])) & 0x7fff_ffff
    }

    func has(_ flag: UInt8) -> Bool { self.flags & flag != 0 }

    /// Frames of a stream need a stream id; frames of the connection must have none (§6).
    func checkStreamID() throws(HTTP2ConnectionError) {
        guard let type = self.type else { return }
        switch type {
        case .data, .headers, .priority, .rstStream, .pushPromise, .continuation:
            if self.streamID == 0 { throw .streamIDRequired(type) }
        case .settings, .ping, .goAway:
            if self.streamID != 0 { throw .streamIDForbidden(type) }
        case .windowUpdate:
            break
        }
    }
}

/// Reads the fields of one frame's payload.
struct HTTP2PayloadReader {
    var bytes: UnsafeRawBufferPointer
    var payload: Range<Int>
    var header: HTTP2FrameHeader

    /// The big-endian 32-bit number at `offset` into the payload.
    func uint32(at offset: Int) -> UInt32 {
        let start = self.payload.lowerBound + offset
        return UInt32(self.bytes[start]) << 24 | UInt32(self.bytes[start + 1]) << 16
            | UInt32(self.bytes[start + 2]) << 8 | UInt32(self.bytes[start + 3])
    }

    /// The payload without its Pad Length byte and padding, for DATA and HEADERS (§6.1, §6.2).
    func unpadded() throws(HTTP2ConnectionError) -> Range<Int> {
        guard self.header.has(HTTP2Flags.padded) else { return self.payload }
        let type = self.header.type ?? .data
        guard !self.payload.isEmpty else { throw .invalidLength(type, 0) }
        let padding = Int(self.bytes[self.payload.lowerBound])
        guard padding < self.payload.count else { throw .paddingTooLong(type) }
        return self.payload.lowerBound + 1..<self.payload.upperBound - padding
    }

    /// The five priority bytes at absolute `start`.
    func priority(at start: Int) -> HTTP2Priority {
        let word = self.uint32(at: start - self.payload.lowerBound)
        return HTTP2Priority(
            exclusive: word & 0x8000_0000 != 0,
            dependency: word & 0x7fff_ffff,
            weight: self.bytes[start + 4]
        )
    }

    /// A SETTINGS frame's parameters, each checked (§6.5).
    func settings(fromServer: Bool) throws(HTTP2ConnectionError) -> HTTP2Frame {
        if self.header.has(HTTP2Flags.ack) {
            guard self.payload.isEmpty else { throw .invalidLength(.settings, self.payload.count) }
            return .settingsAck
        }
        guard self.payload.count % 6 == 0 else { throw .invalidLength(.settings, self.payload.count) }
        var settings: [HTTP2Setting] = []
        var offset = 0
        while offset < self.payload.count {
            let start = self.payload.lowerBound + offset
            let identifier = UInt16(self.bytes[start]) << 8 | UInt16(self.bytes[start + 1])
            let setting = HTTP2Setting(HTTP2Setting.Identifier(rawValue: identifier), self.uint32(at: offset + 2))
            try setting.validate(fromServer: fromServer)
            settings.append(setting)
            offset += 6
        }
        return .settings(settings)
    }
}
