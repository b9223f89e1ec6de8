import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// A proxy in this process in front of a mock upstream, both on 127.0.0.1 with ports picked by the
/// kernel, and every log line captured so tests can grep them.
final class ProxyFixture {
    let upstream: MockUpstream
    let proxy: ProxyServer
    let logs = LogSink(capturing: ())

    static let token = "tok-static-9f8e7d"

    init(
        acceptedTokens: Set<String>? = [ProxyFixture.token],
        upstreamPathPrefix: String = "",
        _ configure: (inout Configuration) -> Void = { _ in }
    ) throws {
        self.upstream = MockUpstream(group: mockGroup, acceptedTokens: acceptedTokens)
        try self.upstream.start()
        var configuration = Configuration()
        configuration.listen = [.hostPort(host: "127.0.0.1", port: 0)]
        configuration.upstream = try HTTPURL.parse("http://127.0.0.1:\(self.upstream.port)\(upstreamPathPrefix)")
            .get()
        configuration.accessToken = Secret(Self.token)
        configuration.workers = 2
        // Tests name the proxy "localhost" without its port; production defaults need the port.
        configuration.acceptHosts = [.host("localhost")]
        configure(&configuration)
        self.proxy = try ProxyServer.start(configuration: configuration, logger: Logger(level: .debug, sink: self.logs))
    }

    deinit {
        self.proxy.shutdown()
        self.upstream.stop()
    }

    var address: SocketAddress { self.proxy.boundAddresses[0] }
    var port: Int { self.address.port ?? 0 }

    func client() throws -> BlockingHTTPClient {
        try BlockingHTTPClient(connectingTo: self.address)
    }

    /// One request on a fresh connection.
    func send(_ raw: String, method: HTTPMethod = .get) throws -> BlockingHTTPClient.Response {
        try httpRequest(self.address, raw, method: method)
    }

    /// `GET path` with a Host naming the proxy.
    func get(_ path: String, headers: String = "") throws -> BlockingHTTPClient.Response {
        try self.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(self.port)\r\n\(headers)\r\n")
    }

    /// Asserts the proxy still answers a plain request normally.
    func expectStillServing(sourceLocation: SourceLocation = #_sourceLocation) {
        let response = try? self.get("/still-alive")
        #expect(response?.status == 200, "the proxy stopped serving", sourceLocation: sourceLocation)
    }
}
