import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy

@Suite struct ConnectTests {
    @Test func tunnelCarriesBytesBothWaysWithoutAToken() throws {
        let far = MockUpstream(group: mockGroup)
        try far.start()
        defer { far.stop() }
        let fixture = try ProxyFixture()
        let client = try fixture.client()
        client.send("CONNECT 127.0.0.1:\(far.port) HTTP/1.1\r\nHost: 127.0.0.1:\(far.port)\r\n\r\n")
        #expect(try client.readResponse(method: .connect).status == 200)
        client.send("GET /inside HTTP/1.1\r\nHost: far\r\n\r\n")
        let inside = try client.readResponse()
        #expect(inside.status == 200)
        #expect(far.requests.last?.target == "/inside")
        #expect(far.requests.last?.header("authorization") == nil, "a token went into a tunnel to another host")
        #expect(far.requests.last?.header("via") == nil, "tunnel bytes are not rewritten")
    }

    /// A CONNECT to a host no inject host matches (`localhost:PORT` for an API on `127.0.0.1:PORT`)
    /// gets the API's own certificate and no token: the first tunnel to each host:port says why,
    /// once; a CONNECT to an inject host says nothing.
    @Test func theFirstTunnelToAHostThatIsNotAnInjectHostIsLoggedOnce() throws {
        let far = MockUpstream(group: mockGroup)
        try far.start()
        defer { far.stop() }
        let fixture = try ProxyFixture()
        let other = "127.0.0.1:\(far.port)"
        let inject = "127.0.0.1:\(fixture.upstream.port)"
        for authority in [other, other, inject] {
            let response = try fixture.send(
                "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n",
                method: .connect
            )
            #expect(response.status == 200)
        }
        let logged = fixture.logs.capturedLines.filter { $0.contains("tunnelled as is") }
        #expect(logged.count == 1, "\(logged)")
        #expect(
            logged.first?.hasSuffix(
                " info CONNECT tunnelled as is (not an inject host) target=\(other) inject_hosts=\(inject)\n"
            ) == true,
            "\(logged)"
        )
    }

    /// With named sessions, the line lists every session's inject hosts, each under its name.
    @Test func theTunnelLineListsEverySessionsInjectHosts() throws {
        let far = MockUpstream(group: mockGroup)
        try far.start()
        defer { far.stop() }
        let fixture = try ProxyFixture { configuration in
            configuration.injectHosts = [.hostAndPort("127.0.0.1", 9103)]
            var github = SessionSettings(name: "github")
            github.upstream = try? HTTPURL.parse("https://api.github.com").get()
            github.injectHosts = [.host("api.github.com"), .subdomains(of: "githubusercontent.com")]
            github.accessToken = Secret("tok-github")
            configuration.sessions.append(github)
        }
        let other = "127.0.0.1:\(far.port)"
        let response = try fixture.send("CONNECT \(other) HTTP/1.1\r\nHost: \(other)\r\n\r\n", method: .connect)
        #expect(response.status == 200)
        let logged = fixture.logs.capturedLines.filter { $0.contains("tunnelled as is") }
        #expect(logged.count == 1, "\(logged)")
        #expect(
            logged.first?.hasSuffix(
                " target=\(other) inject_hosts=\"default: 127.0.0.1:9103; github: api.github.com, *.githubusercontent.com\"\n"
            ) == true,
            "\(logged)"
        )
    }

    /// Memory stays bounded: past the hosts it remembers, a new host is not logged, and a host
    /// remembered is still not logged twice.
    @Test func theTunnelLineIsSaidForAtMostCapacityHosts() {
        let tunnelled = TunnelledHosts(sessions: [])
        let origins = (0...TunnelledHosts.capacity).map { Origin(isHTTPS: false, host: "h\($0).example", port: 443) }
        #expect(origins.dropLast().allSatisfy { tunnelled.isFirstTunnel(to: $0) })
        #expect(!tunnelled.isFirstTunnel(to: origins.last!))
        #expect(!tunnelled.isFirstTunnel(to: origins[0]))
    }

    @Test func refusesTunnelsWhenOtherHostsAreDenied() throws {
        let fixture = try ProxyFixture { $0.otherHosts = .deny }
        let response = try fixture.send(
            "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n",
            method: .connect
        )
        #expect(response.status == 405)
        #expect(
            response.text
                == "bearer-proxy: CONNECT example.org:443 refused: other_hosts = deny and it is not in inject_hosts\n"
        )
        // curl, urllib and requests hide a CONNECT answer's body: the log says it.
        #expect(
            fixture.logs.capturedLines.contains {
                $0.hasSuffix(
                    " warn CONNECT refused target=example.org:443 reason=\"other_hosts = deny and it is not in inject_hosts\"\n"
                )
            }
        )
    }

    @Test func refusesATLSTunnelToAnInjectHost() throws {
        let fixture = try ProxyFixture { $0.injectHosts = [.host("api.example.com")] }
        let response = try fixture.send(
            "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n",
            method: .connect
        )
        #expect(response.status == 405)
        #expect(response.text.contains("send plain http://"))
        let logged = fixture.logs.capturedLines.filter { $0.contains(" warn CONNECT refused ") }
        #expect(logged.count == 1)
        #expect(logged.first?.contains(" target=api.example.com:443 reason=\"inside a TLS tunnel ") == true)
        #expect(logged.first?.contains("send plain http:// requests to the proxy") == true)
    }

    @Test func servesATunnelToAnInjectHostItselfAddingTheToken() throws {
        let fixture = try ProxyFixture()
        let authority = "127.0.0.1:\(fixture.upstream.port)"
        let client = try fixture.client()
        client.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(try client.readResponse(method: .connect).status == 200)
        for index in 0..<3 {
            client.send("GET /undici/\(index) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(fixture.upstream.requests.last?.target == "/undici/\(index)")
            #expect(fixture.upstream.requests.last?.header("authorization") == "Bearer \(ProxyFixture.token)")
        }
    }

    @Test func closesAServedTunnelWhenTheClientStartsTLS() throws {
        let fixture = try ProxyFixture()
        let authority = "127.0.0.1:\(fixture.upstream.port)"
        let client = try fixture.client()
        client.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(try client.readResponse(method: .connect).status == 200)
        client.send([0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5])
        #expect(client.waitForClose())
        #expect(fixture.logs.capturedLines.contains { $0.contains("started TLS inside a CONNECT tunnel") })
        fixture.expectStillServing()
    }

    @Test func aTunnelToADeadPortIs502() throws {
        let port = try ErrorPathTests.deadPort()
        let fixture = try ProxyFixture()
        let response = try fixture.send("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: x\r\n\r\n", method: .connect)
        #expect(response.status == 502)
    }

    @Test func keepsServingAfterARefusedRequestOnTheSameConnection() throws {
        let fixture = try ProxyFixture { $0.otherHosts = .deny }
        let client = try fixture.client()
        client.send("GET http://elsewhere.example/ HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n")
        #expect(try client.readResponse().status == 403)
        client.send("GET /fine HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
    }
}
