import BearerIO

/// Why no free port could be had (the kernel refused a socket on 127.0.0.1).
package struct FreePortError: Error, CustomStringConvertible {
    package var description: String
}

/// A port on 127.0.0.1 nobody listens on now: the kernel picks it for a socket that is closed at once,
/// for a server a test starts that cannot be handed a listening socket (redis-server, nginx).
package func freeLoopbackPort() throws(FreePortError) -> Int {
    guard let any = SocketAddress(ipAddress: "127.0.0.1", port: 0) else {
        throw FreePortError(description: "cannot make a loopback address")
    }
    let fd: Int32
    do throws(IOError) {
        fd = try Socket.listen(on: any)
    } catch {
        throw FreePortError(description: "cannot find a free port: \(error.reason)")
    }
    defer { Socket.close(fd) }
    guard let port = Socket.localAddress(fd)?.port else { throw FreePortError(description: "no local port") }
    return port
}
