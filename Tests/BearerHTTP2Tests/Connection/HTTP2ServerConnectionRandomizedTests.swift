import BearerTestSupport
import Testing

@testable import BearerHTTP2

/// Drives the server machine with a seeded random client that obeys the protocol: it opens streams
/// up to the limit, sends request bodies only within the windows the server granted, resets a
/// stream now and then, and the exchanges consume request data and send responses at random paces.
/// After every event: no connection error, no flow-control error, never more streams than the
/// limit; at the end, with everyone draining, every stream completes or was reset, none is left.
@Suite struct HTTP2ServerConnectionRandomizedTests {
    @Test(arguments: 1...24 as ClosedRange<UInt64>)
    func aLawfulClientIsServedToTheEnd(seed: UInt64) {
        var run = RandomConnectionRun(seed: seed)
        for _ in 0..<400 { run.step(finishing: false) }
        for _ in 0..<4_000 where !run.isDone { run.step(finishing: true) }
        let left = run.streams.keys.sorted()
        #expect(left.isEmpty, "seed \(seed): streams left")
        #expect(run.driver.machine.activeStreamCount == 0, "seed \(seed)")
        #expect(run.failures.isEmpty, "seed \(seed): \(run.failures)")
    }
}

struct RandomConnectionRun {
    struct Stream {
        var bodyLeft: Int
        var requestEnded: Bool
        var clientWindow = 65_535
        var unconsumed = 0
        var responseStarted = false
        var responseLeft: Int
        var responseEnded = false
    }

    var random: SplitMix
    var driver: ClientDriver
    var streams: [UInt32: Stream] = [:]
    var nextStreamID: UInt32 = 1
    var clientConnectionWindow = 65_535
    var failures: [String] = []
    let maxStreams = 8

    init(seed: UInt64) {
        self.random = SplitMix(state: seed)
        let limit = self.maxStreams
        self.driver = ClientDriver { $0.maxConcurrentStreams = limit }
        self.handle(self.driver.machine.received(HTTP2FrameParserEvent(.preface, consumed: 24)))
        self.handle(self.driver.send(.settings([HTTP2Setting(.initialWindowSize, 30_000)])))
    }

    var isDone: Bool { self.streams.isEmpty }

    mutating func step(finishing: Bool) {
        let choice = Int.random(in: 0..<100, using: &self.random)
        let ids = self.streams.keys.sorted()
        let some = ids.isEmpty ? nil : ids[Int.random(in: 0..<ids.count, using: &self.random)]
        switch choice {
        case 0..<12 where !finishing && self.streams.count < self.maxStreams:
            self.open()
        case 12..<40:
            if let some { self.sendBody(some) }
        case 40..<60:
            if let some { self.consume(some) }
        case 60..<85:
            if let some { self.respond(some) }
        case 85..<95:
            if let some { self.grantWindow(some) }
        case 95..<97 where !finishing:
            if let some {
                self.streams[some] = nil
                self.handle(self.driver.send(.rstStream(streamID: some, code: .cancel)))
            }
        default:
            self.handle(self.driver.send(.ping(ack: false, opaqueData: 7)))
            self.driver.machine.outboundFlushed()
        }
        if self.driver.machine.activeStreamCount > self.maxStreams { self.failures.append("over the stream limit") }
    }

    mutating func open() {
        let streamID = self.nextStreamID
        self.nextStreamID += 2
        let body = Bool.random(using: &self.random) ? 0 : Int.random(in: 1...150_000, using: &self.random)
        let declared = Bool.random(using: &self.random) ? body : nil
        let response = Int.random(in: 0...100_000, using: &self.random)
        self.streams[streamID] = Stream(bodyLeft: body, requestEnded: body == 0, responseLeft: response)
        let action = self.driver.headers(streamID, ClientDriver.post(contentLength: declared), endStream: body == 0)
        if action.startedStream != streamID { self.failures.append("stream \(streamID) not started: \(action)") }
        self.handle(action)
    }

    mutating func sendBody(_ streamID: UInt32) {
        guard let stream = self.streams[streamID], stream.bodyLeft > 0 else { return }
        let most = min(stream.bodyLeft, stream.clientWindow, self.clientConnectionWindow, 16_384)
        guard most > 0 else { return }
        let count = Int.random(in: 1...most, using: &self.random)
        self.streams[streamID]!.bodyLeft -= count
        self.streams[streamID]!.clientWindow -= count
        self.clientConnectionWindow -= count
        let ends = self.streams[streamID]!.bodyLeft == 0
        if ends { self.streams[streamID]!.requestEnded = true }
        self.handle(self.driver.data(streamID, count, endStream: ends))
    }

    mutating func consume(_ streamID: UInt32) {
        guard let stream = self.streams[streamID], stream.unconsumed > 0 else { return }
        self.streams[streamID]!.unconsumed = 0
        self.handle(self.driver.machine.requestDataConsumed(streamID: streamID, count: stream.unconsumed))
        self.forgetIfDone(streamID)
    }

    mutating func respond(_ streamID: UInt32) {
        guard let stream = self.streams[streamID], !stream.responseEnded else { return }
        if !stream.responseStarted {
            self.streams[streamID]!.responseStarted = true
            let ends = stream.responseLeft == 0
            if ends { self.streams[streamID]!.responseEnded = true }
            self.handle(
                self.driver.machine.sendHeaders(streamID: streamID, HeaderList([(":status", "200")]), endStream: ends)
            )
        } else {
            let most = min(stream.responseLeft, self.driver.machine.sendableByteCount(streamID: streamID))
            guard most > 0 else { return }
            let count = Int.random(in: 1...most, using: &self.random)
            self.streams[streamID]!.responseLeft -= count
            let ends = self.streams[streamID]!.responseLeft == 0
            if ends { self.streams[streamID]!.responseEnded = true }
            self.handle(self.driver.machine.dataSent(streamID: streamID, count: count, endStream: ends))
        }
        self.forgetIfDone(streamID)
    }

    /// The client reads response data and gives the server credit on the stream and the connection.
    mutating func grantWindow(_ streamID: UInt32) {
        self.handle(self.driver.send(.windowUpdate(streamID: streamID, increment: 40_000)))
        self.handle(self.driver.send(.windowUpdate(streamID: 0, increment: 40_000)))
    }

    mutating func forgetIfDone(_ streamID: UInt32) {
        guard let stream = self.streams[streamID] else { return }
        if stream.requestEnded && stream.responseEnded && stream.unconsumed == 0 { self.streams[streamID] = nil }
    }

    mutating func handle(_ action: HTTP2ServerConnectionStateMachine.Action) {
        switch action {
        case .nothing, .startRequest, .forwardTrailers:
            break
        case .write(let frames), .resumeSending(let frames):
            self.apply(frames)
        case .forwardRequestData(let streamID, let count, let endStream, let frames):
            self.streams[streamID]?.unconsumed += count
            if endStream { self.forgetIfDone(streamID) }
            self.apply(frames)
        case .cancelRequest(let streamID, let frames):
            // Without frames, it is the client's own reset coming back as the exchange's cancellation.
            if !frames.isEmpty { self.failures.append("stream \(streamID) cancelled: \(frames)") }
            self.streams[streamID] = nil
        case .closeConnection(let frames):
            self.failures.append("connection closed: \(frames)")
        }
    }

    mutating func apply(_ frames: [HTTP2Frame]) {
        for frame in frames {
            switch frame {
            case .windowUpdate(0, let increment): self.clientConnectionWindow += increment
            case .windowUpdate(let streamID, let increment): self.streams[streamID]?.clientWindow += increment
            case .rstStream(let streamID, let code): self.failures.append("stream \(streamID) reset: \(code)")
            default: break
            }
        }
    }
}
