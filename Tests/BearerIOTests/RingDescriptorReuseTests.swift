import BearerCore
import Glibc
import Testing

@testable import BearerIO

/// A descriptor number is the process's, not the loop's: once a stream closes its socket, any
/// thread's next socket may take the number. The ring resolves a request's descriptor when it is
/// submitted, at the start of the next loop turn, so a receive armed and closed in one turn must
/// reach the kernel before the close, or it receives from whichever socket took the number.
@Suite struct RingDescriptorReuseTests {
    /// A connected unix socket pair, the first end moved to a number at or above `minimum`.
    func socketPair(above minimum: Int32) throws -> (Int32, Int32) {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        let moved = fcntl(ends[0], F_DUPFD_CLOEXEC, minimum)
        try #require(moved >= minimum)
        close(ends[0])
        return (moved, ends[1])
    }

    @Test func aReceiveArmedAndClosedInOneTurnReadsNothingOfTheSocketThatTakesTheNumber() throws {
        let group = EventLoopGroup(count: 1, io: .ioUring)
        defer { group.shutdown() }
        let loop = group.loops[0]
        try #require(loop.usesIOUring, "\(loop.ringUnavailableReason ?? "")")
        // A number high above what the rest of the process opens (each open takes the lowest free
        // one), so that no other test's socket lands on it between the close and the reuse below.
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let high = Int32(min(Int(limit.rlim_cur) - 8, 900))
        let (closed, closedPeer) = try self.socketPair(above: high)
        let (taker, takerPeer) = try self.socketPair(above: high + 1)
        defer { [closedPeer, taker, takerPeer].forEach { close($0) } }
        let delegate = EchoDelegate()
        loop.executeAndWait {
            let stream = StreamConnection(fd: closed, loop: loop, isConnecting: false)
            stream.start(delegate: delegate)  // arms the ring's receive, submitted when the turn ends
            stream.close()
            // Another socket takes the number, with bytes waiting for its own reader.
            dup2(taker, closed)
            _ = Array("mine".utf8).withUnsafeBytes { write(takerPeer, $0.baseAddress, $0.count) }
        }
        // The next turn has submitted what the last one queued.
        loop.executeAndWait {}
        loop.executeAndWait {}
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { recv(closed, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        close(closed)
        #expect(count == 4 && Array(bytes.prefix(4)) == Array("mine".utf8), "the closed stream's receive took them")
    }
}
