import BearerCore
import CBearerLinux
import Glibc

/// Creating, configuring and closing sockets. Every socket is non-blocking and close-on-exec.
package enum Socket {
    /// A listening socket bound to `address`. A unix socket file is created with mode 0600; a stale
    /// file left by a process that died is replaced, but a socket some process still serves is not.
    package static func listen(on address: SocketAddress, backlog: Int32 = 4096) throws(IOError) -> Int32 {
        let fd = cbl_socket(address.family, CBL_SOCK_STREAM)
        guard fd >= 0 else { throw IOError(errnoCode: errno, function: "socket") }
        do throws(IOError) {
            switch address {
            case .unix(let path):
                try Self.removeStaleUnixSocket(path)
                // The file is 0600 from the moment it exists, no window where others could connect:
                // Linux makes it with the socket's own mode (less the umask), set here first. Not by
                // setting the umask, which is the whole process's: a folder made or a program started
                // on another thread in that moment took 0177 too.
                guard fchmod(fd, 0o600) == 0 else { throw IOError(errnoCode: errno, function: "fchmod") }
                try Self.bind(fd, address)
            case .ipv4, .ipv6:
                try Self.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
                if case .ipv6 = address { try Self.setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
                try Self.bind(fd, address)
            }
            guard Glibc.listen(fd, backlog) == 0 else { throw IOError(errnoCode: errno, function: "listen") }
            return fd
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    private static func bind(_ fd: Int32, _ address: SocketAddress) throws(IOError) {
        let result = address.withSockAddr { Glibc.bind(fd, $0, $1) }
        guard result == 0 else { throw IOError(errnoCode: errno, function: "bind \(address)") }
    }

    private static func removeStaleUnixSocket(_ path: String) throws(IOError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw IOError(errnoCode: EEXIST, function: "bind unix:\(path) (a file that is not a socket is in the way)")
        }
        // Is anybody still listening there? If so, leave it alone: "address in use".
        let probe = cbl_socket(AF_UNIX, CBL_SOCK_STREAM)
        if probe >= 0 {
            defer { Glibc.close(probe) }
            let result = SocketAddress.unix(path: path).withSockAddr { Glibc.connect(probe, $0, $1) }
            if result == 0 || errno == EAGAIN || errno == EINPROGRESS {
                throw IOError(errnoCode: EADDRINUSE, function: "bind unix:\(path)")
            }
        }
        unlink(path)
    }

    /// Starts a non-blocking connect; returns the fd and whether the connection is already established.
    package static func connect(to address: SocketAddress) throws(IOError) -> (fd: Int32, isConnected: Bool) {
        let fd = cbl_socket(address.family, CBL_SOCK_STREAM)
        guard fd >= 0 else { throw IOError(errnoCode: errno, function: "socket") }
        if !address.isUnix { Self.setNoDelay(fd) }
        let result = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if result == 0 { return (fd, true) }
        let code = errno
        if code == EINPROGRESS || code == EINTR { return (fd, false) }
        Glibc.close(fd)
        throw IOError(errnoCode: code, function: "connect")
    }

    /// The pending error of a socket whose connect finished (SO_ERROR), 0 when it succeeded.
    package static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
        return value
    }

    package static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, CBL_IPPROTO_TCP, CBL_TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    package static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(IOError) {
        var value = value
        guard setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw IOError(errnoCode: errno, function: "setsockopt")
        }
    }

    /// The address a socket is bound to (to learn the port the kernel picked for port 0).
    package static func localAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { return nil }
        return SocketAddress(storage: storage)
    }

    /// The address of the other end of a connected socket (for the audit log).
    package static func peerAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard result == 0 else { return nil }
        return SocketAddress(storage: storage)
    }

    /// The process and user at the other end of a unix socket, as the kernel recorded them when it
    /// connected (SO_PEERCRED): the audit log's client, which a unix socket has no address for.
    package static func peerCredentials(_ fd: Int32) -> (pid: Int32, uid: UInt32)? {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        guard cbl_peer_credentials(fd, &pid, &uid) == 0 else { return nil }
        return (pid, uid)
    }

    /// Half-closes: the peer reads the end of the stream after everything sent.
    static func shutdownWrite(_ fd: Int32) {
        _ = try? SystemCall.nonBlocking("shutdown") { Glibc.shutdown(fd, CBL_SHUT_WR) }
    }

    /// Makes `close` abort the connection with a reset (SO_LINGER with a zero timeout).
    static func setResetOnClose(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    package static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}
