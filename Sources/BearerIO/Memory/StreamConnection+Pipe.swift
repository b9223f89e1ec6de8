import BearerCore

extension StreamConnection {
    /// Two connected streams on `loop`, each end holding up to `capacity` bytes its owner has not read:
    /// a writer finds the other end full and waits, as over a socket, which is how backpressure crosses
    /// a pipe between two parts of the proxy (an HTTP/2 stream and the exchange that serves it).
    package static func pipe(on loop: EventLoop, capacity: Int) -> (StreamConnection, StreamConnection) {
        let (first, second) = MemoryTransport.pair(on: loop, capacity: capacity)
        return (
            StreamConnection(transport: .memory(first), loop: loop, isConnecting: false),
            StreamConnection(transport: .memory(second), loop: loop, isConnecting: false)
        )
    }
}
