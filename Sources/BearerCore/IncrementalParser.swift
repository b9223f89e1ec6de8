/// An event of a parser fed the unread bytes of a buffer (the HTTP request and response parsers, the
/// RESP parser): how many of them it is done with, and the body data it hands over, if any.
///
/// The caller keeps the bytes the parser did not use and passes them again with whatever arrived
/// since (`ByteBuffer.parseNext`).
public protocol IncrementalParserEvent {
    /// How many bytes, from the front of the input, the event is done with.
    var consumedBytes: Int { get }

    /// The bytes of the input the event hands over without copying (body data), if any.
    var payload: Range<Int>? { get }
}

extension ByteBuffer {
    /// Parses the next event out of the readable bytes with `next` (a parser's `next`), then drops the
    /// bytes it used; an event's payload (body data) goes to `payload` first, while those bytes are
    /// still here.
    ///
    /// The one "parse what the stream holds" step every reader of a peer shares (the client
    /// connection's two sides, the drainer, the endpoint client, the admin and login listeners, Redis,
    /// the mocks, the bench): each calls it on `StreamConnection.inbound` (or its own buffer) and
    /// dispatches on the event it returns. The bytes are consumed before the caller acts on the event,
    /// so an action that closes the stream (and clears the buffer) never meets a half-read one. A body
    /// event's range is of the bytes as they were: its `count` is the payload's size.
    ///
    /// The parser comes in as a closure and the event's reading through a public protocol, not the
    /// parser through a protocol: the parsers are package types, whose protocol witnesses this
    /// compiler does not inline across modules, and the client connection's data path measured 0.7%
    /// more instructions per request that way. As it is, the step compiles to the sequence it replaced.
    @inlinable @inline(__always)
    public mutating func parseNext<Event: IncrementalParserEvent, Failure: Error>(
        payload: (UnsafeRawBufferPointer) -> Void = { _ in },
        by next: (UnsafeRawBufferPointer) throws(Failure) -> Event
    ) throws(Failure) -> Event {
        let event = try self.withUnsafeReadableBytes { bytes throws(Failure) -> Event in
            let event = try next(bytes)
            if let range = event.payload { payload(UnsafeRawBufferPointer(rebasing: bytes[range])) }
            return event
        }
        self.moveReaderIndex(forwardBy: event.consumedBytes)
        return event
    }
}
