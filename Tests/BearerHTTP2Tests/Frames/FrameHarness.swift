import BearerCore

@testable import BearerHTTP2

/// One event the frame parser produced, with a DATA frame's bytes copied out of the input.
struct ParsedFrame: Equatable {
    var kind: HTTP2FrameParserEvent.Kind
    var data: [UInt8]?
}

/// Feeds `pieces` to `parser` as a connection would, each piece appended to what is still unread,
/// and collects every event but `needMore`.
func parseFrames(_ pieces: [[UInt8]], parser: inout HTTP2FrameParser) throws(HTTP2ConnectionError) -> [ParsedFrame] {
    var buffer = ByteBuffer()
    var frames: [ParsedFrame] = []
    for piece in pieces {
        buffer.writeBytes(piece)
        while true {
            var data: [UInt8]?
            let event = try buffer.parseNext(payload: { data = Array($0) }) { (bytes) throws(HTTP2ConnectionError) in
                try parser.next(bytes)
            }
            if event.kind == .needMore { break }
            frames.append(ParsedFrame(kind: event.kind, data: data))
        }
    }
    return frames
}

func parseFrames(
    _ input: [UInt8],
    role: HTTP2FrameParser.Role = .client,
    maxHeaderBlockBytes: Int = 16_384
) throws(HTTP2ConnectionError) -> [ParsedFrame] {
    var parser = HTTP2FrameParser(role: role, maxHeaderBlockBytes: maxHeaderBlockBytes)
    return try parseFrames([input], parser: &parser)
}

/// The connection error parsing `input` ends with, if any.
func frameError(
    _ input: [UInt8],
    role: HTTP2FrameParser.Role = .client,
    maxHeaderBlockBytes: Int = 16_384
)
    -> HTTP2ConnectionError?
{
    do {
        _ = try parseFrames(input, role: role, maxHeaderBlockBytes: maxHeaderBlockBytes)
        return nil
    } catch {
        return error
    }
}

/// The wire bytes of frames written by the serializer.
func serialized(_ frames: [HTTP2Frame], maxFrameSize: Int = 16_384) -> [UInt8] {
    var buffer = ByteBuffer()
    for frame in frames { HTTP2FrameSerializer.write(frame, maxFrameSize: maxFrameSize, into: &buffer) }
    return buffer.readableBytesArray
}

func serializedData(streamID: UInt32, endStream: Bool, _ data: [UInt8]) -> [UInt8] {
    var buffer = ByteBuffer()
    data.withUnsafeBytes { HTTP2FrameSerializer.writeData(streamID: streamID, endStream: endStream, $0, into: &buffer) }
    return buffer.readableBytesArray
}

/// A frame's wire bytes from its parts, for frames the serializer would never write.
func rawFrame(type: UInt8, flags: UInt8 = 0, streamID: UInt32, _ payload: [UInt8]) -> [UInt8] {
    let length = payload.count
    return [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags]
        + [UInt8(streamID >> 24), UInt8(streamID >> 16 & 0xff), UInt8(streamID >> 8 & 0xff), UInt8(streamID & 0xff)]
        + payload
}
