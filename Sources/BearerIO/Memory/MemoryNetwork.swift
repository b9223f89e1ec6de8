import BearerCore
import Glibc

/// A network inside this process: listeners bound to addresses, and streams between them that are
/// pairs of `MemoryTransport`s instead of sockets. Tests run a whole proxy on it — clients, the
/// proxy, mock upstreams and token endpoints — with no socket, port or thread of the system.
///
/// Addresses are those of a real network, so that a configuration reads the same in memory and
/// live: `127.0.0.1:8080`, `unix:/run/proxy.sock`. Host names are names on this network: `localhost`
/// is 127.0.0.1, and every other name gets an address of its own when it is first looked up
/// (127.1.0.1, 127.1.0.2, …), so a mock upstream that listens on `api.test:443` is where the proxy,
/// resolving `api.test`, connects. Port 0 picks a free port, counting up from 40000.
///
/// A connection to an address is accepted by the listener of that address on the connecting loop
/// (every loop of a proxy has one): both ends of a stream live on one loop, which a stepped loop
/// runs deterministically. Each direction of a stream holds up to `bufferSize` unread bytes.
package final class MemoryNetwork: StreamNetwork {
    package let bufferSize: Int
    private let state = Locked(Names())

    private struct Names {
        /// Host name → its address text.
        var hosts: [String: String] = ["localhost": "127.0.0.1"]
        /// Bound addresses (their `description`) → the accept queue of each loop that accepts there.
        /// Each queue is confined to its loop, and only its loop takes it out of here (a connect
        /// looks up the connecting loop's): the transfer across the lock is sound.
        var bindings: [String: [ObjectIdentifier: UnsafeTransfer<MemoryAcceptQueue>]] = [:]
        var nextPort = 40000
    }

    package init(bufferSize: Int = 64 * 1024) {
        precondition(bufferSize > 0)
        self.bufferSize = bufferSize
    }

    /// The address `host` has on this network, at `port`.
    package func address(of host: String, port: Int) -> SocketAddress {
        if let literal = SocketAddress(ipAddress: host, port: port) { return literal }
        let text = self.state.withLock { names in
            if let known = names.hosts[host] { return known }
            let number = names.hosts.count - 1  // after localhost
            let assigned = "127.1.\(number / 250).\(number % 250 + 1)"
            names.hosts[host] = assigned
            return assigned
        }
        guard let address = SocketAddress(ipAddress: text, port: port) else {
            preconditionFailure("a memory network's address is a literal: \(text)")
        }
        return address
    }

    // MARK: StreamNetwork

    package func lookUp(host: String, port: Int) -> Resolver.Answer {
        .addresses([self.address(of: host, port: port)])
    }

    package func resolve(
        host: String,
        port: Int,
        on loop: EventLoop,
        _ completion: @escaping @Sendable (Resolver.Answer) -> Void
    ) {
        completion(self.lookUp(host: host, port: port))
    }

    package func listen(on address: SocketAddress) throws(IOError) -> ListeningEndpoint {
        let bound = try self.state.withLock { names throws(IOError) -> SocketAddress in
            var bound = address
            if address.port == 0, let host = address.hostText {
                while names.bindings[bound.description] != nil || bound.port == 0 {
                    bound = SocketAddress(ipAddress: host, port: names.nextPort)!
                    names.nextPort += 1
                }
            }
            guard names.bindings[bound.description] == nil else {
                throw IOError(errnoCode: EADDRINUSE, function: "bind \(bound)")
            }
            names.bindings[bound.description] = [:]
            return bound
        }
        return ListeningEndpoint(address: bound, source: .memory(self))
    }

    package func connect(to address: SocketAddress, on loop: EventLoop) throws(IOError) -> StreamConnection {
        loop.assertInEventLoop()
        let queue = self.state.withLock { $0.bindings[address.description]?[ObjectIdentifier(loop)] }
        guard let queue else {
            return StreamConnection(transport: .memory(.refused(on: loop)), loop: loop, isConnecting: true)
        }
        let (client, server) = MemoryTransport.pair(on: loop, capacity: self.bufferSize)
        queue.value.enqueue(server)
        return StreamConnection(transport: .memory(client), loop: loop, isConnecting: true)
    }

    // MARK: Listeners

    /// `listener` accepts what connects to `address` on its loop.
    func startAccepting(_ listener: Listener, at address: SocketAddress) -> MemoryAcceptQueue {
        let queue = MemoryAcceptQueue(listener: listener)
        let key = ObjectIdentifier(listener.loop)
        self.state.withLock { names in
            guard names.bindings[address.description] != nil else { return }
            names.bindings[address.description]?[key] = UnsafeTransfer(queue)
        }
        listener.loop.addInProcessSource(queue)
        return queue
    }

    func stopAccepting(_ queue: MemoryAcceptQueue, at address: SocketAddress) {
        let key = ObjectIdentifier(queue.loop)
        self.state.withLock { names in
            if names.bindings[address.description]?[key]?.value === queue {
                names.bindings[address.description]?[key] = nil
            }
        }
        queue.close()
    }

    /// The address is free again: a connect to it is refused.
    func unbind(_ address: SocketAddress) {
        self.state.withLock { names in names.bindings[address.description] = nil }
    }
}

/// The connections to one address on one loop that its `Listener` has not accepted yet: the
/// listen backlog of a memory network. Confined to its loop.
final class MemoryAcceptQueue: InProcessEventSource {
    let loop: EventLoop
    /// Strong, as the loop's registration of a socket's listener is; `close` lets go.
    private var listener: Listener?
    private var pending: [MemoryTransport] = []
    var isQueued = false

    init(listener: Listener) {
        self.loop = listener.loop
        self.listener = listener
    }

    func enqueue(_ end: MemoryTransport) {
        self.pending.append(end)
        self.loop.queueInProcessEvent(self)
    }

    func dispatchEvents() {
        let accepted = self.pending
        self.pending.removeAll()
        for end in accepted {
            guard let listener = self.listener else {
                end.close()
                continue
            }
            listener.accepted(StreamConnection(transport: .memory(end), loop: self.loop, isConnecting: false))
        }
    }

    /// Stops accepting: what waits is refused (the client reads an end).
    func close() {
        self.listener = nil
        for end in self.pending { end.close() }
        self.pending.removeAll()
        self.loop.removeInProcessSource(self)
    }

    func loopWillStop() {
        self.close()
    }
}

@available(*, unavailable)
extension MemoryAcceptQueue: Sendable {}
