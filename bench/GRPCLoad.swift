import BearerCore
import BearerHTTP2
import BearerIO
import Glibc
import Synchronization

/// The `grpc` scenario's clients: unary gRPC calls in h2c with prior knowledge, on the project's own
/// HTTP/2 client machine, `streams` calls in flight on each of `connections` connections (a thread
/// each, blocking reads). Unlike h2load, which counts HTTP statuses, it reads each call's
/// `grpc-status` (from the trailers, or a Trailers-Only head): a call is OK only with status 0.
final class GRPCLoad: @unchecked Sendable {
    struct Outcome {
        /// Calls that ended OK within the measured window.
        var ok = 0
        /// Calls that ended otherwise, warm-up included, by what they ended with (`grpc-status 16`,
        /// a reset…).
        var errors: [String: Int] = [:]
    }

    /// How a call the client saw refused is counted.
    static let unauthenticated = "grpc-status 16"

    private let address: SocketAddress
    private let streams: Int
    private let outcome = Locked(Outcome())

    /// A call's head: `:authority` the proxy's own address, as a client pointed at it sends.
    static func requestHead(_ address: SocketAddress) -> HeaderList {
        HeaderList([
            (":method", "POST"), (":scheme", "http"), (":path", "/bench.Echo/Unary"), (":authority", "\(address)"),
            ("content-type", "application/grpc"), ("te", "trailers"),
        ])
    }
    /// One gRPC message: uncompressed, 5 bytes.
    static let message: [UInt8] = [0, 0, 0, 0, 5] + Array("hello".utf8)

    init(address: SocketAddress, streams: Int) {
        self.address = address
        self.streams = streams
    }

    /// Runs `connections` connections until `end`, counting the OK calls that end between `start`
    /// and `end` and every failed one; returns when every connection has finished its calls in
    /// flight.
    func run(connections: Int, start: Instant, end: Instant) -> Outcome {
        let threads = (0..<connections).map { number in
            spawnThread(name: "grpc-load-\(number)") { [self] in self.connection(window: start..<end) }
        }
        for thread in threads { joinThread(thread) }
        return self.outcome.withLock { $0 }
    }

    private func count(_ result: String?, at now: Instant, window: Range<Instant>) {
        self.outcome.withLock { outcome in
            if let result {
                outcome.errors[result, default: 0] += 1
            } else if window.contains(now) {
                outcome.ok += 1
            }
        }
    }

    private func connection(window: Range<Instant>) {
        guard let (fd, _) = try? Socket.connect(to: self.address) else {
            self.count("connect failed", at: .now(), window: window)
            return
        }
        var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        _ = poll(&pollfd, 1, 5000)
        var machine = HTTP2ClientConnectionStateMachine()
        let socket = BlockingH2Socket(fd: fd, parser: machine.configuration.makeFrameParser())
        socket.outbound.writeBytes(HTTP2.clientPreface)
        socket.write(machine.start())
        let callHead = Self.requestHead(self.address)
        // The calls in flight, each with its HTTP status once its head came (a call answered
        // without a grpc-status is counted by it).
        var inFlight: [UInt32: Int?] = [:]
        var broken = false

        func finish(_ streamID: UInt32, _ result: String?) {
            inFlight[streamID] = nil
            self.count(result, at: .now(), window: window)
        }

        func perform(_ action: HTTP2ClientConnectionStateMachine.Action) {
            socket.maxFrameSize = machine.peerMaxFrameSize
            switch action {
            case .nothing, .resumeSending, .goAwayReceived:
                break
            case .write(let frames):
                socket.write(frames)
            case .responseHead(let streamID, let head, let endStream):
                let status = Self.grpcStatus(head.list)
                if endStream {
                    finish(streamID, status == nil ? "HTTP \(head.status)" : Self.failure(status))
                } else {
                    inFlight[streamID] = .some(head.status)
                }
            case .responseData(let streamID, let count, let endStream, let frames):
                socket.write(frames)
                if count > 0 { perform(machine.responseDataConsumed(streamID: streamID, count: count)) }
                if endStream { finish(streamID, "HTTP \((inFlight[streamID] ?? nil) ?? 0) without grpc-status") }
            case .responseTrailers(let streamID, let trailers):
                finish(streamID, Self.failure(Self.grpcStatus(trailers)))
            case .streamFailed(let streamID, let code, _, let frames):
                socket.write(frames)
                finish(streamID, "stream reset \(code)")
            case .closeConnection(let frames, let failed):
                socket.write(frames)
                for streamID in failed { finish(streamID, "connection closed") }
                broken = true
            }
        }

        while !broken {
            let sending = Instant.now() < window.upperBound
            while sending, inFlight.count < self.streams, machine.canOpenStream {
                let (streamID, frame) = machine.openStream(callHead, endStream: false, isHeadRequest: false)
                socket.write([frame])
                socket.writeData(streamID: streamID, endStream: true, Self.message)
                machine.dataSent(streamID: streamID, count: Self.message.count, endStream: true)
                inFlight[streamID] = .some(nil)
            }
            if !sending && inFlight.isEmpty { break }
            guard socket.flush() else { break }
            machine.outboundFlushed()
            guard socket.readEvents({ perform(machine.received($0)) }) else { break }
        }
        for _ in inFlight { self.count("connection closed", at: .now(), window: window) }
        perform(machine.close())
        _ = socket.flush()
    }

    /// nil for OK, else how the failure is counted.
    static func failure(_ status: Int?) -> String? {
        status == 0 ? nil : "grpc-status \(status.map(String.init) ?? "missing")"
    }

    /// `grpc-status`'s value in a head or trailers.
    static func grpcStatus(_ list: HeaderList) -> Int? {
        guard let index = list.fields.indices.first(where: { list.name($0).elementsEqual("grpc-status".utf8) })
        else { return nil }
        return Int(String(decoding: list.value(index), as: UTF8.self))
    }
}
