/// Finds the data of a message body in bytes that arrive in pieces: fixed length, chunked, or until close.
///
/// It never copies: it returns ranges of the caller's bytes that are body data, and consumes framing
/// bytes (chunk sizes, extensions, CRLFs, trailers) itself. Chunk extensions and trailers are
/// validated and dropped, so what the proxy forwards is re-framed by itself, never passed through raw.
package struct BodyDecoder: Sendable {
    private enum State: Sendable {
        case fixed(remaining: Int)
        case untilClose
        case chunkSize(value: Int, digits: Int)
        case chunkSizeWhitespace(value: Int)
        case chunkExtension(value: Int)
        case chunkSizeLineFeed(value: Int)
        case chunkData(remaining: Int)
        case chunkDataCarriageReturn
        case chunkDataLineFeed
        case trailerLineStart
        case trailerLine
        case trailerLineFeed(isEmptyLine: Bool)
        case done
    }

    package enum Step: Equatable, Sendable {
        /// Body data at this range; everything before its upper bound is consumed.
        case data(Range<Int>)
        /// All bytes up to `consumed` were framing; the body continues in later bytes.
        case needMore(consumed: Int)
        /// The body ended after `consumed` bytes.
        case end(consumed: Int)
    }

    /// Trailers beyond this many bytes are an error rather than unbounded memory or time.
    static let maximumTrailerBytes = 16 * 1024

    // Plain values only: a decoder is copied in and out of its parser's state on every body event,
    // which costs a retain and a release per reference it holds (its trailers go to the caller's).
    private var state: State
    private var trailerBytes = 0

    package static func contentLength(_ length: Int) -> BodyDecoder {
        BodyDecoder(state: length == 0 ? .done : .fixed(remaining: length))
    }

    package static var chunked: BodyDecoder { BodyDecoder(state: .chunkSize(value: 0, digits: 0)) }
    package static var untilClose: BodyDecoder { BodyDecoder(state: .untilClose) }
    package static var empty: BodyDecoder { BodyDecoder(state: .done) }

    private init(state: State) {
        self.state = state
    }

    package var isComplete: Bool {
        if case .done = self.state { return true }
        return false
    }

    /// Whether the end of the input (the peer closed) is a valid end of this body.
    package var endsAtEndOfInput: Bool {
        switch self.state {
        case .untilClose, .done: true
        default: false
        }
    }

    /// The next step in `bytes`. A chunked body's trailer field lines are appended to `trailers` as
    /// they came (`name: value\r\n` each, bounded by `maximumTrailerBytes`): what a proxy passes on
    /// to a client that can take trailers.
    package mutating func decode(
        _ bytes: UnsafeRawBufferPointer,
        trailers: inout [UInt8]
    ) throws(HTTPParseError) -> Step {
        let count = bytes.count
        var index = 0
        while true {
            switch self.state {
            case .done:
                return .end(consumed: index)
            case .fixed(let remaining):
                guard index < count else { return .needMore(consumed: index) }
                let length = min(remaining, count - index)
                self.state = remaining == length ? .done : .fixed(remaining: remaining - length)
                return .data(index..<(index + length))
            case .untilClose:
                guard index < count else { return .needMore(consumed: index) }
                return .data(index..<count)
            case .chunkData(let remaining):
                guard index < count else { return .needMore(consumed: index) }
                let length = min(remaining, count - index)
                self.state = remaining == length ? .chunkDataCarriageReturn : .chunkData(remaining: remaining - length)
                return .data(index..<(index + length))
            default:
                guard index < count else { return .needMore(consumed: index) }
                try self.consumeFramingByte(bytes[index], trailers: &trailers)
                index += 1
            }
        }
    }

    private mutating func consumeFramingByte(_ byte: UInt8, trailers: inout [UInt8]) throws(HTTPParseError) {
        switch self.state {
        case .chunkSize(let value, let digits):
            if let digit = byte.hexDigitValue {
                guard digits < 15 else { throw .chunkSizeTooLarge }
                self.state = .chunkSize(value: value << 4 | digit, digits: digits + 1)
                return
            }
            guard digits > 0 else { throw .invalidChunkSize }
            switch byte {
            case ASCII.cr: self.state = .chunkSizeLineFeed(value: value)
            case ASCII.semicolon: self.state = .chunkExtension(value: value)
            case ASCII.space, ASCII.tab: self.state = .chunkSizeWhitespace(value: value)
            default: throw .invalidChunkSize
            }
        case .chunkSizeWhitespace(let value):
            switch byte {
            case ASCII.semicolon: self.state = .chunkExtension(value: value)
            case ASCII.space, ASCII.tab: break
            default: throw .invalidChunkSize
            }
        case .chunkExtension(let value):
            if byte == ASCII.cr {
                self.state = .chunkSizeLineFeed(value: value)
            } else if !byte.isFieldValueCharacter {
                throw .invalidChunkFraming
            }
        case .chunkSizeLineFeed(let value):
            guard byte == ASCII.lf else { throw .invalidChunkFraming }
            self.state = value == 0 ? .trailerLineStart : .chunkData(remaining: value)
        case .chunkDataCarriageReturn:
            guard byte == ASCII.cr else { throw .invalidChunkFraming }
            self.state = .chunkDataLineFeed
        case .chunkDataLineFeed:
            guard byte == ASCII.lf else { throw .invalidChunkFraming }
            self.state = .chunkSize(value: 0, digits: 0)
        case .trailerLineStart:
            try self.countTrailerByte()
            if byte == ASCII.cr {
                self.state = .trailerLineFeed(isEmptyLine: true)
            } else if byte.isTokenCharacter {
                trailers.append(byte)
                self.state = .trailerLine
            } else {
                throw .invalidChunkFraming
            }
        case .trailerLine:
            try self.countTrailerByte()
            if byte == ASCII.cr {
                self.state = .trailerLineFeed(isEmptyLine: false)
            } else if !byte.isFieldValueCharacter {
                throw .invalidChunkFraming
            }
            trailers.append(byte)
        case .trailerLineFeed(let isEmptyLine):
            guard byte == ASCII.lf else { throw .invalidChunkFraming }
            if !isEmptyLine { trailers.append(byte) }
            self.state = isEmptyLine ? .done : .trailerLineStart
        case .fixed, .untilClose, .chunkData, .done:
            preconditionFailure("Invalid state: \(self.state) does not consume framing bytes")
        }
    }

    private mutating func countTrailerByte() throws(HTTPParseError) {
        self.trailerBytes += 1
        if self.trailerBytes > Self.maximumTrailerBytes { throw .trailersTooLarge }
    }
}
