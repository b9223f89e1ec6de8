import BearerCore
import BearerHTTP

/// Parses responses out of the bytes a blocking stream delivers, however they are pieced: what
/// `BlockingHTTPClient` (over a socket) and the test world's clients (over memory too) share. `fill`
/// appends what one read returns and says false at the end of the stream.
package struct HTTPResponseReader {
    package typealias Response = BlockingHTTPClient.Response
    package typealias ClientError = BlockingHTTPClient.ClientError
    package typealias Fill = (inout ByteBuffer) throws(ClientError) -> Bool

    /// The bytes read but not parsed yet.
    package var pending = ByteBuffer()
    private var parser = HTTPResponseParser(maximumHeadBytes: 1 << 20)

    package init() {}

    /// Reads one whole response (after any 1xx heads) to a request with `method`.
    package mutating func readResponse(
        method: HTTPMethod,
        maximumBodyBytes: Int = 256 << 20,
        fill: Fill
    ) throws(ClientError) -> Response {
        self.parser.expectResponse(to: method)
        var informational: [Int] = []
        var head: ResponseHead?
        var body: [UInt8] = []
        while true {
            let event: HTTPResponseParser.Event
            do throws(HTTPParseError) {
                event = try self.pending.parseNext(payload: { bytes in
                    if body.count < maximumBodyBytes { body.append(contentsOf: bytes) }
                }) { raw throws(HTTPParseError) in try self.parser.next(raw) }
            } catch {
                throw .malformed(error)
            }
            switch event {
            case .head(let parsed, _):
                if parsed.isInformational {
                    informational.append(parsed.status)
                } else {
                    head = parsed
                }
            case .body:
                continue
            case .end:
                return Response(head: head!, body: body, informational: informational)
            case .needMore:
                if try !fill(&self.pending) {
                    if let head, self.parser.canEndAtEndOfInput {
                        return Response(head: head, body: body, informational: informational)
                    }
                    if head == nil { throw .closedBeforeResponse }
                    throw .truncated(received: body.count)
                }
            }
        }
    }

    /// Reads the next response head, 1xx included (a `101 Switching Protocols`), leaving what follows
    /// it buffered (`takeBuffered`).
    package mutating func readHead(fill: Fill) throws(ClientError) -> ResponseHead {
        self.parser.expectResponse(to: .get)
        while true {
            let event = try? self.pending.parseNext { raw throws(HTTPParseError) in try self.parser.next(raw) }
            if case .head(let head, _) = event { return head }
            if try !fill(&self.pending) { throw .closedBeforeResponse }
        }
    }

    /// The bytes read but not parsed yet (after a 101: the first bytes of the new protocol).
    package mutating func takeBuffered() -> [UInt8] {
        let bytes = self.pending.readableBytesArray
        self.pending.clear()
        return bytes
    }
}
