import BearerCore

/// What a parser made of a stream of bytes, in a form two readings can be compared in: the items it
/// produced (body data joined, however the reads cut it) and the error that ended it.
struct Transcript<Failure: Error & Equatable>: Equatable {
    enum Item: Equatable {
        case head([UInt8])
        case data([UInt8])
        case end
        /// A value that is neither (a RESP reply, a frame), rendered.
        case value(String)
    }

    var items: [Item] = []
    var error: Failure?

    mutating func append(_ item: Item) {
        if case .data(let more) = item, case .data(let bytes)? = self.items.last {
            self.items[self.items.count - 1] = .data(bytes + more)
        } else {
            self.items.append(item)
        }
    }
}

/// Feeds `pieces` to a parser the way a connection does (each piece appended to the bytes not yet
/// used, `ByteBuffer.parseNext` until the parser needs more) and records each event with `record`,
/// which says whether it was a real event (false: the parser needs more bytes). No bound on the
/// events: a parser that keeps answering without using a byte is a hang libFuzzer reports.
func transcript<Event: IncrementalParserEvent, Failure: Error & Equatable>(
    of pieces: [[UInt8]],
    next: (UnsafeRawBufferPointer) throws(Failure) -> Event,
    record: (Event, [UInt8]?, inout Transcript<Failure>) -> Bool
) -> Transcript<Failure> {
    var buffer = ByteBuffer()
    var transcript = Transcript<Failure>()
    for piece in pieces {
        buffer.writeBytes(piece)
        while true {
            var payload: [UInt8]?
            let event: Event
            do throws(Failure) {
                event = try buffer.parseNext(payload: { payload = Array($0) }, by: next)
            } catch {
                transcript.error = error
                return transcript
            }
            guard record(event, payload, &transcript) else { break }
        }
    }
    return transcript
}
