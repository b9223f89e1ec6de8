import Testing

@testable import BearerCore

@Suite struct ByteBufferTests {
    @Test func writesAndReadsBackBytes() {
        var buffer = ByteBuffer()
        buffer.writeStaticString("GET ")
        buffer.writeString("/v1/items")
        buffer.writeByte(0x20)
        buffer.writeBytes(Array("HTTP/1.1".utf8))
        #expect(String(decoding: buffer.readableBytesArray, as: UTF8.self) == "GET /v1/items HTTP/1.1")
        #expect(buffer.readBytes(4) == Array("GET ".utf8))
        #expect(buffer.readableBytes == 18)
    }

    @Test(arguments: [
        (0, "0"), (7, "7"), (10, "10"), (1234567890, "1234567890"), (Int.max, String(Int.max)),
    ])
    func writesDecimal(value: Int, expected: String) {
        var buffer = ByteBuffer()
        buffer.writeDecimal(value)
        #expect(String(decoding: buffer.readableBytesArray, as: UTF8.self) == expected)
    }

    @Test func movingTheWriterIndexBackForgetsWhatWasWrittenAfterIt() {
        var buffer = ByteBuffer()
        buffer.writeStaticString("keep|drop")
        buffer.moveReaderIndex(forwardBy: 2)
        buffer.moveWriterIndex(to: 4)
        #expect(buffer.readableBytesArray == Array("ep".utf8))
        buffer.writeStaticString("!")
        #expect(buffer.readableBytesArray == Array("ep!".utf8))
    }

    @Test(arguments: [(0, "0"), (10, "a"), (255, "ff"), (4096, "1000"), (Int.max, "7fffffffffffffff")])
    func writesHexadecimal(value: Int, expected: String) {
        var buffer = ByteBuffer()
        buffer.writeHexadecimal(value)
        #expect(String(decoding: buffer.readableBytesArray, as: UTF8.self) == expected)
    }

    @Test func compactsBeforeGrowing() {
        var buffer = ByteBuffer(capacity: 16)
        buffer.writeBytes(Array(repeating: 1, count: 12))
        buffer.moveReaderIndex(forwardBy: 10)
        buffer.reserveWritable(10)
        #expect(buffer.capacity == 16)
        #expect(buffer.readerIndex == 0)
        #expect(buffer.readableBytesArray == [1, 1])
    }

    @Test func resetsIndicesWhenFullyRead() {
        var buffer = ByteBuffer()
        buffer.writeString("abc")
        buffer.moveReaderIndex(forwardBy: 3)
        #expect(buffer.readerIndex == 0 && buffer.writerIndex == 0)
    }

    @Test func copiesOnWrite() {
        var original = ByteBuffer()
        original.writeString("shared")
        var copy = original
        copy.writeString("+more")
        copy.moveReaderIndex(forwardBy: 1)
        original.discardReadBytes()
        #expect(String(decoding: original.readableBytesArray, as: UTF8.self) == "shared")
        #expect(String(decoding: copy.readableBytesArray, as: UTF8.self) == "hared+more")
        var third = copy
        third.discardReadBytes()
        #expect(String(decoding: copy.readableBytesArray, as: UTF8.self) == "hared+more")
        #expect(third == copy)
    }

    @Test func holdsNoStorageUntilWritten() {
        var buffer = ByteBuffer()
        #expect(buffer.capacity == 0)
        buffer.withUnsafeReadableBytes { #expect($0.isEmpty) }
        buffer.writeByte(7)
        #expect(buffer.capacity >= 1 && buffer.readableBytesArray == [7])
    }

    @Test func fillsWritableTailThroughClosure() {
        var buffer = ByteBuffer()
        let written = buffer.writeWithUnsafeMutableBytes(minimumWritable: 100) { tail in
            #expect(tail.count >= 100)
            tail[0] = 42
            tail[1] = 43
            return 2
        }
        #expect(written == 2)
        #expect(buffer.readableBytesArray == [42, 43])
    }
}

@Suite struct SecretTests {
    @Test func neverPrintsItsValue() {
        let secret = Secret("tok-very-secret")
        #expect("\(secret)" == "<redacted>")
        #expect(String(describing: secret) == "<redacted>")
        #expect(String(reflecting: secret) == "<redacted>")
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!dumped.contains("tok-very-secret"))
        #expect(secret.reveal() == "tok-very-secret")
    }
}

@Suite struct LoggerTests {
    @Test func formatsLogfmtLinesAndFiltersByLevel() {
        let sink = LogSink(capturing: ())
        let logger = Logger(level: .info, sink: sink)
        logger.debug("hidden")
        logger.info("listening on 127.0.0.1:8080", ["workers": "2", "note": "two words"])
        let lines = sink.capturedLines
        #expect(lines.count == 1)
        #expect(lines[0].hasSuffix(" info listening on 127.0.0.1:8080 workers=2 note=\"two words\"\n"))
    }

    /// SIGHUP's new `log_level` reaches every logger made from the proxy's, session loggers too.
    @Test func aNewLevelReachesEveryLoggerMadeFromIt() {
        let sink = LogSink(capturing: ())
        let root = Logger(level: .warn, sink: sink)
        let session = root.with("session", "github")
        session.info("before")
        root.changeLevel(to: .info)
        session.info("after")
        #expect(session.level == .info)
        #expect(sink.capturedLines.count == 1)
        #expect(sink.capturedLines.first?.hasSuffix(" info after session=github\n") == true)
    }

    @Test func formatsTimestampsInUTC() {
        #expect(formatTimestamp(0) == "1970-01-01T00:00:00.000Z")
        #expect(formatTimestamp(1_796_023_517.5) == "2026-11-30T07:25:17.500Z")
    }
}
