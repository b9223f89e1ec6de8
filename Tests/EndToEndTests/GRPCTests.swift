import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Testing

/// gRPC through the built binary with grpcio on both ends (Tests/Fixtures/grpc): the client speaks
/// h2c to the proxy with no auth code (or TLS through `https_proxy` and interception), the server
/// requires the current token (as the mock API judges it) and answers UNAUTHENTICATED Trailers-Only
/// otherwise, in h2c or over TLS (docs/grpc.md).
@Suite(.requires(.pythonGRPC), .requires(.curl)) struct GRPCTests {
    final class Setup {
        let authority = MockTokenAuthority()
        let tokenServer: MockTokenServer
        let backend: MockUpstream
        let server: GRPCServer
        let proxy: ProxyProcess
        let port: Int
        /// Where an intercepting proxy keeps its CA (`ca.pem`, which the client trusts).
        let caDirectory: String
        let upstream: Upstream

        /// `upstream`: how the proxy reaches the gRPC server: `h2c`, `tls` (`https://127.0.0.1`)
        /// or `intercepted` (`https://localhost`, with tls_intercept on for clients that come
        /// through `https_proxy`).
        init(_ lines: String = "", http2: String = "on", upstream: Upstream = .h2c) throws {
            self.tokenServer = MockTokenServer(group: e2eMockGroup, authority: self.authority)
            try self.tokenServer.start()
            self.backend = MockUpstream(group: e2eMockGroup, authority: self.authority)
            try self.backend.start()
            let directory = temporaryDirectory()
            self.caDirectory = directory + "/ca"
            self.upstream = upstream
            self.server = try GRPCServer(
                checkURL: "http://127.0.0.1:\(self.backend.server.port)/whoami",
                directory: directory,
                tls: upstream != .h2c
            )
            let address =
                switch upstream {
                case .h2c: "http://127.0.0.1:\(self.server.port)"
                case .tls: "https://127.0.0.1:\(self.server.port)\nca_file = \(TLSFixtures.caFile)"
                case .intercepted:
                    "https://localhost:\(self.server.port)\nca_file = \(TLSFixtures.caFile)\n"
                        + "tls_intercept = on\nca_dir = \(self.caDirectory)"
                }
            let config = temporaryFile(
                """
                listen = 127.0.0.1:0
                upstream = \(address)
                upstream_http2 = \(http2)
                token_url = \(self.tokenServer.url)
                client_id = e2e-client
                client_secret = e2e-secret
                admin_listen = 127.0.0.1:0
                access_log = stderr
                \(lines)
                """
            )
            self.proxy = try ProxyProcess(["--config", config])
            let listening = try #require(self.proxy.waitUntilListening())
            self.port = try tcpPort(of: listening)
        }

        enum Upstream: Sendable { case h2c, tls, intercepted }

        func call(
            _ method: String,
            count: Int = 1,
            authorization: String? = nil,
            firstMessage: Int? = nil
        ) throws -> [String] {
            try GRPCServer.call(
                "127.0.0.1:\(self.port)",
                method,
                count: count,
                authorization: authorization,
                firstMessage: firstMessage
            )
        }

        /// `count` unary calls; through an intercepted upstream, from a client that honours
        /// `https_proxy` (this proxy) on a TLS channel to the gRPC server's own address, trusting the
        /// proxy's CA.
        func unaryCalls(_ count: Int) throws -> [String] {
            guard self.upstream == .intercepted else { return try self.call("/test.Echo/Unary", count: count) }
            return try GRPCServer.call(
                "localhost:\(self.server.port)",
                "/test.Echo/Unary",
                count: count,
                trusting: self.caDirectory + "/ca.pem",
                environment: ["https_proxy": "http://127.0.0.1:\(self.port)", "PATH": "/usr/bin:/bin"]
            )
        }

        /// One call with the first token, then every token revoked and `count` concurrent calls:
        /// their answers, and the token calls they cost.
        func unaryCallsAfterARevocation(_ count: Int) throws -> (answers: [String], tokenCalls: Int) {
            #expect(try self.unaryCalls(1) == ["OK authorization=Bearer mock-access-1 call-0"])
            let before = self.tokenServer.callCount
            self.authority.revokeAll()
            let answers = try self.unaryCalls(count)
            return (answers, self.tokenServer.callCount - before)
        }

        /// The admin listener's `/metrics`.
        func metrics() throws -> String {
            let admin = try #require(word(startingWith: "admin=", in: self.proxy.standardError))
            let url = "http://\(admin.dropFirst("admin=".count))/metrics"
            return try ExternalTools.run([ExternalTools.curl, "-sS", url], timeout: .seconds(10)).standardOutput
        }

        /// Ends it all; the proxy's stderr, read whole after it exited.
        @discardableResult func stop() -> String {
            self.server.stop()
            self.proxy.signal(SIGTERM)
            #expect(self.proxy.waitForExit() == 0)
            self.backend.stop()
            self.tokenServer.stop()
            return self.proxy.standardError
        }

        /// The access log's lines for calls of `method`.
        static func accessLines(_ stderr: String, _ method: String) -> [String] {
            stderr.split(separator: "\n").map(String.init).filter {
                $0.contains(" request ") && $0.contains("path=\(method) ")
            }
        }
    }

    /// A unary call with no auth code reaches the server with the token, once.
    /// The access log names the method (`path=`) and the call's final `grpc-status`.
    @Test func aUnaryCallGetsTheToken() throws {
        let setup = try Setup()
        let answers = try setup.call("/test.Echo/Unary")
        let stderr = setup.stop()
        #expect(answers == ["OK authorization=Bearer mock-access-1 call-0"])
        let lines = Setup.accessLines(stderr, "/test.Echo/Unary")
        #expect(lines.count == 1 && lines[0].contains(" protocol=h2 grpc_status=0"), "\(lines)")
    }

    /// The client's own `authorization` metadata is replaced, never sent beside the token.
    @Test func theClientsOwnAuthorizationIsReplaced() throws {
        let setup = try Setup()
        let answers = try setup.call("/test.Echo/Unary", authorization: "Bearer the-clients-own")
        setup.stop()
        #expect(answers == ["OK authorization=Bearer mock-access-1 call-0"])
    }

    /// The point: a revocation under 200 concurrent unary calls (one client connection, room for
    /// them all: max_concurrent_streams = 256) costs one token call, each call the server refused
    /// (UNAUTHENTICATED, Trailers-Only) is replayed once with the new token, and every call is OK;
    /// none saw the refusal.
    @Test func aRevocationUnderConcurrentUnaryCallsCostsOneTokenCall() throws {
        let setup = try Setup("max_concurrent_streams = 256")
        let (answers, calls) = try setup.unaryCallsAfterARevocation(200)
        let rejected = setup.backend.rejected.load(ordering: .relaxed)
        setup.stop()
        #expect(answers == (0..<200).map { "OK authorization=Bearer mock-access-2 call-\($0)" })
        #expect(calls == 1)
        #expect((1...200).contains(rejected), "each call the server refused is replayed once: \(rejected)")
    }

    /// gRPC to a TLS upstream (ALPN h2, chosen by `upstream_http2 = auto`; were it not, the calls
    /// would end UNAVAILABLE naming the key): `https://127.0.0.1` as the base URL, and
    /// `https://localhost` reached by a grpcio client that honours `https_proxy` (CONNECT to the
    /// proxy, TLS inside the tunnel offering ALPN h2, the proxy's CA trusted) through an intercepted
    /// tunnel. The token goes on, and a revocation under 50 calls costs one token call, every call OK.
    @Test(arguments: [Setup.Upstream.tls, .intercepted])
    func aTLSUpstreamGetsTheTokenAndARevocationCostsOneTokenCall(upstream: Setup.Upstream) throws {
        let setup = try Setup(http2: "auto", upstream: upstream)
        let (answers, calls) = try setup.unaryCallsAfterARevocation(50)
        let rejected = setup.backend.rejected.load(ordering: .relaxed)
        let lines = Setup.accessLines(setup.stop(), "/test.Echo/Unary")
        #expect(answers == (0..<50).map { "OK authorization=Bearer mock-access-2 call-\($0)" })
        #expect(calls == 1)
        #expect(rejected >= 1)
        #expect(lines.count == 51 && lines.allSatisfy { $0.contains(" protocol=h2 grpc_status=0") }, "\(lines)")
    }

    /// A bidi call refused after its first message, while the client still streams (it sent two
    /// messages and waits for their answers before the third; the token endpoint takes 1 s, so
    /// they wait with the call): replayed with what was sent, and every message is answered
    /// once, in order, with the new token. Past replay_body_limit (a 32 KiB first message over
    /// 16 KiB) the server's UNAUTHENTICATED passes through.
    @Test(arguments: [
        (
            "", Optional<Int>.none,
            "OK authorization=Bearer mock-access-2 call-0.0 / authorization=Bearer mock-access-2 call-0.1"
                + " / authorization=Bearer mock-access-2 call-0.2"
        ),
        ("replay_body_limit = 16KiB", 32768, "UNAUTHENTICATED token refused"),
    ])
    func aBidiCallIsReplayedWhileWhatWasSentFitsTheLimit(limit: String, first: Int?, answer: String) throws {
        let setup = try Setup(limit)
        #expect(try setup.call("/test.Echo/Unary").count == 1)
        setup.tokenServer.update { $0.delay = .seconds(1) }
        setup.authority.revokeAll()
        let answers = try setup.call("/test.Echo/Chat", firstMessage: first)
        let after = try setup.call("/test.Echo/Unary")
        setup.stop()
        #expect(answers == [answer])
        #expect(after == ["OK authorization=Bearer mock-access-2 call-0"])
    }

    /// A server-streaming call refused Trailers-Only is replayed: the client gets every message.
    @Test func aServerStreamingCallIsReplayed() throws {
        let setup = try Setup()
        #expect(try setup.call("/test.Echo/Unary").count == 1)
        setup.authority.revokeAll()
        let answers = try setup.call("/test.Echo/Stream")
        let rejected = setup.backend.rejected.load(ordering: .relaxed)
        setup.stop()
        let seen = "authorization=Bearer mock-access-2"
        #expect(answers == ["OK part 0 \(seen) / part 1 \(seen) / part 2 \(seen)"])
        #expect(rejected == 1)
    }

    /// UNAUTHENTICATED in trailers after a message reached the client cannot be replayed: it reaches
    /// the client as is, and is counted.
    @Test func unauthenticatedAfterDataPassesThroughAndIsCounted() throws {
        let setup = try Setup()
        let answers = try setup.call("/test.Echo/Late")
        let metrics = try setup.metrics()
        let lines = Setup.accessLines(setup.stop(), "/test.Echo/Late")
        #expect(answers == ["UNAUTHENTICATED refused after data"])
        #expect(lines.count == 1 && lines[0].hasSuffix(" grpc_status=16"), "\(lines)")
        #expect(metrics.contains("bearer_proxy_grpc_unauthenticated_unreplayable_total 1\n"))
    }

    /// `refresh_on` without `grpc-unauthenticated`: UNAUTHENTICATED reaches the client and starts
    /// no refresh.
    @Test func refreshOnWithoutGRPCUnauthenticatedPassesItThrough() throws {
        let setup = try Setup("refresh_on = 401")
        #expect(try setup.call("/test.Echo/Unary").count == 1)
        let callsBefore = setup.tokenServer.callCount
        setup.authority.revokeAll()
        let answers = try setup.call("/test.Echo/Unary")
        let calls = setup.tokenServer.callCount - callsBefore
        let lines = Setup.accessLines(setup.stop(), "/test.Echo/Unary")
        #expect(answers == ["UNAUTHENTICATED token refused"])
        #expect(lines.count == 2 && lines[1].hasSuffix(" grpc_status=16"), "\(lines)")
        #expect(calls == 0)
    }

    /// A refresh that fails ends the parked call the gRPC way, Trailers-Only, with the sentence a
    /// local answer's body would carry: refused for good (invalid_grant), UNAUTHENTICATED naming the
    /// OAuth error; transient (the token endpoint answers 500 until refresh_timeout), UNAVAILABLE,
    /// which gRPC clients may retry.
    @Test(arguments: [
        (MockTokenServer.Failure.invalidGrant, "UNAUTHENTICATED bearer-proxy: ", "invalid_grant"),
        (MockTokenServer.Failure.serverError, "UNAVAILABLE bearer-proxy: ", "bearer-proxy: "),
    ])
    func aFailedRefreshEndsTheCallTheGRPCWay(failure: MockTokenServer.Failure, prefix: String, names: String) throws {
        let setup = try Setup("refresh_timeout = 1s")
        #expect(try setup.call("/test.Echo/Unary").count == 1)
        setup.tokenServer.update { $0.failure = failure }
        setup.authority.revokeAll()
        let answers = try setup.call("/test.Echo/Unary")
        setup.stop()
        #expect(answers.count == 1)
        #expect(answers.first?.hasPrefix(prefix) == true, "\(answers)")
        #expect(answers.first?.contains(names) == true, "\(answers)")
    }

    /// upstream_http2 = off: the call cannot go over HTTP/1.1, and ends at once with UNAVAILABLE
    /// naming the key; nothing reached the server.
    @Test func anUpstreamSpokenToInHTTP1EndsTheCallUnavailableNamingTheKey() throws {
        let setup = try Setup(http2: "off")
        let answers = try setup.call("/test.Echo/Unary")
        let checked = setup.backend.requests.count
        let lines = Setup.accessLines(setup.stop(), "/test.Echo/Unary")
        #expect(lines.count == 1 && lines[0].contains(" status=502 ") && lines[0].hasSuffix(" grpc_status=14"))
        #expect(lines.first?.contains(" bytes=0 ") == true, "the body sent is empty: \(lines)")
        #expect(answers.count == 1)
        #expect(answers.first?.hasPrefix("UNAVAILABLE bearer-proxy: a gRPC call needs HTTP/2") == true, "\(answers)")
        #expect(answers.first?.contains("upstream_http2 = on") == true, "\(answers)")
        #expect(checked == 0)
    }

    /// The deadline goes on less the time the call waited for the refresh: the token endpoint takes
    /// 3 s to answer, and the replay reaches the server with at most 27 of the client's 30 s left
    /// (29 when passed on unchanged).
    @Test func theDeadlineGoesOnLessTheTimeSpentWaitingForTheRefresh() throws {
        let setup = try Setup()
        #expect(try setup.call("/test.Echo/Deadline").first.map { ["OK 29", "OK 28"].contains($0) } == true)
        setup.tokenServer.update { $0.delay = .seconds(3) }
        setup.authority.revokeAll()
        let answers = try setup.call("/test.Echo/Deadline")
        setup.stop()
        let left = try #require(answers.first.flatMap { Int($0.dropFirst(3)) }, "\(answers)")
        #expect((20...27).contains(left), "\(answers)")
    }

    /// A client-streaming call is replayed while what it sent fits replay_body_limit: 64 KiB of
    /// messages are replayed under the default 1 MiB, and passed through (UNAUTHENTICATED, the
    /// server's own answer) past a 16 KiB limit, where the refresh still runs for the calls after it.
    @Test(arguments: [
        ("", "OK authorization=Bearer mock-access-2 65536 bytes"),
        ("replay_body_limit = 16KiB", "UNAUTHENTICATED token refused"),
    ])
    func aClientStreamingCallIsReplayedWhileItFitsTheLimit(limit: String, answer: String) throws {
        let setup = try Setup(limit)
        #expect(try setup.call("/test.Echo/Unary").count == 1)
        setup.authority.revokeAll()
        let answers = try setup.call("/test.Echo/Upload")
        let after = try setup.call("/test.Echo/Unary")
        setup.stop()
        #expect(answers == [answer])
        #expect(after == ["OK authorization=Bearer mock-access-2 call-0"])
    }
}
