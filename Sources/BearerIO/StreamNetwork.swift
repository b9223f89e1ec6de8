import BearerCore
import Glibc

/// Where streams come from: what the proxy, its outbound connector and the mock servers are given
/// to listen, resolve and connect. `SocketNetwork` is the kernel's (sockets, `getaddrinfo`);
/// `MemoryNetwork` is a network inside this process, for tests that run a whole scenario without
/// sockets. Either way the streams are `StreamConnection`s and the listeners `Listener`s: only
/// where the bytes go differs.
package protocol StreamNetwork: Sendable {
    /// The addresses of `host` at `port`, blocking (start-up: listen addresses).
    func lookUp(host: String, port: Int) -> Resolver.Answer
    /// Calls `completion` on `loop` with the addresses of `host` at `port`; answers known at once
    /// (literals, a cache, a memory network's names) come before this returns.
    func resolve(
        host: String,
        port: Int,
        on loop: EventLoop,
        _ completion: @escaping @Sendable (Resolver.Answer) -> Void
    )
    /// Binds a listening endpoint at `address` (port 0: one the network picks); each loop then
    /// accepts from it with a `Listener`.
    func listen(on address: SocketAddress) throws(IOError) -> ListeningEndpoint
    /// Starts connecting to `address`; the stream, not started yet, is connecting until its delegate
    /// hears `streamConnected` (or it is connected already: `isConnecting` is false).
    func connect(to address: SocketAddress, on loop: EventLoop) throws(IOError) -> StreamConnection
}

/// The kernel's network: listening sockets, non-blocking connects, names through `Resolver`.
package struct SocketNetwork: StreamNetwork {
    let resolver: Resolver

    package init(resolver: Resolver = Resolver()) {
        self.resolver = resolver
    }

    package func lookUp(host: String, port: Int) -> Resolver.Answer {
        if let literal = SocketAddress(ipAddress: host, port: port) { return .addresses([literal]) }
        return Resolver.lookUp(host: host, port: port)
    }

    package func resolve(
        host: String,
        port: Int,
        on loop: EventLoop,
        _ completion: @escaping @Sendable (Resolver.Answer) -> Void
    ) {
        self.resolver.resolve(host: host, port: port, on: loop, completion)
    }

    package func listen(on address: SocketAddress) throws(IOError) -> ListeningEndpoint {
        let fd = try Socket.listen(on: address)
        return ListeningEndpoint(address: Socket.localAddress(fd) ?? address, source: .socket(fd))
    }

    package func connect(to address: SocketAddress, on loop: EventLoop) throws(IOError) -> StreamConnection {
        let (fd, isConnected) = try Socket.connect(to: address)
        return StreamConnection(fd: fd, loop: loop, isConnecting: !isConnected)
    }
}

/// A bound listening endpoint: a listening socket, or an address taken on a memory network. Each
/// loop accepts from it with a `Listener`; `close` gives it back once no loop does any more.
package struct ListeningEndpoint: Sendable {
    /// As bound (the port the network picked for port 0).
    package let address: SocketAddress
    let source: Source

    enum Source: Sendable {
        case socket(Int32)
        case memory(MemoryNetwork)
    }

    init(address: SocketAddress, source: Source) {
        self.address = address
        self.source = source
    }

    /// Listening socket `fd`, bound to `address`, made by its owner (`Socket.listen`).
    package init(socket fd: Int32, address: SocketAddress) {
        self.init(address: address, source: .socket(fd))
    }

    /// Closes the socket (a unix socket's file stays: its creator removes it), or frees the address.
    package func close() {
        switch self.source {
        case .socket(let fd): Socket.close(fd)
        case .memory(let network): network.unbind(self.address)
        }
    }
}
