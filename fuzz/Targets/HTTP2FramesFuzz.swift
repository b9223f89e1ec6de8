import BearerCore
import BearerHTTP2

/// A client's HTTP/2 bytes: the frame parser (server role) fed the input whole and in pieces must
/// read the same frames and stop at the same error, and the connection machine fed those frames
/// must take each one without tripping its own invariants. Its requests are answered, so that
/// streams close and windows move.
enum HTTP2FramesFuzz {
    static func run(_ input: [UInt8]) {
        guard let first = input.first else { return }
        // Most inputs start past the preface, so that the fuzzer spends its time on frames; an odd
        // first byte leaves the preface to the input.
        let bytes = first & 1 == 0 ? HTTP2.clientPreface + input.dropFirst() : Array(input.dropFirst())
        let whole = self.frames([bytes])
        precondition(
            whole == self.frames(pieces(of: bytes)),
            "the frame parser read the input differently whole and in pieces"
        )
        self.drive(bytes)
    }

    static func frames(_ pieces: [[UInt8]]) -> Transcript<HTTP2ConnectionError> {
        var parser = HTTP2ServerConnectionStateMachine.Configuration().makeFrameParser()
        return transcript(of: pieces, next: { (bytes) throws(HTTP2ConnectionError) in try parser.next(bytes) }) {
            event,
            payload,
            transcript in
            switch event.kind {
            case .needMore: return false
            case .preface: transcript.append(.value("preface"))
            case .frame(let frame): transcript.append(.value("\(frame)"))
            case .streamError(let error): transcript.append(.value("\(error)"))
            }
            if let payload { transcript.append(.data(payload)) }
            return true
        }
    }

    /// The machine fed every event of the whole input, as `HTTP2Connection` feeds it.
    static func drive(_ bytes: [UInt8]) {
        var machine = HTTP2ServerConnectionStateMachine()
        var parser = HTTP2ServerConnectionStateMachine.Configuration().makeFrameParser()
        var buffer = ByteBuffer()
        buffer.writeBytes(bytes)
        for _ in 0..<512 {
            let event: HTTP2FrameParserEvent
            do throws(HTTP2ConnectionError) {
                event = try buffer.parseNext { (bytes) throws(HTTP2ConnectionError) in try parser.next(bytes) }
            } catch {
                _ = machine.connectionFailed(error)
                return
            }
            if event.kind == .needMore { return }
            if self.act(on: machine.received(event), &machine) { return }
        }
    }

    /// Plays the application's part for `action`; true when the connection is over.
    static func act(
        on action: HTTP2ServerConnectionStateMachine.Action,
        _ machine: inout HTTP2ServerConnectionStateMachine
    )
        -> Bool
    {
        switch action {
        case .closeConnection:
            return true
        case .startRequest(let streamID, _, _):
            _ = machine.sendHeaders(streamID: streamID, HeaderList([(":status", "200")]), endStream: streamID % 4 == 1)
        case .forwardRequestData(let streamID, let count, _, _):
            _ = machine.requestDataConsumed(streamID: streamID, count: count)
        default:
            break
        }
        machine.outboundFlushed()
        return false
    }
}
