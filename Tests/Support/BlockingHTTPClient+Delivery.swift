import BearerCore
import Glibc

extension BlockingHTTPClient {
    /// Waits (bounded) until the peer's kernel has acknowledged everything sent: this socket's send
    /// queue is empty (`SIOCOUTQ`), so what was sent is in the peer's receive queue, and the next
    /// bytes go out in segments of their own. A test that sends in pieces so delivers each alone;
    /// when the peer reads them is the peer's business.
    package func waitUntilDelivered() -> Bool {
        waitUntil {
            var queued: Int32 = 0
            return ioctl(self.fd, UInt(TIOCOUTQ), &queued) == 0 && queued == 0
        }
    }
}
