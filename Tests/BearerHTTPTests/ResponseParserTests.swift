import Testing

@testable import BearerHTTP

@Suite struct ResponseParserTests {
    @Test(arguments: Feeding.allCases)
    func parsesContentLengthResponse(feeding: Feeding) throws {
        let messages = try parseResponses(bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello"), feeding)
        #expect(messages.count == 1)
        #expect(messages[0].head.status == 200)
        #expect(messages[0].head.string(messages[0].head.reason) == "OK")
        #expect(messages[0].body == bytes("hello"))
        #expect(messages[0].isComplete)
        #expect(messages[0].head.allowsReuse)
    }

    @Test(arguments: Feeding.allCases)
    func parsesChunkedResponse(feeding: Feeding) throws {
        let messages = try parseResponses(
            bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"),
            feeding
        )
        #expect(messages[0].body == bytes("hi"))
        #expect(messages[0].isComplete)
    }

    /// A chunked body's trailer field lines are kept as they came, for a client that takes them;
    /// the next response starts without them.
    @Test(arguments: Feeding.allCases)
    func keepsAChunkedBodysTrailers(feeding: Feeding) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        let input = bytes(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\ngrpc-status: 0\r\nX-B:  c \r\n\r\n"
        )
        let messages = try feed(pieces(of: input, feeding)) { (raw) throws(HTTPParseError) in
            switch try parser.next(raw) {
            case .head(let head, let consumed): (.head(head), consumed)
            case .body(let range): (.body(Array(raw[range])), range.upperBound)
            case .end(let consumed): (.end, consumed)
            case .needMore(let consumed): (.needMore, consumed)
            }
        }
        #expect(messages.map(\.isComplete) == [true])
        #expect(parser.trailers == bytes("grpc-status: 0\r\nX-B:  c \r\n"))
        parser.expectResponse(to: .get)
        #expect(parser.trailers.isEmpty)
    }

    @Test func headResponseHasNoBodyButKeepsContentLength() throws {
        let messages = try parseResponses(bytes("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"), method: .head)
        #expect(messages[0].isComplete)
        #expect(messages[0].body.isEmpty)
        #expect(messages[0].head.contentLength == 1234)
    }

    @Test(arguments: [204, 304])
    func noContentStatusesHaveNoBody(status: Int) throws {
        let messages = try parseResponses(
            bytes("HTTP/1.1 \(status) X\r\nContent-Length: 10\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        )
        #expect(messages.count == 2)
        #expect(messages[0].body.isEmpty && messages[0].isComplete)
    }

    @Test(arguments: Feeding.allCases)
    func reportsInformationalThenFinal(feeding: Feeding) throws {
        let messages = try parseResponses(
            bytes(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
            ),
            feeding
        )
        #expect(messages.map(\.head.status) == [100, 103, 201])
        #expect(messages[2].body == bytes("ok"))
    }

    @Test func closeDelimitedBodyEndsAtEndOfInput() throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        let input = bytes("HTTP/1.1 200 OK\r\n\r\nstream")
        try input.withUnsafeBytes { raw in
            guard case .head(let head, let consumed) = try parser.next(raw) else {
                Issue.record("expected head")
                return
            }
            #expect(head.framing(requestMethod: .get) == .untilClose)
            guard case .body(let range) = try parser.next(UnsafeRawBufferPointer(rebasing: raw[consumed...])) else {
                Issue.record("expected body")
                return
            }
            #expect(range.count == 6)
        }
        #expect(parser.canEndAtEndOfInput)
    }

    @Test func aSuccessfulConnectResponseHasNoBody() throws {
        let messages = try parseResponses(bytes("HTTP/1.1 200 Connection established\r\n\r\n"), method: .connect)
        #expect(messages.count == 1 && messages[0].isComplete)
        let refused = try parseResponses(bytes("HTTP/1.1 405 No\r\nContent-Length: 2\r\n\r\nno"), method: .connect)
        #expect(refused[0].body == bytes("no"))
    }

    @Test func acceptsStatusLineWithoutReason() throws {
        let messages = try parseResponses(bytes("HTTP/1.1 204\r\n\r\n"))
        #expect(messages[0].head.status == 204)
    }

    @Test func http10ResponseIsNotReusableWithoutKeepAlive() throws {
        let messages = try parseResponses(bytes("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"))
        #expect(!messages[0].head.allowsReuse)
    }

    @Test(arguments: [
        (
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            HTTPParseError.contentLengthWithTransferEncoding
        ),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", .conflictingContentLength),
        ("HTTP/1.1 2000 OK\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1 099 Low\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferCoding),
        ("ICY 200 OK\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", .whitespaceBeforeColon),
    ])
    func rejectsBadResponses(input: String, expected: HTTPParseError) {
        let error = parseError { () throws(HTTPParseError) in _ = try parseResponses(bytes(input)) }
        #expect(error == expected)
    }

    @Test func rejectsInvalidChunkingFromUpstream() {
        let error = parseError { () throws(HTTPParseError) in
            _ = try parseResponses(bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n"))
        }
        #expect(error == .invalidChunkSize)
    }
}
