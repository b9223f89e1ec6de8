// libFuzzer entry point for the HTTP/1.1 parsers (not part of the SwiftPM build: see run-fuzzer.sh).
//
// Each input is parsed as a request stream and as a response stream, twice: all at once, and split
// into pieces whose sizes come from the input itself. Beyond "no crash", the two parses must agree
// exactly (same heads, same body bytes, same error): a parser whose result depends on how bytes
// arrive is a smuggling bug waiting to happen.

struct Outcome: Equatable {
    var heads: [[UInt8]] = []
    var body: [UInt8] = []
    var ends = 0
    var error: HTTPParseError?
}

func parseRequests(_ pieces: [ArraySlice<UInt8>]) -> Outcome {
    var parser = HTTPRequestParser(maximumHeadBytes: 4096, maximumFieldCount: 64)
    var outcome = Outcome()
    var pending: [UInt8] = []
    for piece in pieces {
        pending += piece
        while true {
            let event: HTTPRequestParser.Event
            do throws(HTTPParseError) {
                event = try pending.withUnsafeBytesTypedThrows { (raw) throws(HTTPParseError) in try parser.next(raw) }
            } catch {
                outcome.error = error
                return outcome
            }
            switch event {
            case .needMore(let consumed):
                precondition(consumed <= pending.count)
                pending.removeFirst(consumed)
            case .head(let head, let consumed):
                precondition(consumed <= pending.count && consumed >= head.bytes.count)
                outcome.heads.append(head.bytes)
                pending.removeFirst(consumed)
                continue
            case .body(let range):
                precondition(range.lowerBound >= 0 && range.upperBound <= pending.count && !range.isEmpty)
                outcome.body += pending[range]
                pending.removeFirst(range.upperBound)
                continue
            case .end(let consumed):
                precondition(consumed <= pending.count)
                outcome.ends += 1
                pending.removeFirst(consumed)
                if outcome.ends > 64 { return outcome }
                continue
            }
            break
        }
    }
    return outcome
}

func parseResponses(_ pieces: [ArraySlice<UInt8>], method: HTTPMethod) -> Outcome {
    var parser = HTTPResponseParser(maximumHeadBytes: 4096, maximumFieldCount: 64)
    parser.expectResponse(to: method)
    var outcome = Outcome()
    var pending: [UInt8] = []
    for piece in pieces {
        pending += piece
        while true {
            let event: HTTPResponseParser.Event
            do throws(HTTPParseError) {
                event = try pending.withUnsafeBytesTypedThrows { (raw) throws(HTTPParseError) in try parser.next(raw) }
            } catch {
                outcome.error = error
                return outcome
            }
            switch event {
            case .needMore(let consumed):
                pending.removeFirst(consumed)
            case .head(let head, let consumed):
                outcome.heads.append(head.bytes)
                pending.removeFirst(consumed)
                continue
            case .body(let range):
                precondition(range.upperBound <= pending.count && !range.isEmpty)
                outcome.body += pending[range]
                pending.removeFirst(range.upperBound)
                continue
            case .end(let consumed):
                outcome.ends += 1
                pending.removeFirst(consumed)
                parser.expectResponse(to: method)
                if outcome.ends > 64 { return outcome }
                continue
            }
            break
        }
    }
    return outcome
}

/// Splits `input` into pieces of 1…16 bytes, sizes taken from the input's own bytes.
func split(_ input: [UInt8]) -> [ArraySlice<UInt8>] {
    var pieces: [ArraySlice<UInt8>] = []
    var index = 0
    var seed = 0
    while index < input.count {
        let size = 1 + Int(input[seed % input.count] & 0x0F)
        seed += 1
        let end = min(input.count, index + size)
        pieces.append(input[index..<end])
        index = end
    }
    return pieces
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzParsers(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard !input.isEmpty else { return 0 }
    let whole = parseRequests([input[...]])
    let pieces = parseRequests(split(input))
    precondition(whole == pieces, "request parse depends on how bytes arrive")
    let method: HTTPMethod = input[0] & 1 == 0 ? .get : .head
    let wholeResponse = parseResponses([input[...]], method: method)
    let piecesResponse = parseResponses(split(input), method: method)
    precondition(wholeResponse == piecesResponse, "response parse depends on how bytes arrive")
    return 0
}
