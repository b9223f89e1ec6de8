import Testing

@testable import BearerHTTP

@Suite struct RequestParserTests {
    static let simpleGet = "GET /v1/items?page=2 HTTP/1.1\r\nHost: api.example.com\r\nAccept: */*\r\n\r\n"

    @Test(arguments: Feeding.allCases)
    func parsesSimpleGet(feeding: Feeding) throws {
        let messages = try parseRequests(bytes(Self.simpleGet), feeding)
        #expect(messages.count == 1)
        let head = messages[0].head
        #expect(head.method == .get)
        #expect(head.string(head.target) == "/v1/items?page=2")
        #expect(head.targetForm == .origin)
        #expect(head.version == .http11)
        #expect(head.fields.count == 2)
        #expect(head.value(of: "accept") == "*/*")
        #expect(head.hostAuthority.map { head.string($0.host) } == "api.example.com")
        #expect(head.framing == .none)
        #expect(head.wantsKeepAlive)
        #expect(messages[0].isComplete)
    }

    @Test func parsesTheSameAtEverySplitPosition() throws {
        let input = bytes(
            "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
                + "GET /next HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
        )
        let whole = try parseRequests(input)
        #expect(whole.count == 2)
        #expect(whole[0].body == bytes("hello world"))
        #expect(whole[1].body == bytes("abc"))
        for split in 1..<input.count {
            let parts = try parseRequests(pieces: [Array(input[..<split]), Array(input[split...])])
            #expect(parts.count == 2, "split at \(split)")
            #expect(parts.map(\.body) == whole.map(\.body), "split at \(split)")
            #expect(parts.allSatisfy { $0.isComplete }, "split at \(split)")
            #expect(parts.map { $0.head.string($0.head.target) } == ["/upload", "/next"], "split at \(split)")
        }
        let byteAtATime = try parseRequests(input, .byteAtATime)
        #expect(byteAtATime.map(\.body) == whole.map(\.body))
    }

    @Test(arguments: Feeding.allCases)
    func parsesPipelinedRequestsInOrder(feeding: Feeding) throws {
        let input = bytes(
            "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\nDELETE /3 HTTP/1.1\r\nHost: h\r\n\r\n"
        )
        let messages = try parseRequests(input, feeding)
        #expect(messages.map { $0.head.string($0.head.target) } == ["/1", "/2", "/3"])
        #expect(messages.last?.head.method == .delete)
    }

    @Test func parsesAbsoluteForm() throws {
        let messages = try parseRequests(
            bytes("GET http://API.example.com:8443/v1/x?y=1 HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n")
        )
        let head = messages[0].head
        guard case .absolute(let target) = head.targetForm else {
            Issue.record("expected absolute-form, got \(head.targetForm)")
            return
        }
        #expect(!target.isHTTPS)
        #expect(head.string(target.parsedAuthority.host) == "API.example.com")
        #expect(target.parsedAuthority.port == 8443)
        #expect(head.string(target.pathAndQuery) == "/v1/x?y=1")
    }

    @Test func parsesAbsoluteFormWithoutPath() throws {
        let head = try parseRequests(bytes("GET https://h.example?q HTTP/1.1\r\nHost: h.example\r\n\r\n"))[0].head
        guard case .absolute(let target) = head.targetForm else {
            Issue.record("expected absolute-form")
            return
        }
        #expect(target.isHTTPS)
        #expect(target.parsedAuthority.port == nil)
        #expect(head.string(target.pathAndQuery) == "?q")
    }

    @Test func parsesConnectAuthorityForm() throws {
        let head = try parseRequests(
            bytes("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n")
        )[0].head
        #expect(head.method == .connect)
        guard case .authority(let authority) = head.targetForm else {
            Issue.record("expected authority-form")
            return
        }
        #expect(authority.port == 443)
    }

    @Test func parsesIPv6HostLiteral() throws {
        let head = try parseRequests(bytes("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"))[0].head
        #expect(head.hostAuthority.map { head.string($0.host) } == "[::1]")
        #expect(head.hostAuthority?.port == 8080)
    }

    @Test func skipsEmptyLinesBeforeTheRequestLine() throws {
        let messages = try parseRequests(bytes("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(messages.count == 1)
    }

    @Test func acceptsRepeatedIdenticalContentLength() throws {
        let messages = try parseRequests(
            bytes("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc")
        )
        #expect(messages[0].head.framing == .contentLength(3))
        #expect(messages[0].body == bytes("abc"))
    }

    @Test func readsConnectionOptions() throws {
        let close = try parseRequests(bytes("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"))[0].head
        #expect(!close.wantsKeepAlive)
        let http10 = try parseRequests(bytes("GET / HTTP/1.0\r\n\r\n"))[0].head
        #expect(!http10.wantsKeepAlive)
        let http10KeepAlive = try parseRequests(bytes("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"))[0].head
        #expect(http10KeepAlive.wantsKeepAlive)
        let curlStyle = try parseRequests(
            bytes("GET http://h/ HTTP/1.0\r\nHost: h\r\nProxy-Connection: keep-alive\r\n\r\n")
        )[0].head
        #expect(curlStyle.wantsKeepAlive)
        let nominated = try parseRequests(
            bytes("GET / HTTP/1.1\r\nHost: h\r\nConnection: x-secret, close\r\nX-Secret: 1\r\nX-Other: 2\r\n\r\n")
        )[0].head
        #expect(nominated.nominatesOtherFields)
        #expect(nominated.isNominatedByConnection(2))
        #expect(!nominated.isNominatedByConnection(3))
    }

    @Test func readsExpectContinue() throws {
        let head = try parseRequests(
            bytes("PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n")
        )[0].head
        #expect(head.expectsContinue)
    }

    @Test func trimsFieldValueWhitespace() throws {
        let head = try parseRequests(bytes("GET / HTTP/1.1\r\nHost:h\r\nX-A: \t padded value \t \r\n\r\n"))[0].head
        #expect(head.value(of: "x-a") == "padded value")
        #expect(head.value(of: "host") == "h")
    }

    struct BadInput: CustomTestStringConvertible, Sendable {
        let id: String
        let input: String
        let error: HTTPParseError
        var testDescription: String { self.id }
    }

    static let badInputs: [BadInput] = [
        BadInput(id: "no Host in 1.1", input: "GET / HTTP/1.1\r\n\r\n", error: .missingHost),
        BadInput(id: "two Hosts", input: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", error: .duplicateHost),
        BadInput(id: "Host list", input: "GET / HTTP/1.1\r\nHost: a, b\r\n\r\n", error: .invalidHost),
        BadInput(id: "Host with userinfo", input: "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", error: .invalidHost),
        BadInput(
            id: "CL and TE",
            input: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            error: .contentLengthWithTransferEncoding
        ),
        BadInput(
            id: "differing CL fields",
            input: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            error: .conflictingContentLength
        ),
        BadInput(
            id: "differing CL list",
            input: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\n",
            error: .conflictingContentLength
        ),
        BadInput(
            id: "signed CL",
            input: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\n",
            error: .invalidContentLength
        ),
        BadInput(
            id: "empty CL",
            input: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n",
            error: .invalidContentLength
        ),
        BadInput(
            id: "huge CL",
            input: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n",
            error: .invalidContentLength
        ),
        BadInput(
            id: "gzip, chunked",
            input: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            error: .unsupportedTransferCoding
        ),
        BadInput(
            id: "chunked not final",
            input: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
            error: .invalidTransferEncoding
        ),
        BadInput(
            id: "final gzip only",
            input: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n",
            error: .invalidTransferEncoding
        ),
        BadInput(
            id: "chunked twice",
            input: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            error: .invalidTransferEncoding
        ),
        BadInput(
            id: "TE in 1.0",
            input: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            error: .transferEncodingInHTTP10
        ),
        BadInput(
            id: "bare CR in value",
            input: "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n",
            error: .bareCarriageReturn
        ),
        BadInput(id: "bare LF", input: "GET / HTTP/1.1\nHost: h\r\n\r\n", error: .bareLineFeed),
        BadInput(id: "NUL in value", input: "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{0}b\r\n\r\n", error: .nulByte),
        BadInput(
            id: "obs-fold",
            input: "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\n\r\n",
            error: .obsoleteLineFolding
        ),
        BadInput(
            id: "space before colon",
            input: "GET / HTTP/1.1\r\nHost: h\r\nX-A : a\r\n\r\n",
            error: .whitespaceBeforeColon
        ),
        BadInput(
            id: "invalid name char",
            input: "GET / HTTP/1.1\r\nHost: h\r\nX(A): a\r\n\r\n",
            error: .invalidFieldName
        ),
        BadInput(id: "empty name", input: "GET / HTTP/1.1\r\nHost: h\r\n: a\r\n\r\n", error: .invalidFieldName),
        BadInput(id: "no colon", input: "GET / HTTP/1.1\r\nHost: h\r\nJunk\r\n\r\n", error: .invalidFieldName),
        BadInput(id: "lowercase version", input: "GET / http/1.1\r\nHost: h\r\n\r\n", error: .invalidRequestLine),
        BadInput(id: "HTTP/2.0", input: "GET / HTTP/2.0\r\nHost: h\r\n\r\n", error: .unsupportedVersion),
        BadInput(id: "double space", input: "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", error: .invalidRequestLine),
        BadInput(id: "missing version", input: "GET /\r\nHost: h\r\n\r\n", error: .invalidRequestLine),
        BadInput(id: "fragment", input: "GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", error: .invalidTarget),
        BadInput(id: "ftp scheme", input: "GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n", error: .invalidTarget),
        BadInput(
            id: "userinfo in target",
            input: "GET http://u:p@h/ HTTP/1.1\r\nHost: h\r\n\r\n",
            error: .invalidTarget
        ),
        BadInput(id: "CONNECT without port", input: "CONNECT h HTTP/1.1\r\nHost: h\r\n\r\n", error: .invalidTarget),
        BadInput(
            id: "port out of range",
            input: "GET http://h:70000/ HTTP/1.1\r\nHost: h\r\n\r\n",
            error: .invalidTarget
        ),
        BadInput(
            id: "Expect other",
            input: "GET / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n",
            error: .unsupportedExpectation
        ),
    ]

    @Test(arguments: badInputs, Feeding.allCases)
    func rejectsBadInput(_ bad: BadInput, feeding: Feeding) {
        let error = parseError { () throws(HTTPParseError) in _ = try parseRequests(bytes(bad.input), feeding) }
        #expect(error == bad.error)
    }

    /// Long values are skipped eight bytes at a time until a byte needs a closer look: a forbidden
    /// byte is found wherever it sits in a word, and allowed ones (tab, obs-text) pass.
    @Test(arguments: 0..<40)
    func judgesEveryPositionOfALongValue(_ position: Int) throws {
        func head(with byte: UInt8) -> [UInt8] {
            var value = Array(repeating: UInt8(ascii: "v"), count: 40)
            value[position] = byte
            return bytes("GET / HTTP/1.1\r\nHost: h\r\nX-Long: ") + value + bytes("\r\nX-Next: n\r\n\r\n")
        }
        for forbidden: UInt8 in [0x00, 0x01, 0x0B, 0x1F, 0x7F] {
            let error = parseError { () throws(HTTPParseError) in _ = try parseRequests(head(with: forbidden)) }
            #expect(error == (forbidden == 0 ? .nulByte : .invalidFieldValue), "byte \(forbidden) at \(position)")
        }
        for allowed: UInt8 in [0x09, 0x20, 0x7E, 0x80, 0xFF] {
            let parsed = try parseRequests(head(with: allowed))[0].head
            #expect(parsed.value(of: "x-next") == "n", "byte \(allowed) at \(position)")
        }
        let bareCR = parseError { () throws(HTTPParseError) in _ = try parseRequests(head(with: 0x0D)) }
        #expect(bareCR == .bareCarriageReturn)
    }

    @Test func mapsErrorsToStatuses() {
        #expect(HTTPParseError.headTooLarge.status == 431)
        #expect(HTTPParseError.unsupportedTransferCoding.status == 501)
        #expect(HTTPParseError.contentLengthWithTransferEncoding.status == 400)
        #expect(HTTPParseError.unsupportedVersion.status == 505)
    }

    @Test(arguments: Feeding.allCases)
    func rejectsHeadOverTheLimit(feeding: Feeding) {
        let input = "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + String(repeating: "a", count: 2000) + "\r\n\r\n"
        let error = parseError { () throws(HTTPParseError) in _ = try parseRequests(bytes(input), feeding, limit: 1024)
        }
        #expect(error == .headTooLarge)
    }

    @Test func judgesAnOversizedHeadTheSameHoweverItIsSplit() {
        // Found by the fuzzer: a bare LF past the limit was "bare LF" when the head came in one read
        // and "too large" when it came in pieces.
        let input = bytes("GET / HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 2000) + "\nHost: h\r\n\r\n")
        for feeding in Feeding.allCases {
            let error = parseError { () throws(HTTPParseError) in _ = try parseRequests(input, feeding, limit: 1024) }
            #expect(error == .headTooLarge, "\(feeding)")
        }
    }

    @Test func rejectsHeadOverTheLimitBeforeItEnds() {
        // A head that never ends must be refused once it passes the limit, not buffered forever.
        let input = "GET / HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 2000)
        let error = parseError { () throws(HTTPParseError) in _ = try parseRequests(bytes(input), limit: 1024) }
        #expect(error == .headTooLarge)
    }

    /// What a connection relies on to stop reading: `headVerdictBytes` of an unfinished head always
    /// get a verdict, with or without line ends, after the empty lines tolerated before a request line.
    @Test(arguments: [
        ("no line end", "GET /", "a"),
        ("many short lines", "GET / HTTP/1.1\r\n", "X-F: v\r\n"),
        ("empty lines first", "\r\n\r\n\r\n\r\nGET /", "a"),
    ])
    func reachesAVerdictWithinHeadVerdictBytes(shape: String, start: String, filler: String) {
        let limit = 1024
        let verdictBytes = HTTPRequestParser(maximumHeadBytes: limit).headVerdictBytes
        var text = start
        while text.utf8.count < verdictBytes { text += filler }
        let input = Array(bytes(text).prefix(verdictBytes))
        for feeding in Feeding.allCases {
            let error = parseError { () throws(HTTPParseError) in _ = try parseRequests(input, feeding, limit: limit) }
            #expect(error == .headTooLarge, "\(shape), \(feeding)")
        }
        if start.hasPrefix("\r\n") {
            // One byte fewer after the empty lines is a head of exactly the limit: no verdict yet.
            let shorter = Array(input.dropLast())
            #expect(parseError { () throws(HTTPParseError) in _ = try parseRequests(shorter, limit: limit) } == nil)
        }
    }
}
