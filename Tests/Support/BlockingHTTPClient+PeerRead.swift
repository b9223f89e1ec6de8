import BearerCore
import BearerIO
import Glibc

extension BlockingHTTPClient {
    /// Waits (bounded) until the peer has read all this client sent: first the kernel had it
    /// acknowledged (this socket's send queue is empty: it is in the peer's receive queue), then the
    /// peer's socket holds nothing unread. A test that sends in pieces knows so that each was read
    /// alone. Loopback TCP (127.0.0.1) only, where /proc/net/tcp shows both ends.
    package func waitUntilThePeerRead() -> Bool {
        guard let local = Socket.localAddress(self.fd)?.port, let peer = self.peerPort else { return false }
        return waitUntil { Self.queues(from: local, to: peer)?.sent == 0 }
            && waitUntil { Self.queues(from: peer, to: local)?.unread == 0 }
    }

    /// The port of the address this socket is connected to.
    private var peerPort: Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(self.fd, $0, &length) }
        }
        guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// The queues of the loopback TCP socket from port `local` to port `remote`, from /proc/net/tcp:
    /// bytes sent and not yet acknowledged, bytes received and not yet read.
    private static func queues(from local: Int, to remote: Int) -> (sent: Int, unread: Int)? {
        // Read to its end by read(2): the file's size says 0, and it is longer than a page.
        let fd = open("/proc/net/tcp", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard let bytes = try? SystemCall.readToEnd(fd, limit: .max) else { return nil }
        let table = String(decoding: bytes, as: UTF8.self)
        // `sl local_address rem_address st tx_queue:rx_queue …`, addresses and queues in hex.
        for row in table.split(separator: "\n").dropFirst() {
            let fields = row.split(separator: " ")
            guard fields.count > 4,
                let ports = Self.port(fields[1]).flatMap({ l in Self.port(fields[2]).map { (l, $0) } }),
                ports == (local, remote)
            else { continue }
            let queues = fields[4].split(separator: ":").compactMap { Int($0, radix: 16) }
            guard queues.count == 2 else { return nil }
            return (queues[0], queues[1])
        }
        return nil
    }

    /// The port of an `ADDRESS:PORT` field of /proc/net/tcp.
    private static func port(_ field: Substring) -> Int? {
        field.split(separator: ":").last.flatMap { Int($0, radix: 16) }
    }
}
