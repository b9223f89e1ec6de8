import BearerDemo
import BearerIO
import BearerTestSupport
import Glibc
import Testing

/// SIGTERM with nothing in flight ends the process at once, whatever idle connections are open.
///
/// A client's keep-alive connection between requests (a connection pool's, Python's http.client,
/// anything that neither sends nor closes) held the drain for the whole lingering close meant for
/// error responses, `StreamConnection.lingerTimeout` (2 s): the drain half-closed it and waited for a
/// client that had no reason to answer. The bound asserted is half that wait: generous for a process
/// that has nothing left to do, and still short of the wait it replaces.
@Suite struct IdleShutdownTests {
    @Test(arguments: ["epoll", "io_uring"])
    func sigtermExitsAtOnceWithAnIdleKeepAliveConnectionOpen(io: String) throws {
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let config = temporaryFile("upstream = \(upstream.baseURL)\nlisten = 127.0.0.1:0\nio = \(io)\n")
        let proxy = try ProxyProcess(["--config", config])
        let port = try tcpPort(of: try #require(proxy.waitUntilListening()))
        let client = try BlockingHTTPClient(connectingTo: SocketAddress(ipAddress: "127.0.0.1", port: port)!)
        client.send("GET /keep-alive HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("connection") != "close", "the connection stays open for the next request")

        proxy.signal(SIGTERM)
        let status = proxy.waitForExit(timeout: StreamConnection.lingerTimeout / 2)
        #expect(
            status == 0,
            "still running \(StreamConnection.lingerTimeout / 2) after SIGTERM; stderr: \(proxy.standardError)"
        )
        #expect(proxy.standardError.contains(" info stopped"))
        #expect(client.waitForClose(), "the idle connection was closed")
    }
}
