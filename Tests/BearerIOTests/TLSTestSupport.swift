import BearerCore
import BearerTestSupport
import COpenSSL
import Foundation
import Glibc

@testable import BearerIO

extension BlockingSocket: BlockingByteChannel {
    /// One read: what has arrived (empty at the end of the stream or after the receive timeout).
    func receiveSome() -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { Glibc.read(self.fd, $0.baseAddress, $0.count) }
        return count > 0 ? Array(chunk[0..<count]) : []
    }

    /// Sends `bytes` in pieces of `size`, each its own segment (TCP_NODELAY, and the next piece only
    /// once the peer's kernel acknowledged the last: the send queue is empty).
    func sendInPieces(_ bytes: [UInt8], size: Int) {
        var one: Int32 = 1
        setsockopt(self.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + size, bytes.count)
            self.send(Array(bytes[offset..<end]))
            offset = end
            _ = waitUntil {
                var queued: Int32 = 0
                return ioctl(self.fd, UInt(TIOCOUTQ), &queued) == 0 && queued == 0
            }
        }
    }
}
