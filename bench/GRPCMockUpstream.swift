import BearerCore
import BearerDemo
import BearerHTTP2
import BearerIO
import Glibc
import Synchronization

/// The `grpc` scenario's upstream: an h2c gRPC server on the project's own HTTP/2 server machine,
/// a thread per connection (the proxy multiplexes its calls on a few). It answers each unary call
/// once the request has ended: OK with one message when its token is one `authority` accepts, else
/// UNAUTHENTICATED Trailers-Only, as grpcio does. Python's grpcio answers a few thousand calls a
/// second, which would measure the server, not the proxy.
final class GRPCMockUpstream: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let authority: MockTokenAuthority
    /// Calls answered OK, and refused (UNAUTHENTICATED): each refusal the proxy replays is a call more.
    let answered = Atomic<Int>(0)
    let refused = Atomic<Int>(0)

    static let okHead = HeaderList([(":status", "200"), ("content-type", "application/grpc")])
    static let okTrailers = HeaderList([("grpc-status", "0")])
    static let refusal = HeaderList([
        (":status", "200"), ("content-type", "application/grpc"), ("grpc-status", "16"),
        ("grpc-message", "token refused"),
    ])
    /// One gRPC message: uncompressed, 2 bytes.
    static let message: [UInt8] = [0, 0, 0, 0, 2] + Array("ok".utf8)

    init(authority: MockTokenAuthority) throws {
        self.authority = authority
        self.listener = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        self.port = Socket.localAddress(self.listener)!.port!
        _ = fcntl(self.listener, F_SETFL, fcntl(self.listener, F_GETFL) & ~O_NONBLOCK)
        _ = spawnThread(name: "grpc-mock") { [self] in
            while true {
                let fd = Glibc.accept(self.listener, nil, nil)
                if fd < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return
                }
                _ = spawnThread(name: "grpc-mock-conn") { [self] in self.serve(fd) }
            }
        }
    }

    /// Stops accepting; connections end when the proxy closes them.
    func stop() {
        Glibc.shutdown(self.listener, Int32(SHUT_RDWR))
        Glibc.close(self.listener)
    }

    private func serve(_ fd: Int32) {
        var configuration = HTTP2ServerConnectionStateMachine.Configuration()
        configuration.maxConcurrentStreams = 10_000
        configuration.maxRapidResets = 1_000_000
        var machine = HTTP2ServerConnectionStateMachine(configuration: configuration)
        let socket = BlockingH2Socket(fd: fd, parser: configuration.makeFrameParser())
        // Each open stream's verdict on its token.
        var accepted: [UInt32: Bool] = [:]
        var closing = false

        func perform(_ action: HTTP2ServerConnectionStateMachine.Action) {
            socket.maxFrameSize = machine.peerMaxFrameSize
            switch action {
            case .nothing:
                break
            case .write(let frames), .resumeSending(let frames):
                socket.write(frames)
            case .startRequest(let streamID, let head, let endStream):
                accepted[streamID] = self.accepts(head.list)
                if endStream { answer(streamID) }
            case .forwardRequestData(let streamID, let count, let endStream, let frames):
                socket.write(frames)
                if count > 0 { perform(machine.requestDataConsumed(streamID: streamID, count: count)) }
                if endStream { answer(streamID) }
            case .forwardTrailers(let streamID, _):
                answer(streamID)
            case .cancelRequest(let streamID, let frames):
                accepted[streamID] = nil
                socket.write(frames)
            case .closeConnection(let frames):
                socket.write(frames)
                closing = true
            }
        }

        func answer(_ streamID: UInt32) {
            guard let isAccepted = accepted.removeValue(forKey: streamID) else { return }
            guard isAccepted else {
                self.refused.add(1, ordering: .relaxed)
                perform(machine.sendHeaders(streamID: streamID, Self.refusal, endStream: true))
                return
            }
            perform(machine.sendHeaders(streamID: streamID, Self.okHead, endStream: false))
            // The proxy's stream windows are far larger than a 7-byte message.
            socket.writeData(streamID: streamID, endStream: false, Self.message)
            perform(machine.dataSent(streamID: streamID, count: Self.message.count, endStream: false))
            perform(machine.sendHeaders(streamID: streamID, Self.okTrailers, endStream: true))
            self.answered.add(1, ordering: .relaxed)
        }

        while !closing, socket.readEvents({ perform(machine.received($0)) }) {
            guard socket.flush() else { return }
            machine.outboundFlushed()
        }
        _ = socket.flush()
    }

    /// The call's one `authorization` is `Bearer` and a token the authority accepts.
    private func accepts(_ list: HeaderList) -> Bool {
        let values = list.fields.indices.filter { list.name($0).elementsEqual("authorization".utf8) }
        guard values.count == 1 else { return false }
        let value = String(decoding: list.value(values[0]), as: UTF8.self)
        guard value.hasPrefix("Bearer ") else { return false }
        return self.authority.accepts(String(value.dropFirst("Bearer ".count)))
    }
}
