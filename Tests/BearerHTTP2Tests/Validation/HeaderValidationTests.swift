import Testing

@testable import BearerHTTP2

/// RFC 9113 §8.1.1, §8.2, §8.3: what a request or response header list must be to be forwarded.
@Suite struct HeaderValidationTests {
    static let get: [(String, String)] = [
        (":method", "GET"), (":scheme", "https"), (":authority", "api.example.com"), (":path", "/v1/items?page=2"),
        ("accept", "*/*"),
    ]

    static func requestError(_ fields: [(String, String)]) -> HeaderValidationError? {
        do {
            _ = try HTTP2RequestHead(validating: HeaderList(fields))
            return nil
        } catch {
            return error
        }
    }

    @Test func aValidRequestYieldsItsTarget() throws {
        let head = try HTTP2RequestHead(
            validating: HeaderList(Self.get + [("content-length", "0"), ("te", "trailers")])
        )
        #expect(head.method == .get)
        #expect(head.list.bytes[head.scheme!] == ArraySlice(bytes("https")))
        #expect(head.list.bytes[head.authority!] == ArraySlice(bytes("api.example.com")))
        #expect(head.list.bytes[head.path!] == ArraySlice(bytes("/v1/items?page=2")))
        #expect(head.firstRegularField == 4)
        #expect(head.contentLength == 0)
    }

    /// Without `:authority`, the `host` field names the target (§8.3.1); with both, they must agree.
    @Test func hostStandsInForAMissingAuthority() throws {
        let fields = [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "h.example:8080")]
        let head = try HTTP2RequestHead(validating: HeaderList(fields))
        #expect(head.list.bytes[head.authority!] == ArraySlice(bytes("h.example:8080")))
        #expect(Self.requestError(Self.get + [("host", "API.example.com")]) == nil)
        #expect(Self.requestError(Self.get + [("host", "evil.example")]) == .hostDiffersFromAuthority)
    }

    @Test func connectHasMethodAndAuthorityOnly() throws {
        let head = try HTTP2RequestHead(
            validating: HeaderList([(":method", "CONNECT"), (":authority", "db.example:5432")])
        )
        #expect(head.method == .connect)
        #expect(head.scheme == nil && head.path == nil)
        #expect(
            Self.requestError([(":method", "CONNECT"), (":authority", "h:1"), (":path", "/")])
                == .pseudoHeaderNotAllowed(":path")
        )
        #expect(
            Self.requestError([(":method", "CONNECT"), (":authority", "h:1"), (":scheme", "https")])
                == .pseudoHeaderNotAllowed(":scheme")
        )
        #expect(Self.requestError([(":method", "CONNECT")]) == .missingPseudoHeader(":authority"))
        #expect(
            Self.requestError([(":method", "CONNECT"), (":protocol", "websocket"), (":authority", "h:1")])
                == .unknownPseudoHeader
        )
    }

    @Test func optionsMayAskForTheAsterisk() {
        #expect(
            Self.requestError([(":method", "OPTIONS"), (":scheme", "https"), (":authority", "h"), (":path", "*")])
                == nil
        )
        #expect(
            Self.requestError([(":method", "GET"), (":scheme", "https"), (":authority", "h"), (":path", "*")])
                == .invalidPath
        )
    }

    static func replacing(_ name: String, with value: String) -> [(String, String)] {
        Self.get.map { $0.0 == name ? ($0.0, value) : $0 }
    }

    @Test(
        arguments: [
            ("upper-case name", Self.get + [("Accept-Language", "en")], HeaderValidationError.uppercaseFieldName),
            ("space in a name", Self.get + [("bad name", "x")], .invalidFieldName),
            ("empty name", Self.get + [("", "x")], .invalidFieldName),
            ("colon inside a regular name", Self.get + [("a:b", "x")], .invalidFieldName),
            ("NUL in a value", Self.get + [("x-a", "a\u{0}b")], .invalidFieldValue),
            ("CR in a value", Self.get + [("x-a", "a\rb")], .invalidFieldValue),
            ("LF in a value", Self.get + [("x-a", "a\nInjected: yes")], .invalidFieldValue),
            ("leading space", Self.get + [("x-a", " a")], .fieldValueWhitespace),
            ("trailing tab", Self.get + [("x-a", "a\t")], .fieldValueWhitespace),
            ("CR in :path", Self.replacing(":path", with: "/a\r\nb"), .invalidFieldValue),
            ("connection", Self.get + [("connection", "close")], .connectionSpecificField("connection")),
            ("keep-alive", Self.get + [("keep-alive", "5")], .connectionSpecificField("keep-alive")),
            ("proxy-connection", Self.get + [("proxy-connection", "x")], .connectionSpecificField("proxy-connection")),
            (
                "transfer-encoding", Self.get + [("transfer-encoding", "chunked")],
                .connectionSpecificField("transfer-encoding")
            ),
            ("upgrade", Self.get + [("upgrade", "h2c")], .connectionSpecificField("upgrade")),
            ("te: gzip", Self.get + [("te", "gzip")], .teOtherThanTrailers),
            ("pseudo after a regular field", Self.get + [(":method", "GET")], .pseudoHeaderAfterRegularField),
            ("unknown pseudo", [(":verb", "GET")] + Self.get, .unknownPseudoHeader),
            (":status in a request", [(":status", "200")] + Self.get, .pseudoHeaderNotAllowed(":status")),
            ("two :method", [(":method", "GET")] + Self.get, .duplicatePseudoHeader(":method")),
            ("two :path", [(":path", "/")] + Self.get, .duplicatePseudoHeader(":path")),
            ("no :method", Array(Self.get.dropFirst()), .missingPseudoHeader(":method")),
            ("no :scheme", Self.get.filter { $0.0 != ":scheme" }, .missingPseudoHeader(":scheme")),
            ("no :path", Self.get.filter { $0.0 != ":path" }, .missingPseudoHeader(":path")),
            ("empty :path", Self.replacing(":path", with: ""), .invalidPath),
            ("relative :path", Self.replacing(":path", with: "v1/items"), .invalidPath),
            ("space in :path", Self.replacing(":path", with: "/a b"), .invalidPath),
            ("absolute :path", Self.replacing(":path", with: "https://other.example/"), .invalidPath),
            ("bad :method", Self.replacing(":method", with: "G(T"), .invalidMethod),
            ("bad :scheme", Self.replacing(":scheme", with: "1ttp"), .invalidScheme),
            ("userinfo in :authority", Self.replacing(":authority", with: "user@api.example.com"), .invalidAuthority),
            ("empty :authority", Self.replacing(":authority", with: ""), .invalidAuthority),
            (
                "two content-lengths", Self.get + [("content-length", "1"), ("content-length", "2")],
                .invalidContentLength
            ),
            ("content-length not a number", Self.get + [("content-length", "1e3")], .invalidContentLength),
            (
                "host and no authority, malformed", Self.get.filter { $0.0 != ":authority" } + [("host", "a b")],
                .invalidAuthority
            ),
        ] as [(String, [(String, String)], HeaderValidationError)]
    )
    func malformedRequestsAreRefused(_ id: String, fields: [(String, String)], error: HeaderValidationError) {
        #expect(Self.requestError(fields) == error, "\(id)")
    }

    @Test func malformedRequestsAreStreamErrorsOfTypeProtocolError() {
        let error = HTTP2StreamError(streamID: 3, .malformed(.connectionSpecificField("connection")))
        #expect(error.code == .protocolError)
        #expect(error.message == "stream 3: connection-specific field 'connection' in an HTTP/2 message")
    }

    static func responseError(_ fields: [(String, String)]) -> HeaderValidationError? {
        do {
            _ = try HTTP2ResponseHead(validating: HeaderList(fields))
            return nil
        } catch {
            return error
        }
    }

    @Test func aValidResponseYieldsItsStatus() throws {
        let head = try HTTP2ResponseHead(validating: HeaderList([(":status", "204"), ("content-length", "0")]))
        #expect(head.status == 204)
        #expect(head.contentLength == 0)
        #expect(head.firstRegularField == 1)
    }

    @Test(
        arguments: [
            ("no :status", [("server", "x")], HeaderValidationError.missingPseudoHeader(":status")),
            ("two :status", [(":status", "200"), (":status", "200")], .duplicatePseudoHeader(":status")),
            ("four digits", [(":status", "2000")], .invalidStatus),
            ("not digits", [(":status", "2x0")], .invalidStatus),
            ("below 100", [(":status", "099")], .invalidStatus),
            (":path in a response", [(":status", "200"), (":path", "/")], .pseudoHeaderNotAllowed(":path")),
            ("pseudo after regular", [("server", "x"), (":status", "200")], .pseudoHeaderAfterRegularField),
            (
                "transfer-encoding", [(":status", "200"), ("transfer-encoding", "chunked")],
                .connectionSpecificField("transfer-encoding")
            ),
            ("upper-case name", [(":status", "200"), ("Server", "x")], .uppercaseFieldName),
        ] as [(String, [(String, String)], HeaderValidationError)]
    )
    func malformedResponsesAreRefused(_ id: String, fields: [(String, String)], error: HeaderValidationError) {
        #expect(Self.responseError(fields) == error, "\(id)")
    }

    @Test func trailersHaveNoPseudoHeaders() throws {
        try validateTrailers(HeaderList([("grpc-status", "0"), ("grpc-message", "ok")]))
        #expect(throws: HeaderValidationError.pseudoHeaderInTrailers) {
            try validateTrailers(HeaderList([(":status", "200"), ("grpc-status", "0")]))
        }
        #expect(throws: HeaderValidationError.connectionSpecificField("connection")) {
            try validateTrailers(HeaderList([("connection", "close")]))
        }
    }

    /// DATA beyond the declared length fails at once; short of it, at END_STREAM.
    @Test func contentLengthIsCheckedAgainstData() throws {
        var check = ContentLengthCheck(declared: 10)
        try check.dataReceived(4)
        try check.dataReceived(6)
        try check.streamEnded()
        #expect(throws: HeaderValidationError.contentLengthMismatch(declared: 10, received: 11)) {
            try check.dataReceived(1)
        }

        let short = ContentLengthCheck(declared: 10)
        #expect(throws: HeaderValidationError.contentLengthMismatch(declared: 10, received: 0)) {
            try short.streamEnded()
        }

        var undeclared = ContentLengthCheck(declared: nil)
        try undeclared.dataReceived(1_000)
        try undeclared.streamEnded()
    }

    /// A request decoded from the wire goes through the same check: the HPACK layer does not judge.
    @Test func aDecodedBlockIsValidatedAfterDecoding() throws {
        var encoder = HPACKEncoder()
        var block: [UInt8] = []
        encoder.encode(HeaderList(Self.get + [("connection", "keep-alive")]), into: &block)
        var decoder = HPACKDecoder(maxHeaderListSize: 16_384)
        let list = try decoder.decode(block)
        #expect(throws: HeaderValidationError.connectionSpecificField("connection")) {
            try HTTP2RequestHead(validating: list)
        }
    }
}
