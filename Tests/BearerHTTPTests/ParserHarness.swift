@testable import BearerHTTP

/// What a parser made of a byte stream: each message's head, its body bytes, and whether it ended.
struct ParsedMessage<Head> {
    var head: Head
    var body: [UInt8] = []
    var isComplete = false
}

enum Feeding: CustomStringConvertible, CaseIterable {
    case allAtOnce
    case byteAtATime

    var description: String {
        switch self {
        case .allAtOnce: "all at once"
        case .byteAtATime: "byte at a time"
        }
    }
}

/// Feeds `input` in the given pieces, as a connection would, keeping unconsumed bytes between reads.
func feed<Head>(
    _ pieces: [[UInt8]],
    next: (UnsafeRawBufferPointer) throws(HTTPParseError) -> (event: HarnessEvent<Head>, consumed: Int)
) throws(HTTPParseError) -> [ParsedMessage<Head>] {
    var pending: [UInt8] = []
    var messages: [ParsedMessage<Head>] = []
    for piece in pieces {
        pending += piece
        while true {
            let outcome = try pending.withUnsafeBytesTypedThrows { (raw) throws(HTTPParseError) in try next(raw) }
            switch outcome.event {
            case .head(let head):
                messages.append(ParsedMessage(head: head))
            case .body(let bytes):
                messages[messages.count - 1].body += bytes
            case .end:
                messages[messages.count - 1].isComplete = true
            case .needMore:
                break
            }
            pending.removeFirst(outcome.consumed)
            if case .needMore = outcome.event { break }
        }
    }
    return messages
}

enum HarnessEvent<Head> {
    case head(Head)
    case body([UInt8])
    case end
    case needMore
}

func pieces(of input: [UInt8], _ feeding: Feeding) -> [[UInt8]] {
    switch feeding {
    case .allAtOnce: [input]
    case .byteAtATime: input.map { [$0] }
    }
}

func parseRequests(
    _ input: [UInt8],
    _ feeding: Feeding = .allAtOnce,
    limit: Int = 64 * 1024
) throws(HTTPParseError)
    -> [ParsedMessage<RequestHead>]
{
    try parseRequests(pieces: pieces(of: input, feeding), limit: limit)
}

func parseRequests(pieces: [[UInt8]], limit: Int = 64 * 1024) throws(HTTPParseError) -> [ParsedMessage<RequestHead>] {
    var parser = HTTPRequestParser(maximumHeadBytes: limit)
    return try feed(pieces) { (raw) throws(HTTPParseError) in
        switch try parser.next(raw) {
        case .head(let head, let consumed): (.head(head), consumed)
        case .body(let range): (.body(Array(raw[range])), range.upperBound)
        case .end(let consumed): (.end, consumed)
        case .needMore(let consumed): (.needMore, consumed)
        }
    }
}

func parseResponses(
    _ input: [UInt8],
    _ feeding: Feeding = .allAtOnce,
    method: HTTPMethod = .get
) throws(HTTPParseError)
    -> [ParsedMessage<ResponseHead>]
{
    var parser = HTTPResponseParser()
    parser.expectResponse(to: method)
    return try feed(pieces(of: input, feeding)) { (raw) throws(HTTPParseError) in
        switch try parser.next(raw) {
        case .head(let head, let consumed): (.head(head), consumed)
        case .body(let range): (.body(Array(raw[range])), range.upperBound)
        case .end(let consumed): (.end, consumed)
        case .needMore(let consumed): (.needMore, consumed)
        }
    }
}

func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }

func parseError(_ body: () throws(HTTPParseError) -> Void) -> HTTPParseError? {
    do throws(HTTPParseError) {
        try body()
        return nil
    } catch {
        return error
    }
}
