import BearerCore

/// What the HTTP parsers' events tell `ByteBuffer.parseNext`: how far each reaches, and the body data
/// it hands over. Public and inlinable so that the step inlines into the client connection's data
/// path (this compiler inlines across modules only public bodies).
extension HTTPParserEvent: IncrementalParserEvent {
    @inlinable
    public var consumedBytes: Int {
        switch self {
        case .needMore(let consumed), .head(_, let consumed), .end(let consumed): consumed
        case .body(let range): range.upperBound
        }
    }

    @inlinable
    public var payload: Range<Int>? {
        if case .body(let range) = self { range } else { nil }
    }
}
