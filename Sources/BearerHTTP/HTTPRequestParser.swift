/// An incremental HTTP/1.1 request parser: bytes in as they arrive, events out.
///
/// The caller keeps the unconsumed bytes and passes them again with whatever arrived since; the parser
/// reports how many it consumed. Heads are copied once into their own storage; body data is returned
/// as ranges of the caller's bytes, never copied.
package struct HTTPRequestParser: Sendable {
    package typealias Event = HTTPParserEvent<RequestHead>

    private var state: ParserState = .head
    private var scanner: HeadScanner
    private let maximumFieldCount: Int

    package init(maximumHeadBytes: Int = 64 * 1024, maximumFieldCount: Int = 256) {
        self.scanner = HeadScanner(limit: maximumHeadBytes)
        self.maximumFieldCount = maximumFieldCount
    }

    /// How many bytes a caller must let buffer, while a head is incomplete, for the parser to answer:
    /// past this many the head has ended or is too large.
    package var headVerdictBytes: Int { self.scanner.verdictBytes }

    package mutating func next(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Event {
        switch self.state {
        case .head:
            guard let range = try self.scanner.scan(bytes) else { return .needMore(consumed: 0) }
            let head = try RequestHeadParser.parse(
                Array(UnsafeRawBufferPointer(rebasing: bytes[range])),
                maximumFieldCount: self.maximumFieldCount
            )
            switch head.framing {
            case .none: self.state = .body(.empty)
            case .contentLength(let length): self.state = .body(.contentLength(length))
            case .chunked: self.state = .body(.chunked)
            }
            return .head(head, consumed: range.upperBound)
        case .body:
            return try self.state.nextBodyEvent(bytes)
        }
    }
}

/// What a parser reports: a head, body data (a range of the caller's bytes), the end of a message, or
/// that it consumed what it could and needs more. Public (its heads are package types) for the
/// inlinable `IncrementalParserEvent` conformance.
public enum HTTPParserEvent<Head: Sendable>: Sendable {
    case needMore(consumed: Int)
    case head(Head, consumed: Int)
    /// Body data at this range of the input; everything before its upper bound is consumed.
    case body(Range<Int>)
    case end(consumed: Int)
}

/// Where a parser is in a message: in a head, or in a body (the same for requests and responses).
enum ParserState: Sendable {
    case head
    case body(BodyDecoder)

    /// The next body event; back to expecting a head once the body ends.
    mutating func nextBodyEvent<Head>(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> HTTPParserEvent<Head> {
        var ignored: [UInt8] = []
        return try self.nextBodyEvent(bytes, trailers: &ignored)
    }

    /// The same, appending a chunked body's trailer field lines to `trailers` as they come.
    mutating func nextBodyEvent<Head>(
        _ bytes: UnsafeRawBufferPointer,
        trailers: inout [UInt8]
    ) throws(HTTPParseError) -> HTTPParserEvent<Head> {
        guard case .body(var decoder) = self else { preconditionFailure("Invalid state: not in a body") }
        switch try decoder.decode(bytes, trailers: &trailers) {
        case .data(let range):
            self = .body(decoder)
            return .body(range)
        case .needMore(let consumed):
            self = .body(decoder)
            return .needMore(consumed: consumed)
        case .end(let consumed):
            self = .head
            return .end(consumed: consumed)
        }
    }
}
