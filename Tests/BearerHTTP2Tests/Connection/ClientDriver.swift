@testable import BearerHTTP2

/// Plays the client against a server connection machine: encodes its requests with a real HPACK
/// encoder and hands the machine the events a parser would, returning each action.
struct ClientDriver {
    typealias Action = HTTP2ServerConnectionStateMachine.Action

    var machine: HTTP2ServerConnectionStateMachine
    var encoder = HPACKEncoder()

    init(_ configure: (inout HTTP2ServerConnectionStateMachine.Configuration) -> Void = { _ in }) {
        var configuration = HTTP2ServerConnectionStateMachine.Configuration()
        configure(&configuration)
        self.machine = HTTP2ServerConnectionStateMachine(configuration: configuration)
    }

    /// The preface and an empty SETTINGS: the connection is open.
    static func connected(
        _ configure: (inout HTTP2ServerConnectionStateMachine.Configuration) -> Void = { _ in }
    )
        -> ClientDriver
    {
        var driver = ClientDriver(configure)
        _ = driver.machine.received(HTTP2FrameParserEvent(.preface, consumed: 24))
        _ = driver.send(.settings([]))
        return driver
    }

    mutating func send(_ frame: HTTP2Frame) -> Action {
        self.machine.received(HTTP2FrameParserEvent(.frame(frame), consumed: 0))
    }

    mutating func data(_ streamID: UInt32, _ count: Int, endStream: Bool = false, padding: Int = 0) -> Action {
        let frame = HTTP2Frame.data(streamID: streamID, endStream: endStream, flowControlledLength: count + padding)
        return self.machine.received(HTTP2FrameParserEvent(.frame(frame), consumed: 0, payload: 0..<count))
    }

    mutating func headers(
        _ streamID: UInt32,
        _ fields: [(String, String)],
        endStream: Bool = true,
        priority: HTTP2Priority? = nil
    ) -> Action {
        var block: [UInt8] = []
        self.encoder.encode(HeaderList(fields), into: &block)
        let frame = HTTP2HeadersFrame(streamID: streamID, endStream: endStream, priority: priority, block: block)
        return self.send(.headers(frame))
    }

    static func get(_ path: String = "/") -> [(String, String)] {
        [(":method", "GET"), (":scheme", "https"), (":authority", "api.example.com"), (":path", path)]
    }

    static func post(contentLength: Int? = nil) -> [(String, String)] {
        [(":method", "POST"), (":scheme", "https"), (":authority", "api.example.com"), (":path", "/upload")]
            + (contentLength.map { [("content-length", String($0))] } ?? [])
    }
}

extension HTTP2ServerConnectionStateMachine.Action {
    /// The GOAWAY's code, if the action closes the connection with one.
    var goAwayCode: HTTP2ErrorCode? {
        guard case .closeConnection(let frames) = self else { return nil }
        for case .goAway(_, let code, _) in frames { return code }
        return nil
    }

    var startedStream: UInt32? {
        if case .startRequest(let streamID, _, _) = self { return streamID }
        return nil
    }
}
