import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy

@Suite struct RequestGuardTests {
    func fixture(_ configure: @escaping (inout Configuration) -> Void = { _ in }) throws -> ProxyFixture {
        try ProxyFixture { config in
            config.acceptHosts = []
            configure(&config)
        }
    }

    @Test func answersToItsOwnNamesWithTheListenPort() throws {
        let fixture = try self.fixture()
        for host in ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"] {
            let response = try fixture.send("GET /own HTTP/1.1\r\nHost: \(host):\(fixture.port)\r\n\r\n")
            #expect(response.status == 200, "Host \(host)")
        }
    }

    @Test func refusesARebindingHostName() throws {
        let fixture = try self.fixture()
        for host in ["attacker.example:\(fixture.port)", "localhost", "127.0.0.1:1"] {
            let response = try fixture.send("GET /steal HTTP/1.1\r\nHost: \(host)\r\n\r\n")
            #expect(response.status == 403, "Host \(host)")
            #expect(response.text.contains("accept_hosts"))
        }
        #expect(fixture.upstream.requests.isEmpty, "a refused request reached the upstream")
    }

    @Test func acceptsHostsListedInAcceptHosts() throws {
        let fixture = try self.fixture { $0.acceptHosts = [.host("myapp.test"), .subdomains(of: "dev.test")] }
        #expect(try fixture.send("GET / HTTP/1.1\r\nHost: myapp.test:\(fixture.port)\r\n\r\n").status == 200)
        #expect(try fixture.send("GET / HTTP/1.1\r\nHost: api.dev.test\r\n\r\n").status == 200)
        #expect(try fixture.send("GET / HTTP/1.1\r\nHost: other.test\r\n\r\n").status == 403)
    }

    @Test func refusesBrowserRequestsFromOtherSites() throws {
        let fixture = try self.fixture()
        let host = "Host: 127.0.0.1:\(fixture.port)\r\n"
        let fromPage = try fixture.send(
            "POST /transfer HTTP/1.1\r\n\(host)Origin: https://evil.example\r\nContent-Length: 0\r\n\r\n"
        )
        #expect(fromPage.status == 403)
        #expect(fromPage.text.contains("accept_origins"))
        let noCors = try fixture.send("GET /img HTTP/1.1\r\n\(host)Sec-Fetch-Site: cross-site\r\n\r\n")
        #expect(noCors.status == 403)
        let sameSite = try fixture.send("GET /img HTTP/1.1\r\n\(host)Sec-Fetch-Site: same-site\r\n\r\n")
        #expect(sameSite.status == 403)
        let typedIntoTheBar = try fixture.send("GET /page HTTP/1.1\r\n\(host)Sec-Fetch-Site: none\r\n\r\n")
        #expect(typedIntoTheBar.status == 200)
        let absolute = try fixture.send(
            "GET http://127.0.0.1:\(fixture.upstream.port)/x HTTP/1.1\r\nHost: 127.0.0.1:\(fixture.upstream.port)\r\nOrigin: http://evil.example\r\n\r\n"
        )
        #expect(absolute.status == 403, "absolute-form requests follow the Origin rule too")
        #expect(fixture.upstream.requests.map(\.target) == ["/page"], "a refused request reached the upstream")
    }

    @Test func allowsOriginsListedInAcceptOrigins() throws {
        let fixture = try self.fixture { $0.acceptOrigins = ["http://localhost:3000"] }
        let response = try fixture.send(
            "GET /api HTTP/1.1\r\nHost: 127.0.0.1:\(fixture.port)\r\nOrigin: http://LOCALHOST:3000\r\nSec-Fetch-Site: same-site\r\n\r\n"
        )
        #expect(response.status == 200)
    }

    @Test func aUnixSocketAcceptsAnyHost() throws {
        let path = try ScratchSpace.newPath("guard.sock")
        let fixture = try self.fixture { $0.listen = [.unix(path: path)] }
        let response = try httpRequest(.unix(path: path), "GET /x HTTP/1.1\r\nHost: my-service.docker.internal\r\n\r\n")
        #expect(response.status == 200)
        _ = fixture
    }
}
