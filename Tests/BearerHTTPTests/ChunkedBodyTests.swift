import Testing

@testable import BearerHTTP

@Suite struct ChunkedBodyTests {
    static func chunkedRequest(_ body: String) -> [UInt8] {
        bytes("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
    }

    @Test(arguments: Feeding.allCases)
    func decodesChunksDroppingExtensionsAndTrailers(feeding: Feeding) throws {
        let messages = try parseRequests(
            Self.chunkedRequest(
                "3;name=\"v\"\r\nabc\r\nA \t;x\r\n0123456789\r\n0\r\nTrailer-A: 1\r\nTrailer-B: 2\r\n\r\n"
            ),
            feeding
        )
        #expect(messages[0].body == bytes("abc0123456789"))
        #expect(messages[0].isComplete)
    }

    @Test(arguments: Feeding.allCases)
    func decodesUpperCaseHexSizes(feeding: Feeding) throws {
        let data = String(repeating: "z", count: 0x1F)
        let messages = try parseRequests(Self.chunkedRequest("1F\r\n\(data)\r\n0\r\n\r\n"), feeding)
        #expect(messages[0].body.count == 0x1F)
    }

    struct BadChunk: CustomTestStringConvertible, Sendable {
        let id: String
        let body: String
        let error: HTTPParseError
        var testDescription: String { self.id }
    }

    static let badChunks: [BadChunk] = [
        BadChunk(id: "size overflow", body: "10000000000000000\r\n", error: .chunkSizeTooLarge),
        BadChunk(id: "no size digits", body: "\r\n", error: .invalidChunkSize),
        BadChunk(id: "non-hex size", body: "zz\r\n", error: .invalidChunkSize),
        BadChunk(id: "negative size", body: "-1\r\n", error: .invalidChunkSize),
        BadChunk(id: "bare LF after size", body: "3\nabc\r\n0\r\n\r\n", error: .invalidChunkSize),
        BadChunk(id: "missing CRLF after data", body: "3\r\nabcX\r\n0\r\n\r\n", error: .invalidChunkFraming),
        BadChunk(id: "whitespace then junk", body: "3 x\r\nabc\r\n0\r\n\r\n", error: .invalidChunkSize),
        BadChunk(id: "NUL in extension", body: "3;a\u{0}\r\nabc\r\n0\r\n\r\n", error: .invalidChunkFraming),
        BadChunk(id: "obs-fold trailer", body: "0\r\n folded\r\n\r\n", error: .invalidChunkFraming),
    ]

    @Test(arguments: badChunks)
    func rejectsBadChunking(_ bad: BadChunk) {
        let error = parseError { () throws(HTTPParseError) in _ = try parseRequests(Self.chunkedRequest(bad.body)) }
        #expect(error == bad.error)
    }

    @Test func limitsTrailers() {
        let trailers = String(repeating: "X-T: " + String(repeating: "a", count: 100) + "\r\n", count: 200)
        let error = parseError { () throws(HTTPParseError) in
            _ = try parseRequests(Self.chunkedRequest("0\r\n" + trailers + "\r\n"))
        }
        #expect(error == .trailersTooLarge)
    }
}
