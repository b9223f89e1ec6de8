import BearerHTTP

/// The HTTP/1.1 request and response parsers, each fed the input whole and in the pieces it
/// chooses: the two readings must be the same heads, the same body bytes, the same error.
enum HTTP1Fuzz {
    static func run(_ input: [UInt8]) {
        guard let first = input.first else { return }
        precondition(
            self.requests([input]) == self.requests(pieces(of: input)),
            "the request parser read the input differently whole and in pieces"
        )
        // The response's framing depends on the request's method (a HEAD response has no body).
        let method: HTTPMethod = first & 1 == 0 ? .get : .head
        precondition(
            self.responses([input], to: method) == self.responses(pieces(of: input), to: method),
            "the response parser read the input differently whole and in pieces"
        )
    }

    static func requests(_ pieces: [[UInt8]]) -> Transcript<HTTPParseError> {
        var parser = HTTPRequestParser(maximumHeadBytes: 4096, maximumFieldCount: 64)
        return transcript(of: pieces, next: { (bytes) throws(HTTPParseError) in try parser.next(bytes) }) {
            event,
            payload,
            transcript in
            self.record(event, payload, \.bytes, &transcript)
        }
    }

    static func responses(_ pieces: [[UInt8]], to method: HTTPMethod) -> Transcript<HTTPParseError> {
        var parser = HTTPResponseParser(maximumHeadBytes: 4096, maximumFieldCount: 64)
        parser.expectResponse(to: method)
        return transcript(of: pieces, next: { (bytes) throws(HTTPParseError) in try parser.next(bytes) }) {
            event,
            payload,
            transcript in
            if case .end = event { parser.expectResponse(to: method) }
            return self.record(event, payload, \.bytes, &transcript)
        }
    }

    static func record<Head>(
        _ event: HTTPParserEvent<Head>,
        _ payload: [UInt8]?,
        _ headBytes: (Head) -> [UInt8],
        _ transcript: inout Transcript<HTTPParseError>
    ) -> Bool {
        switch event {
        case .needMore: return false
        case .head(let head, _): transcript.append(.head(headBytes(head)))
        case .body: transcript.append(.data(payload ?? []))
        case .end: transcript.append(.end)
        }
        return true
    }
}
