/// An incremental HTTP/1.1 response parser, the twin of `HTTPRequestParser`.
///
/// A response's framing depends on the request it answers (a HEAD response has no body), so the
/// caller says which method it sent before each response. Informational (1xx) heads are reported
/// and followed by the final response's head.
package struct HTTPResponseParser: Sendable {
    package typealias Event = HTTPParserEvent<ResponseHead>

    private var state: ParserState = .head
    private var scanner: HeadScanner
    private let maximumFieldCount: Int
    private var requestMethod: HTTPMethod = .get
    /// The trailer field lines of the chunked body being read (`name: value\r\n` each; empty: none),
    /// whole once it ended, until the next response is expected.
    package private(set) var trailers: [UInt8] = []

    package init(maximumHeadBytes: Int = 64 * 1024, maximumFieldCount: Int = 256) {
        self.scanner = HeadScanner(limit: maximumHeadBytes)
        self.maximumFieldCount = maximumFieldCount
    }

    /// Sets the method of the request whose response comes next.
    package mutating func expectResponse(to method: HTTPMethod) {
        self.requestMethod = method
        // Only when there were any: storing the empty array over the empty array still releases it.
        if !self.trailers.isEmpty { self.trailers = [] }
        self.state = .head
        self.scanner.reset()
    }

    /// The head came parsed, not as bytes (an HTTP/2 stream takes its exchange's head as it is): what
    /// follows is the body, delimited as `framing` says.
    package mutating func expectBody(framed framing: ResponseFraming) {
        if !self.trailers.isEmpty { self.trailers = [] }
        self.startBody(framing)
    }

    private mutating func startBody(_ framing: ResponseFraming) {
        switch framing {
        case .none: self.state = .body(.empty)
        case .contentLength(let length): self.state = .body(.contentLength(length))
        case .chunked: self.state = .body(.chunked)
        case .untilClose: self.state = .body(.untilClose)
        }
    }

    /// Whether the peer closing the connection now ends the response properly (a close-delimited body).
    package var canEndAtEndOfInput: Bool {
        if case .body(let decoder) = self.state { return decoder.endsAtEndOfInput }
        return false
    }

    package mutating func next(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Event {
        switch self.state {
        case .head:
            guard let range = try self.scanner.scan(bytes) else { return .needMore(consumed: 0) }
            let head = try ResponseHeadParser.parse(
                Array(UnsafeRawBufferPointer(rebasing: bytes[range])),
                maximumFieldCount: self.maximumFieldCount
            )
            if !head.isInformational { self.startBody(head.framing(requestMethod: self.requestMethod)) }
            return .head(head, consumed: range.upperBound)
        case .body:
            return try self.state.nextBodyEvent(bytes, trailers: &self.trailers)
        }
    }
}
