import BearerCore
import CBearerLinux
import Glibc

/// Accepts connections from a listening endpoint on one event loop, and hands each to `onAccept`
/// as a stream, not started yet.
///
/// Each loop has a `Listener` for the same endpoint. On a socket, each registers with
/// EPOLLEXCLUSIVE, so the kernel wakes one loop per incoming connection and connections spread over
/// the loops; on a memory network, a connection is accepted by the listener of the loop it was made
/// on. A connection then lives on the loop that accepted it. Confined to its loop.
package final class Listener: Selectable {
    package let endpoint: ListeningEndpoint
    /// Unowned and unchecked: a loop outlives everything registered on it (it closes them when it
    /// stops), and a checked reference would cost an atomic operation per access.
    package unowned(unsafe) let loop: EventLoop
    private let onAccept: (StreamConnection) -> Void
    private let onAcceptError: (IOError) -> Void
    private var isPaused = false
    private var isClosed = false
    /// On a memory network: where connections wait for this listener.
    private var memoryQueue: MemoryAcceptQueue?

    /// How long accepting pauses when the process is out of file descriptors, so the loop does not
    /// spin on a connection it cannot take.
    package static let descriptorExhaustionPause: Duration = .milliseconds(100)

    package init(
        endpoint: ListeningEndpoint,
        loop: EventLoop,
        onAccept: @escaping (StreamConnection) -> Void,
        onAcceptError: @escaping (IOError) -> Void
    ) {
        self.endpoint = endpoint
        self.loop = loop
        self.onAccept = onAccept
        self.onAcceptError = onAcceptError
    }

    package func start() {
        switch self.endpoint.source {
        case .socket(let fd): self.loop.register(fd, self, interest: .read, exclusive: true)
        case .memory(let network): self.memoryQueue = network.startAccepting(self, at: self.endpoint.address)
        }
    }

    /// Stops accepting on this loop; the endpoint itself is closed by its owner.
    package func stop() {
        guard !self.isClosed else { return }
        self.isClosed = true
        switch self.endpoint.source {
        case .socket(let fd): self.loop.deregister(fd)
        case .memory(let network): self.memoryQueue.map { network.stopAccepting($0, at: self.endpoint.address) }
        }
    }

    /// A connection the memory network made to this listener's address.
    func accepted(_ stream: StreamConnection) {
        guard !self.isClosed else {
            stream.close()
            return
        }
        self.onAccept(stream)
    }

    package func ready(_ events: ReadinessEvents) {
        guard case .socket(let listenFD) = self.endpoint.source else { return }
        let isTCP = !self.endpoint.address.isUnix
        // A bounded batch per wake-up keeps one busy listener from starving established connections.
        for _ in 0..<64 {
            guard !self.isClosed, !self.isPaused else { return }
            do throws(IOError) {
                switch try SystemCall.nonBlocking("accept", { cbl_accept4(listenFD, nil, nil) }) {
                case .completed(let fd):
                    if isTCP { Socket.setNoDelay(Int32(fd)) }
                    self.onAccept(StreamConnection(fd: Int32(fd), loop: self.loop, isConnecting: false))
                case .wouldBlock:
                    return
                }
            } catch {
                switch error.errnoCode {
                case ECONNABORTED:
                    // The client gave up before it was accepted: the next one may be waiting.
                    continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    self.onAcceptError(error)
                    self.pause(listenFD)
                    return
                default:
                    self.onAcceptError(error)
                    return
                }
            }
        }
    }

    private func pause(_ fd: Int32) {
        self.isPaused = true
        self.loop.setInterest(fd, .none)
        self.loop.schedule(after: Self.descriptorExhaustionPause) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.isPaused = false
            self.loop.setInterest(fd, .read)
        }
    }
}

@available(*, unavailable)
extension Listener: Sendable {}
