import BearerCore
import BearerDemo
import BearerHTTP
import BearerTestSupport
import Testing

@testable import BearerConfig

/// The token's life through the proxy, in memory and live: one refresh for a storm of 401s and the
/// replay of each request, refreshes ahead of expiry, and the token endpoint's failures.
@Suite struct WorldRefreshScenarios {
    @Test(arguments: WorldBackend.chosen)
    func aStormOf401sOverManyConnectionsCostsOneTokenCallAndReplaysEachRequestOnce(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        #expect(try world.get("/warm").status == 200)
        world.authority.revokeAll()
        let clients = try (0..<10).map { _ in try world.connect() }
        for (index, client) in clients.enumerated() {
            client.send("GET /storm/\(index) HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n")
        }
        for client in clients { #expect(try client.readResponse().status == 200) }
        #expect(world.tokenServer.callCount == 2)
        for index in 0..<10 {
            let tokens = world.upstream.requests.filter { $0.target == "/storm/\(index)" }.map {
                $0.header("authorization")
            }
            // In memory all ten meet the revoked token before any refresh; live, a late one may not.
            let expected = backend == .memory ? ["Bearer mock-access-1", "Bearer mock-access-2"] : tokens
            #expect(tokens == expected && tokens.last == "Bearer mock-access-2", "/storm/\(index): \(tokens)")
        }
    }

    @Test(arguments: WorldBackend.chosen)
    func aRefusedContentLengthUploadIsReplayedByteForByte(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        world.settle { world.session.state == "ready" }
        world.authority.revokeAll()
        let body = (0..<50_000).map { mockPatternByte($0) }
        let client = try world.connect()
        client.send("POST /echo HTTP/1.1\r\nHost: \(world.proxyHost)\r\nContent-Length: \(body.count)\r\n\r\n")
        client.send(body)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.body == body)
        #expect(world.upstreamTokens == ["mock-access-1", "mock-access-2"])
        #expect(world.upstream.requests.map(\.body) == [body, body])
    }

    @Test(arguments: WorldBackend.chosen)
    func aRefusedChunkedUploadIsReplayedByteForByte(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        world.settle { world.session.state == "ready" }
        world.authority.revokeAll()
        let client = try world.connect()
        client.send("POST /echo HTTP/1.1\r\nHost: \(world.proxyHost)\r\nTransfer-Encoding: chunked\r\n\r\n")
        client.send("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "hello world")
        #expect(world.upstreamTokens == ["mock-access-1", "mock-access-2"])
        #expect(world.upstream.requests.map(\.body) == [Array("hello world".utf8), Array("hello world".utf8)])
    }

    @Test(arguments: WorldBackend.chosen)
    func anUploadOverReplayBodyLimitGetsThe401ButTheRefreshStillHappens(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, _ in configuration.replayBodyLimit = 16 }
        world.settle { world.session.state == "ready" }
        world.authority.revokeAll()
        let body = String(repeating: "x", count: 100)
        let response = try world.send(
            "POST /echo HTTP/1.1\r\nHost: \(world.proxyHost)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        )
        #expect(response.status == 401)
        #expect(world.settle { world.tokenServer.callCount == 2 && world.session.state == "ready" })
        #expect(world.upstream.requests.count == 1)
        #expect(try world.get("/after").status == 200)
        #expect(world.upstreamTokens.last == "mock-access-2")
    }

    @Test(arguments: WorldBackend.chosen)
    func aTokenIsRefreshedAheadOfItsExpirySoNoRequestWaits(backend: WorldBackend) throws {
        let world = try TestWorld(backend, tokens: { $0.expiresIn = 4 }) { configuration, _ in
            configuration.refreshSkew = .seconds(2)
        }
        world.settle { world.session.state == "ready" }
        #expect(world.advance(by: .milliseconds(2500)) { world.tokenServer.callCount == 2 })
        #expect(world.settle { world.session.state == "ready" })
        // Answered without time moving: the request found a fresh token and did not wait.
        #expect(try world.get("/fresh").status == 200)
        #expect(world.upstreamTokens == ["mock-access-2"])
        #expect(world.session.parked == 0)
    }

    @Test(arguments: WorldBackend.chosen)
    func aRequestThatMeetsAnExpiredTokenWaitsForTheNextOne(backend: WorldBackend) throws {
        let world = try TestWorld(backend, tokens: { $0.expiresIn = 2 }) { configuration, _ in
            configuration.refreshSkew = .zero
        }
        world.settle { world.session.state == "ready" }
        world.tokenServer.update { $0.delay = .seconds(1) }
        // The token expired at 2 s; its refresh is answered at 3 s.
        #expect(world.advance(by: .milliseconds(2500)) { world.session.state == "refreshing" })
        let client = try world.connect()
        client.send("GET /late HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n")
        world.advance(by: .seconds(1))
        #expect(try client.readResponse().status == 200)
        #expect(world.upstreamTokens == ["mock-access-2"], "the expired token was sent")
    }

    @Test(arguments: WorldBackend.chosen)
    func aTransientRefreshFailureIsRetriedUntilTheEndpointAnswers(backend: WorldBackend) throws {
        let world = try TestWorld(backend, tokens: { $0.failure = .serverError })
        #expect(world.settle { world.tokenServer.callCount >= 1 })
        #expect(world.session.state != "ready")
        world.tokenServer.update { $0.failure = .none }
        #expect(world.advance(by: .seconds(6)) { world.session.state == "ready" })
        #expect(try world.get("/after").status == 200)
        #expect(world.upstreamTokens.count == 1 && world.upstreamTokens[0]?.hasPrefix("mock-access-") == true)
        #expect(world.tokenServer.callCount >= 2)
    }

    @Test(arguments: WorldBackend.chosen)
    func anUnreachableTokenEndpointFailsRequestsAtOnceWhileItIsDown(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, world in
            configuration.tokenURL = try HTTPURL.parse(try world.unreachableURL(path: "/token")).get()
            configuration.refreshTimeout = .seconds(60)
        }
        #expect(world.settle { world.session.failure != nil })
        for path in ["/a", "/b"] {
            let response = try world.get(path)
            #expect(response.status == 502)
            #expect(response.text.contains("Connection refused"), "\(response.text)")
        }
        #expect(world.upstream.requests.isEmpty)
    }

    @Test(arguments: WorldBackend.chosen)
    func invalidGrantIsA401NamingItForEveryRequestAfterOneTokenCall(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        world.settle { world.session.state == "ready" }
        world.tokenServer.update { $0.failure = .invalidGrant }
        world.authority.revokeAll()
        let clients = try (0..<2).map { _ in try world.connect() }
        for client in clients { client.send("GET /refused HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n") }
        let answers = try clients.map { try $0.readResponse() }
        let late = try world.get("/late")
        for answer in answers + [late] {
            #expect(answer.status == 401)
            #expect(answer.text == answers[0].text)
        }
        #expect(answers[0].text.contains("invalid_grant"), "\(answers[0].text)")
        #expect(world.session.state == "failed")
        #expect(world.tokenServer.callCount == 2)
    }

    @Test(arguments: WorldBackend.chosen)
    func aRetryAfterFromTheTokenEndpointIsWaitedOut(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        world.settle { world.session.state == "ready" }
        world.tokenServer.update { $0.failure = .rateLimited(retryAfterSeconds: 2) }
        world.authority.revokeAll()
        let client = try world.connect()
        client.send("GET /patient HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n")
        #expect(world.settle { world.tokenServer.callCount == 2 })
        world.tokenServer.update { $0.failure = .none }
        if backend == .memory {
            world.advance(by: .seconds(1))
            #expect(world.tokenServer.callCount == 2, "the endpoint was asked again before its Retry-After")
        }
        world.advance(by: .seconds(1) + .milliseconds(500))
        #expect(try client.readResponse().status == 200)
        #expect(world.tokenServer.callCount == 3)
        if backend == .live {
            let instants = world.tokenServer.callInstants
            #expect(instants[2] - instants[1] >= .milliseconds(1900))
        }
        #expect(world.upstreamTokens == ["mock-access-1", "mock-access-2"])
    }

    @Test(arguments: WorldBackend.chosen)
    func theStormGuardStopsRefreshingTokensThatNeverWork(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, _ in
            configuration.maxRefreshes = 2
            configuration.refreshWindow = .seconds(60)
        }
        world.settle { world.session.state == "ready" }
        // The upstream refuses this path whatever the token (a wrong audience, say).
        for _ in 0..<6 { #expect(try world.get("/status/401").status == 401) }
        #expect(world.tokenServer.callCount == 3)
    }
}
