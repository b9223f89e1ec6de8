import BearerCore
import Testing

@testable import BearerHTTP2

/// The frame parser and serializer (RFC 9113 §4, §6): exact wire bytes, every frame type, any split.
@Suite struct FrameParserTests {
    static let block = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d")

    /// One of each frame the serializer writes, DATA with its bytes; header blocks longer than the
    /// 16-byte frames used here go out with CONTINUATION frames.
    static let sent: [(HTTP2Frame, [UInt8]?)] = [
        (.settings([HTTP2Setting(.maxConcurrentStreams, 100), HTTP2Setting(.initialWindowSize, 1 << 20)]), nil),
        (.settingsAck, nil),
        (.headers(HTTP2HeadersFrame(streamID: 1, endStream: false, block: block)), nil),
        (.priority(streamID: 3, HTTP2Priority(exclusive: true, dependency: 1, weight: 15)), nil),
        (.windowUpdate(streamID: 0, increment: 1_000), nil),
        (.ping(ack: false, opaqueData: 0x0102_0304_0506_0708), nil),
        (.data(streamID: 1, endStream: true, flowControlledLength: 5), bytes("hello")),
        (
            .headers(
                HTTP2HeadersFrame(
                    streamID: 5,
                    endStream: true,
                    priority: HTTP2Priority(exclusive: false, dependency: 3, weight: 200),
                    block: [UInt8](repeating: 0x82, count: 40)
                )
            ), nil
        ),
        (.rstStream(streamID: 5, code: .cancel), nil),
        (.goAway(lastStreamID: 5, code: .enhanceYourCalm, debugData: bytes("calm")), nil),
    ]

    static let conversation: [UInt8] = sent.flatMap { frame, data in
        if case .data(let streamID, let endStream, _) = frame {
            return serializedData(streamID: streamID, endStream: endStream, data ?? [])
        }
        return serialized([frame], maxFrameSize: 16)
    }

    static let conversationFrames = sent.map { ParsedFrame(kind: .frame($0.0), data: $0.1) }

    @Test func parsesWhatTheSerializerWrote() throws {
        #expect(try parseFrames(Self.conversation) == Self.conversationFrames)
    }

    /// The same bytes split in two at every position, and fed a byte at a time, give the same frames.
    @Test func parsesTheSameAtEverySplitPosition() throws {
        let input = HTTP2.clientPreface + Self.conversation
        var whole = HTTP2FrameParser(role: .server, maxHeaderBlockBytes: 16_384)
        let expected = try parseFrames([input], parser: &whole)
        #expect(expected == [ParsedFrame(kind: .preface)] + Self.conversationFrames)
        for split in 1..<input.count {
            var parser = HTTP2FrameParser(role: .server, maxHeaderBlockBytes: 16_384)
            let frames = try parseFrames([Array(input[..<split]), Array(input[split...])], parser: &parser)
            #expect(frames == expected, "split at \(split)")
        }
        var parser = HTTP2FrameParser(role: .server, maxHeaderBlockBytes: 16_384)
        #expect(try parseFrames(input.map { [$0] }, parser: &parser) == expected)
    }

    /// Literal wire bytes of RFC 9113 §4.1's layout: length, type, flags, stream id, payload.
    @Test func writesExactWireBytes() {
        #expect(
            serialized([.settings([HTTP2Setting(.maxConcurrentStreams, 100)])])
                == hex("000006 04 00 00000000 0003 00000064")
        )
        #expect(serialized([.settingsAck]) == hex("000000 04 01 00000000"))
        #expect(serialized([.ping(ack: true, opaqueData: 7)]) == hex("000008 06 01 00000000 0000000000000007"))
        #expect(
            serialized([.windowUpdate(streamID: 3, increment: 0x7fff_ffff)]) == hex("000004 08 00 00000003 7fffffff")
        )
        #expect(serialized([.rstStream(streamID: 1, code: .refusedStream)]) == hex("000004 03 00 00000001 00000007"))
        #expect(
            serialized([.goAway(lastStreamID: 7, code: .noError, debugData: [])])
                == hex("000008 07 00 00000000 00000007 00000000")
        )
        #expect(serializedData(streamID: 1, endStream: true, bytes("hi")) == hex("000002 00 01 00000001 6869"))
    }

    /// A block larger than the peer's frame size: HEADERS, then CONTINUATION frames, END_HEADERS on the last.
    @Test func splitsALargeHeaderBlockIntoContinuationFrames() throws {
        let block = Array(0..<40).map(UInt8.init)
        let wire = serialized(
            [.headers(HTTP2HeadersFrame(streamID: 1, endStream: true, block: block))],
            maxFrameSize: 16
        )
        #expect(Array(wire[0..<9]) == hex("000010 01 01 00000001"))
        #expect(Array(wire[25..<34]) == hex("000010 09 00 00000001"))
        #expect(Array(wire[50..<59]) == hex("000008 09 04 00000001"))
        #expect(wire.count == 3 * 9 + 40)
        #expect(
            try parseFrames(wire) == [
                ParsedFrame(kind: .frame(.headers(HTTP2HeadersFrame(streamID: 1, endStream: true, block: block))))
            ]
        )
    }

    /// Padding is removed from DATA and HEADERS; flow control still counts it (§6.1).
    @Test func paddingIsRemovedButCountedForFlowControl() throws {
        let data = rawFrame(type: 0, flags: 0x09, streamID: 1, [3] + bytes("abc") + [0, 0, 0])
        #expect(
            try parseFrames(data) == [
                ParsedFrame(
                    kind: .frame(.data(streamID: 1, endStream: true, flowControlledLength: 7)),
                    data: bytes("abc")
                )
            ]
        )
        let headers = rawFrame(type: 1, flags: 0x2c, streamID: 3, [2] + hex("80000001 10") + [0x82] + [0, 0])
        #expect(
            try parseFrames(headers) == [
                ParsedFrame(
                    kind: .frame(
                        .headers(
                            HTTP2HeadersFrame(
                                streamID: 3,
                                endStream: false,
                                priority: HTTP2Priority(exclusive: true, dependency: 1, weight: 16),
                                block: [0x82]
                            )
                        )
                    )
                )
            ]
        )
    }

    /// Frames of types RFC 9113 does not define are read past (§4.1), and unknown SETTINGS too (§6.5.2).
    @Test func unknownFrameTypesAndSettingsAreIgnored() throws {
        let input =
            rawFrame(type: 0xfa, flags: 0xff, streamID: 9, bytes("whatever"))
            + rawFrame(type: 4, streamID: 0, hex("00ff 00000001"))
        #expect(
            try parseFrames(input) == [
                ParsedFrame(kind: .frame(.settings([HTTP2Setting(HTTP2Setting.Identifier(rawValue: 0xff), 1)])))
            ]
        )
    }

    /// A frame longer than SETTINGS_MAX_FRAME_SIZE is refused from its header, before its payload is read.
    @Test func anOversizedFrameIsRefusedFromItsHeader() {
        var parser = HTTP2FrameParser(role: .client, maxHeaderBlockBytes: 16_384)
        #expect(throws: HTTP2ConnectionError.frameTooLarge(length: 16_385, limit: 16_384)) {
            try parseFrames([hex("004001 00 00 00000001")], parser: &parser)
        }
        parser = HTTP2FrameParser(role: .client, maxFrameSize: 1 << 20, maxHeaderBlockBytes: 16_384)
        #expect(throws: Never.self) { try parseFrames([hex("004001 00 00 00000001")], parser: &parser) }
    }

    /// SETTINGS_ENABLE_PUSH = 1 is a client's to send (§6.5.2): a server reads it and never pushes.
    @Test func aServerAcceptsEnablePushFromAClient() throws {
        let input = HTTP2.clientPreface + serialized([.settings([HTTP2Setting(.enablePush, 1)])])
        #expect(
            try parseFrames(input, role: .server).last
                == ParsedFrame(kind: .frame(.settings([HTTP2Setting(.enablePush, 1)])))
        )
    }

    @Test func theServerRefusesAWrongPrefaceAtItsFirstWrongByte() throws {
        var parser = HTTP2FrameParser(role: .server, maxHeaderBlockBytes: 16_384)
        #expect(throws: HTTP2ConnectionError.badPreface) {
            try parseFrames([bytes("GET / HTTP/1.1\r\n")], parser: &parser)
        }
        parser = HTTP2FrameParser(role: .server, maxHeaderBlockBytes: 16_384)
        #expect(throws: HTTP2ConnectionError.badPreface) { try parseFrames([bytes("PRI * HTTP/1.1")], parser: &parser) }
        parser = HTTP2FrameParser(role: .server, maxHeaderBlockBytes: 16_384)
        #expect(try parseFrames([bytes("PRI * HTTP/2")], parser: &parser) == [])
    }

    @Test(arguments: [
        ("DATA on stream 0", rawFrame(type: 0, streamID: 0, [1]), HTTP2ConnectionError.streamIDRequired(.data)),
        ("HEADERS on stream 0", rawFrame(type: 1, flags: 4, streamID: 0, [0x82]), .streamIDRequired(.headers)),
        ("PRIORITY on stream 0", rawFrame(type: 2, streamID: 0, [0, 0, 0, 1, 1]), .streamIDRequired(.priority)),
        ("RST_STREAM on stream 0", rawFrame(type: 3, streamID: 0, [0, 0, 0, 8]), .streamIDRequired(.rstStream)),
        ("RST_STREAM of 3 bytes", rawFrame(type: 3, streamID: 1, [0, 0, 8]), .invalidLength(.rstStream, 3)),
        ("SETTINGS on a stream", rawFrame(type: 4, streamID: 1, []), .streamIDForbidden(.settings)),
        ("SETTINGS of 5 bytes", rawFrame(type: 4, streamID: 0, [0, 3, 0, 0, 0]), .invalidLength(.settings, 5)),
        (
            "SETTINGS ack with a payload", rawFrame(type: 4, flags: 1, streamID: 0, hex("0003 00000001")),
            .invalidLength(.settings, 6)
        ),
        (
            "ENABLE_PUSH 2", rawFrame(type: 4, streamID: 0, hex("0002 00000002")),
            .invalidSetting(HTTP2Setting(.enablePush, 2))
        ),
        (
            "ENABLE_PUSH 1 from a server", rawFrame(type: 4, streamID: 0, hex("0002 00000001")),
            .invalidSetting(HTTP2Setting(.enablePush, 1))
        ),
        (
            "INITIAL_WINDOW_SIZE 2^31", rawFrame(type: 4, streamID: 0, hex("0004 80000000")),
            .invalidSetting(HTTP2Setting(.initialWindowSize, 1 << 31))
        ),
        (
            "MAX_FRAME_SIZE 16383", rawFrame(type: 4, streamID: 0, hex("0005 00003fff")),
            .invalidSetting(HTTP2Setting(.maxFrameSize, 16_383))
        ),
        (
            "MAX_FRAME_SIZE 2^24", rawFrame(type: 4, streamID: 0, hex("0005 01000000")),
            .invalidSetting(HTTP2Setting(.maxFrameSize, 1 << 24))
        ),
        ("PUSH_PROMISE", rawFrame(type: 5, flags: 4, streamID: 1, hex("00000002 82")), .pushPromise),
        ("PING of 7 bytes", rawFrame(type: 6, streamID: 0, [0, 0, 0, 0, 0, 0, 0]), .invalidLength(.ping, 7)),
        ("PING on a stream", rawFrame(type: 6, streamID: 1, [0, 0, 0, 0, 0, 0, 0, 0]), .streamIDForbidden(.ping)),
        ("GOAWAY of 7 bytes", rawFrame(type: 7, streamID: 0, [0, 0, 0, 0, 0, 0, 0]), .invalidLength(.goAway, 7)),
        ("GOAWAY on a stream", rawFrame(type: 7, streamID: 1, [0, 0, 0, 0, 0, 0, 0, 0]), .streamIDForbidden(.goAway)),
        ("WINDOW_UPDATE of 0 on the connection", rawFrame(type: 8, streamID: 0, [0, 0, 0, 0]), .zeroWindowIncrement),
        (
            "WINDOW_UPDATE of 5 bytes", rawFrame(type: 8, streamID: 0, [0, 0, 0, 0, 1]),
            .invalidLength(.windowUpdate, 5)
        ),
        (
            "DATA padding as long as the payload", rawFrame(type: 0, flags: 8, streamID: 1, [2, 0]),
            .paddingTooLong(.data)
        ),
        ("padded DATA without a pad length", rawFrame(type: 0, flags: 8, streamID: 1, []), .invalidLength(.data, 0)),
        (
            "HEADERS padding too long", rawFrame(type: 1, flags: 0x0c, streamID: 1, [5, 0x82]),
            .paddingTooLong(.headers)
        ),
        (
            "HEADERS priority cut short", rawFrame(type: 1, flags: 0x24, streamID: 1, [0, 0, 0]),
            .invalidLength(.headers, 3)
        ),
        ("CONTINUATION without HEADERS", rawFrame(type: 9, flags: 4, streamID: 1, [0x82]), .unexpectedContinuation),
        (
            "DATA inside a header block", rawFrame(type: 1, streamID: 1, [0x82]) + rawFrame(type: 0, streamID: 1, [1]),
            .continuationExpected(streamID: 1)
        ),
        (
            "unknown frame inside a header block",
            rawFrame(type: 1, streamID: 1, [0x82]) + rawFrame(type: 0xee, streamID: 1, [1]),
            .continuationExpected(streamID: 1)
        ),
        (
            "CONTINUATION of another stream",
            rawFrame(type: 1, streamID: 1, [0x82]) + rawFrame(type: 9, flags: 4, streamID: 3, [0x82]),
            .continuationExpected(streamID: 1)
        ),
    ])
    func malformedFramesEndTheConnection(_ id: String, input: [UInt8], error: HTTP2ConnectionError) {
        #expect(frameError(input) == error, "\(id)")
    }

    /// Errors confined to one stream are events: the frame is consumed and parsing goes on.
    @Test func streamErrorsAreEventsAndParsingGoesOn() throws {
        let input =
            rawFrame(type: 2, streamID: 3, [0, 0, 0, 1]) + rawFrame(type: 2, streamID: 5, [0, 0, 0, 5, 16])
            + rawFrame(type: 8, streamID: 7, [0, 0, 0, 0]) + serialized([.settingsAck])
        #expect(
            try parseFrames(input) == [
                ParsedFrame(kind: .streamError(HTTP2StreamError(streamID: 3, .priorityLength(4)))),
                ParsedFrame(kind: .streamError(HTTP2StreamError(streamID: 5, .dependsOnItself))),
                ParsedFrame(kind: .streamError(HTTP2StreamError(streamID: 7, .zeroWindowIncrement))),
                ParsedFrame(kind: .frame(.settingsAck)),
            ]
        )
        #expect(HTTP2StreamError(streamID: 3, .priorityLength(4)).code == .frameSizeError)
        #expect(HTTP2StreamError(streamID: 7, .zeroWindowIncrement).code == .protocolError)
    }

    /// The header block bound counts frames on the wire: a block too large, or a flood of empty
    /// CONTINUATION frames (CVE-2024-27316), ends the connection at the bound, not later.
    @Test func headerBlocksAreBoundedOnTheWire() {
        let big = rawFrame(type: 1, flags: 4, streamID: 1, [UInt8](repeating: 0x82, count: 1_000))
        #expect(frameError(big, maxHeaderBlockBytes: 1_008) == .headerBlockTooLarge(limit: 1_008))
        #expect(frameError(big, maxHeaderBlockBytes: 1_009) == nil)
        var flood = rawFrame(type: 1, streamID: 1, [0x82])
        for _ in 0..<1_000 { flood += rawFrame(type: 9, streamID: 1, []) }
        #expect(frameError(flood, maxHeaderBlockBytes: 4_096) == .headerBlockTooLarge(limit: 4_096))
        #expect(HTTP2ConnectionError.headerBlockTooLarge(limit: 4_096).code == .enhanceYourCalm)
    }

    @Test func errorCodesAndMessagesReadAsTheRFCNamesThem() {
        #expect(HTTP2ErrorCode.enhanceYourCalm.description == "ENHANCE_YOUR_CALM")
        #expect(HTTP2ErrorCode(rawValue: 0x1f).description == "0x1f")
        #expect(HTTP2ConnectionError.frameTooLarge(length: 20_000, limit: 16_384).code == .frameSizeError)
        #expect(
            HTTP2ConnectionError.frameTooLarge(length: 20_000, limit: 16_384).message
                == "20000-byte frame exceeds SETTINGS_MAX_FRAME_SIZE 16384"
        )
        #expect(
            HTTP2ConnectionError.invalidSetting(HTTP2Setting(.initialWindowSize, 1 << 31)).code == .flowControlError
        )
        #expect(HTTP2ConnectionError.compression(.indexZero).code == .compressionError)
    }
}
