import BearerCore
import BearerTestSupport
import Dispatch
import Testing

@testable import BearerProxy

/// A drain lets in-flight exchanges finish and returns when the last connection closes, or at its
/// timeout with the count of those still open.
@Suite struct DrainTests {
    @Test func aDrainReturnsWhenTheLastConnectionCloses() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send("GET /slow/300 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(waitUntil { fixture.upstream.server.handledRequests.load(ordering: .relaxed) == 1 })
        let proxy = fixture.proxy
        let remaining = Locked<Int?>(nil)
        let drained = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let count = proxy.drain(timeout: .seconds(60))
            remaining.withLock { $0 = count }
            drained.signal()
        }
        // The drain has begun (the listener is closed) and lets the exchange finish: the response comes,
        // then the connection closes, and that ends the drain, long before its timeout.
        #expect(waitUntil { (try? fixture.client()) == nil })
        #expect(try client.readResponse().text == "slow\n")
        #expect(client.waitForClose())
        client.shutdownWrite()
        #expect(drained.wait(until: Instant.now() + .seconds(20)))
        #expect(remaining.withLock { $0 } == 0)
    }

    @Test func aDrainReturnsAtItsTimeoutWithTheConnectionsStillOpen() throws {
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send("GET /hang HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(waitUntil { fixture.upstream.server.handledRequests.load(ordering: .relaxed) == 1 })
        let started = Instant.now()
        #expect(fixture.proxy.drain(timeout: .milliseconds(500)) == 1)
        #expect(Instant.now() - started >= .milliseconds(500))
    }
}
