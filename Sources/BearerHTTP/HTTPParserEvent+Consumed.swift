import BearerCore

/// What the HTTP parsers tell `ByteBuffer.parseNext`: how far each event reaches, and the body data
/// it hands over.
extension HTTPParserEvent {
    /// The bytes from the front of the input the event is done with.
    @inlinable
    package var consumedBytes: Int {
        switch self {
        case .needMore(let consumed), .head(_, let consumed), .end(let consumed): consumed
        case .body(let range): range.upperBound
        }
    }

    /// A body event's data, as a range of the input.
    @inlinable
    package var payload: Range<Int>? {
        if case .body(let range) = self { range } else { nil }
    }
}

extension HTTPRequestParser: IncrementalParser {
    @inlinable
    package static func consumedBytes(of event: Event) -> Int { event.consumedBytes }
    @inlinable
    package static func payload(of event: Event) -> Range<Int>? { event.payload }
}

extension HTTPResponseParser: IncrementalParser {
    @inlinable
    package static func consumedBytes(of event: Event) -> Int { event.consumedBytes }
    @inlinable
    package static func payload(of event: Event) -> Range<Int>? { event.payload }
}
