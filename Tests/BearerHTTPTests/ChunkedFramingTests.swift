import BearerCore
import Testing

@testable import BearerHTTP

/// The chunked coding the proxy writes: exact wire bytes, and the parsers reading back what was written.
@Suite struct ChunkedFramingTests {
    static func written(_ write: (inout ByteBuffer) -> Void) -> String {
        var buffer = ByteBuffer()
        write(&buffer)
        return String(decoding: buffer.readableBytesArray, as: UTF8.self)
    }

    @Test func aChunkIsItsHexadecimalSizeTheBytesAndTwoLineEnds() {
        let wire = Self.written { buffer in
            bytes("hello").withUnsafeBytes { buffer.writeChunk($0) }
        }
        #expect(wire == "5\r\nhello\r\n")
    }

    @Test func sizesAreLowerCaseHexadecimalWithoutLeadingZeros() {
        let data = [UInt8](repeating: 0x61, count: 0x1a2b)
        let wire = Self.written { buffer in data.withUnsafeBytes { buffer.writeChunk($0) } }
        #expect(wire.hasPrefix("1a2b\r\naaa"))
        #expect(wire.utf8.count == "1a2b\r\n".utf8.count + 0x1a2b + 2)
        #expect(wire.hasSuffix("a\r\n"))
    }

    @Test func aBufferIsWrittenAsOneChunkOfItsReadableBytes() {
        var body = ByteBuffer(string: "--abc")
        body.moveReaderIndex(forwardBy: 2)
        #expect(Self.written { $0.writeChunk(body) } == "3\r\nabc\r\n")
    }

    @Test func anEmptyPieceWritesNothingRatherThanALastChunk() {
        #expect(Self.written { buffer in [UInt8]().withUnsafeBytes { buffer.writeChunk($0) } } == "")
        #expect(Self.written { $0.writeChunk(ByteBuffer()) } == "")
    }

    @Test func theLastChunkHasAnEmptyTrailerSection() {
        #expect(Self.written { $0.writeLastChunk() } == "0\r\n\r\n")
    }

    @Test func aSizeLineThenDataWrittenInPlaceThenItsEnd() {
        let wire = Self.written { buffer in
            buffer.writeChunkSize(3)
            buffer.writeString("xyz")
            buffer.writeChunkDataEnd()
        }
        #expect(wire == "3\r\nxyz\r\n")
    }

    @Test(arguments: Feeding.allCases)
    func theRequestParserReadsBackWhatWasWritten(feeding: Feeding) throws {
        let pieces: [[UInt8]] = [bytes("a"), [], bytes("0123456789abcdef0"), [UInt8](repeating: 0, count: 300)]
        let wire = Self.written { buffer in
            buffer.writeString("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
            for piece in pieces { piece.withUnsafeBytes { buffer.writeChunk($0) } }
            buffer.writeLastChunk()
            buffer.writeString("GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        }
        let messages = try parseRequests(bytes(wire), feeding)
        #expect(messages.count == 2)
        #expect(messages[0].body == pieces.flatMap { $0 })
        #expect(messages[0].isComplete)
        #expect(messages[1].isComplete)
    }

    @Test(arguments: Feeding.allCases)
    func theResponseParserReadsBackWhatWasWritten(feeding: Feeding) throws {
        let wire = Self.written { buffer in
            buffer.writeString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            bytes("first").withUnsafeBytes { buffer.writeChunk($0) }
            buffer.writeChunk(ByteBuffer(string: "second"))
            buffer.writeLastChunk()
        }
        let messages = try parseResponses(bytes(wire), feeding)
        #expect(messages.count == 1)
        #expect(messages[0].body == bytes("firstsecond"))
        #expect(messages[0].isComplete)
    }
}
