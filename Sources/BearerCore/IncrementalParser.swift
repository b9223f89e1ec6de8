/// A parser fed the unread bytes of a buffer, that says in each event how many of them it used: the
/// HTTP request and response parsers, the RESP parser.
///
/// The caller keeps the bytes the parser did not use and passes them again with whatever arrived
/// since (`ByteBuffer.parseNext`).
public protocol IncrementalParser {
    associatedtype Event
    associatedtype Failure: Error

    /// The next event over `bytes`, the caller's unread bytes from the first one.
    mutating func next(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> Event

    /// How many bytes, from the front of the input, `event` is done with.
    static func consumedBytes(of event: Event) -> Int

    /// The bytes of the input `event` hands over without copying (body data), if any.
    static func payload(of event: Event) -> Range<Int>?
}

extension ByteBuffer {
    /// Parses the next event out of the readable bytes, then drops the bytes it used; an event's
    /// payload (body data) goes to `payload` first, while those bytes are still here.
    ///
    /// The one "parse what the stream holds" step every reader of a peer shares (the client
    /// connection's two sides, the drainer, the endpoint client, the admin and login listeners, Redis,
    /// the mocks, the bench): each calls it on `StreamConnection.inbound` (or its own buffer) and
    /// dispatches on the event it returns. The bytes are consumed before the caller acts on the event,
    /// so an action that closes the stream (and clears the buffer) never meets a half-read one. A body
    /// event's range is of the bytes as they were: its `count` is the payload's size.
    ///
    /// Inlinable, and so specialized for each parser where it is called: on the client connection's
    /// data path it costs what the hand-written sequence cost.
    @inlinable @inline(__always)
    public mutating func parseNext<Parser: IncrementalParser>(
        with parser: inout Parser,
        payload: (UnsafeRawBufferPointer) -> Void = { _ in }
    ) throws(Parser.Failure) -> Parser.Event {
        let event = try self.withUnsafeReadableBytes { bytes throws(Parser.Failure) -> Parser.Event in
            let event = try parser.next(bytes)
            if let range = Parser.payload(of: event) { payload(UnsafeRawBufferPointer(rebasing: bytes[range])) }
            return event
        }
        self.moveReaderIndex(forwardBy: Parser.consumedBytes(of: event))
        return event
    }
}
