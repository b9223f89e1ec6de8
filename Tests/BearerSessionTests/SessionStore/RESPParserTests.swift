import Testing

@testable import BearerSession

/// Feeds `pieces` to a parser as a connection would: unconsumed bytes stay for the next read.
private func parseRESP(_ pieces: [[UInt8]], limits: RESPParser.Limits = .init()) throws(RESPParseError) -> [RESPValue] {
    var parser = RESPParser(limits: limits)
    var pending: [UInt8] = []
    var values: [RESPValue] = []
    for piece in pieces {
        pending += piece
        while true {
            let event = try step(&parser, pending)
            switch event {
            case .value(let value, let consumed):
                values.append(value)
                pending.removeFirst(consumed)
                continue
            case .needMore(let consumed):
                pending.removeFirst(consumed)
            }
            break
        }
    }
    #expect(pending.isEmpty, "bytes left over after the last value")
    return values
}

/// One `next` call over `bytes`.
private func step(_ parser: inout RESPParser, _ bytes: [UInt8]) throws(RESPParseError) -> RESPParser.Event {
    try bytes.withUnsafeBytes { raw in Result { () throws(RESPParseError) in try parser.next(raw) } }.get()
}

private func wire(_ text: String) -> [UInt8] { Array(text.utf8) }

private func bulk(_ text: String) -> RESPValue { .bulkString(Array(text.utf8)) }

@Suite struct RESPParserTests {
    struct Case: CustomStringConvertible, Sendable {
        var id: String
        var input: String
        var values: [RESPValue]
        var description: String { self.id }
    }

    static let cases: [Case] = [
        Case(id: "simple string", input: "+OK\r\n", values: [.simpleString("OK")]),
        Case(id: "empty simple string", input: "+\r\n", values: [.simpleString("")]),
        Case(
            id: "error",
            input: "-WRONGPASS invalid username-password pair\r\n",
            values: [.error("WRONGPASS invalid username-password pair")]
        ),
        Case(id: "integer", input: ":1000\r\n", values: [.integer(1000)]),
        Case(id: "negative integer", input: ":-2\r\n", values: [.integer(-2)]),
        Case(id: "largest integer", input: ":9223372036854775807\r\n", values: [.integer(.max)]),
        Case(id: "bulk string", input: "$5\r\nhello\r\n", values: [bulk("hello")]),
        Case(id: "empty bulk string", input: "$0\r\n\r\n", values: [bulk("")]),
        Case(id: "bulk string holding CRLF", input: "$4\r\na\r\nb\r\n", values: [bulk("a\r\nb")]),
        Case(id: "null bulk string", input: "$-1\r\n", values: [.bulkString(nil)]),
        Case(id: "null array", input: "*-1\r\n", values: [.array(nil)]),
        Case(id: "empty array", input: "*0\r\n", values: [.array([])]),
        Case(
            id: "HMGET reply with a missing field",
            input: "*3\r\n$3\r\nabc\r\n$-1\r\n$2\r\n42\r\n",
            values: [.array([bulk("abc"), .bulkString(nil), bulk("42")])]
        ),
        Case(
            id: "pub/sub message",
            input: "*3\r\n$7\r\nmessage\r\n$26\r\nbearer-proxy:{x}:refreshed\r\n$1\r\n7\r\n",
            values: [.array([bulk("message"), bulk("bearer-proxy:{x}:refreshed"), bulk("7")])]
        ),
        Case(
            id: "nested arrays with an empty one inside",
            input: "*3\r\n*2\r\n:1\r\n*0\r\n+x\r\n*1\r\n*1\r\n:2\r\n",
            values: [.array([.array([.integer(1), .array([])]), .simpleString("x"), .array([.array([.integer(2)])])])]
        ),
        Case(
            id: "pipelined replies",
            input: "+OK\r\n$-1\r\n:1\r\n-ERR no\r\n*2\r\n:0\r\n:7\r\n",
            values: [
                .simpleString("OK"), .bulkString(nil), .integer(1), .error("ERR no"),
                .array([.integer(0), .integer(7)]),
            ]
        ),
    ]

    @Test(arguments: cases)
    func parsesWholeInput(_ testCase: Case) throws {
        #expect(try parseRESP([wire(testCase.input)]) == testCase.values)
    }

    @Test(arguments: cases)
    func parsesInputSplitAtEveryBytePosition(_ testCase: Case) throws {
        let input = wire(testCase.input)
        for split in 1..<input.count {
            let values = try parseRESP([Array(input[..<split]), Array(input[split...])])
            #expect(values == testCase.values, "split at \(split)")
        }
    }

    @Test(arguments: cases)
    func parsesInputByteAtATime(_ testCase: Case) throws {
        #expect(try parseRESP(wire(testCase.input).map { [$0] }) == testCase.values)
    }

    @Test func finishedArrayElementsAreConsumedBeforeTheArrayEnds() throws {
        var parser = RESPParser()
        let head = wire("*3\r\n$3\r\nabc\r\n:5\r\n$4\r\nwh")
        #expect(try step(&parser, head) == .needMore(consumed: head.count - 6))
        let tooShort = wire("$4\r\nwh")
        #expect(try step(&parser, tooShort) == .needMore(consumed: 0))
        let complete = wire("$4\r\nwhat\r\n")
        #expect(
            try step(&parser, complete)
                == .value(.array([bulk("abc"), .integer(5), bulk("what")]), consumed: complete.count)
        )
    }

    struct ErrorCase: CustomStringConvertible, Sendable {
        var id: String
        var input: String
        var error: RESPParseError
        var description: String { self.id }
    }

    static var smallLimits: RESPParser.Limits {
        var limits = RESPParser.Limits()
        limits.maximumLineBytes = 24
        limits.maximumBulkBytes = 8
        limits.maximumArrayCount = 3
        limits.maximumDepth = 2
        return limits
    }

    static let errorCases: [ErrorCase] = [
        ErrorCase(id: "unknown type byte", input: "!oops\r\n", error: .unknownType(UInt8(ascii: "!"))),
        ErrorCase(id: "RESP3 map", input: "%1\r\n+a\r\n+b\r\n", error: .unknownType(UInt8(ascii: "%"))),
        ErrorCase(id: "bare LF", input: "+OK\n", error: .missingCRLF),
        ErrorCase(id: "CR without LF", input: "+O\rK\r\n", error: .missingCRLF),
        ErrorCase(id: "integer with letters", input: ":12a\r\n", error: .invalidInteger),
        ErrorCase(id: "empty integer", input: ":\r\n", error: .invalidInteger),
        ErrorCase(id: "integer overflow", input: ":9223372036854775808\r\n", error: .invalidInteger),
        ErrorCase(id: "bulk length -2", input: "$-2\r\n", error: .invalidLength),
        ErrorCase(id: "bulk length with a plus sign", input: "$+1\r\nx\r\n", error: .invalidLength),
        ErrorCase(id: "bulk without its CRLF", input: "$3\r\nabcde\r\n", error: .missingCRLF),
        ErrorCase(id: "bulk over the limit", input: "$9\r\n123456789\r\n", error: .bulkStringTooLarge),
        ErrorCase(id: "array over the limit", input: "*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n", error: .arrayTooLarge),
        ErrorCase(id: "arrays nested too deeply", input: "*1\r\n*1\r\n*1\r\n:1\r\n", error: .nestedTooDeeply),
        ErrorCase(id: "line over the limit", input: "+0123456789abcdefghijklmnopqrstuvwxyz\r\n", error: .lineTooLong),
    ]

    @Test(arguments: errorCases)
    func rejectsMalformedInputHoweverItIsSplit(_ testCase: ErrorCase) {
        let input = wire(testCase.input)
        var splits: [[[UInt8]]] = [[input], input.map { [$0] }]
        for split in 1..<input.count { splits.append([Array(input[..<split]), Array(input[split...])]) }
        for pieces in splits {
            #expect(throws: testCase.error, "pieces \(pieces.map(\.count))") {
                try parseRESP(pieces, limits: Self.smallLimits)
            }
        }
    }

    @Test func errorMessagesNeverQuoteTheStream() {
        let secret = "tok-secret-in-stream"
        #expect(throws: RESPParseError.missingCRLF) { try parseRESP([wire("$3\r\n\(secret)\r\n")]) }
        for error in Self.errorCases.map(\.error) { #expect(!error.message.contains(secret)) }
    }
}

@Suite struct RESPCommandTests {
    @Test func encodesAnArrayOfBulkStrings() {
        let command = RESPCommand("SET", "bearer-proxy:{a}:lock", "v1", "NX", "PX", "30000")
        #expect(
            command.bytes
                == wire(
                    "*6\r\n$3\r\nSET\r\n$21\r\nbearer-proxy:{a}:lock\r\n$2\r\nv1\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n"
                )
        )
    }

    @Test func encodesEmptyAndMultiByteArguments() {
        #expect(RESPCommand("ECHO", "").bytes == wire("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"))
        #expect(RESPCommand("ECHO", "é").bytes == wire("*2\r\n$4\r\nECHO\r\n$2\r\né\r\n"))
    }

    @Test func printsAsItsNameOnly() {
        let command = RESPCommand("AUTH", "alice", "s3cret-password")
        #expect("\(command)" == "AUTH")
        #expect(String(reflecting: command) == "AUTH")
        var dumped = ""
        dump(command, to: &dumped)
        #expect(!dumped.contains("s3cret"))
    }

    @Test func theEncodingParsesBackToTheSameWords() throws {
        let command = RESPCommand("HSET", "k", "access_token", "a\r\nb")
        #expect(
            try parseRESP([command.bytes]) == [.array([bulk("HSET"), bulk("k"), bulk("access_token"), bulk("a\r\nb")])]
        )
    }
}
