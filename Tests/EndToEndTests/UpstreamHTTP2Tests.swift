import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Testing

/// `upstream_http2` through the built binary, against a real HTTP/2 server (python3-h2's, in front
/// of a mock API that checks the tokens): what protocol the server saw, on which connection and
/// stream, comes back in its `x-front-*` fields.
@Suite struct UpstreamHTTP2Tests {
    final class Setup {
        let authority = MockTokenAuthority()
        let tokenServer: MockTokenServer
        let backend: MockUpstream
        let front: H2FrontServer
        let proxy: ProxyProcess
        let port: Int

        /// `upstream`: the front's URL is made from it (`http` or `https`, host, the front's port).
        init(
            _ setting: String,
            scheme: String = "http",
            tls: Bool = false,
            alpn: String = "h2,http/1.1",
            maxStreams: Int? = nil
        ) throws {
            self.tokenServer = MockTokenServer(group: e2eMockGroup, authority: self.authority)
            try self.tokenServer.start()
            self.backend = MockUpstream(group: e2eMockGroup, authority: self.authority)
            try self.backend.start()
            self.front = try H2FrontServer(
                backendPort: self.backend.server.port,
                tls: tls,
                alpn: alpn,
                maxStreams: maxStreams
            )
            let host = tls ? "localhost" : "127.0.0.1"
            let config = temporaryFile(
                """
                listen = 127.0.0.1:0
                upstream = \(scheme)://\(host):\(self.front.port)
                \(tls ? "ca_file = \(TLSFixtures.caFile)" : "")
                token_url = \(self.tokenServer.url)
                client_id = e2e-client
                client_secret = e2e-secret
                workers = 1
                admin_listen = 127.0.0.1:0
                \(setting)
                """
            )
            self.proxy = try ProxyProcess(["--config", config])
            let listening = try #require(self.proxy.waitUntilListening())
            self.port = try tcpPort(of: listening)
        }

        /// `curl` with each URL a path on the proxy, in parallel; one line per transfer: the status
        /// and the front's fields.
        func get(_ paths: [String], _ options: [String] = []) throws -> [String] {
            var arguments = [ExternalTools.curl, "-sS", "--max-time", "20", "-Z", "--parallel-immediate"] + options
            arguments += ["-w", "%{http_code} %header{x-front-protocol} %header{x-front-connection}\n"]
            for path in paths { arguments += ["-o", "/dev/null", "http://127.0.0.1:\(self.port)\(path)"] }
            let outcome = try ExternalTools.run(arguments, timeout: .seconds(30))
            return outcome.standardOutput.split(separator: "\n").map(String.init)
        }

        func metrics() throws -> String {
            let admin = try #require(word(startingWith: "admin=", in: self.proxy.standardError)?.dropFirst(6))
            return try ExternalTools.run([ExternalTools.curl, "-sS", "http://\(admin)/metrics"], timeout: .seconds(10))
                .standardOutput
        }

        func stop() -> String {
            self.proxy.signal(SIGTERM)
            _ = self.proxy.waitForExit()
            self.front.stop()
            self.backend.stop()
            self.tokenServer.stop()
            return self.proxy.standardError
        }
    }

    /// `on` with an `http://` upstream: HTTP/2 with prior knowledge, the token added (as the mock
    /// API checked it), for an HTTP/1.1 client and an HTTP/2 one alike, on one connection; the
    /// client's `TE: trailers` reaches the server (which passes on what it saw as `x-front-te`).
    /// Both I/O backends.
    @Test(.requires(.pythonH2), .requires(.curl), arguments: ["io_uring", "epoll"])
    func onSpeaksPriorKnowledgeToAnHTTPUpstreamWithTheToken(io: String) throws {
        let setup = try Setup("upstream_http2 = on\nio = \(io)")
        let overHTTP1 = try setup.get(["/whoami"], ["-H", "TE: trailers"])
        let overHTTP2 = try setup.get(["/whoami"], ["--http2-prior-knowledge"])
        let recorded = setup.backend.requests
        _ = setup.stop()
        #expect(overHTTP1 == ["200 h2 1"])
        #expect(overHTTP2 == ["200 h2 1"])
        #expect(recorded.count == 2)
        #expect(recorded.allSatisfy { $0.header("authorization")?.hasPrefix("Bearer mock-access-") == true })
        #expect(recorded.map { $0.header("x-front-te") } == ["trailers", "-"])
    }

    /// The point of it all: a 401 from the h2 upstream under concurrent streams costs one token call,
    /// and each stream is replayed once and answered 200; the streams shared one connection. Both
    /// I/O backends.
    @Test(.requires(.pythonH2), .requires(.curl), arguments: ["io_uring", "epoll"])
    func aRevocationUnderConcurrentStreamsCostsOneTokenCall(io: String) throws {
        let setup = try Setup("upstream_http2 = on\nio = \(io)")
        #expect(try setup.get(["/whoami"]) == ["200 h2 1"])
        let callsBefore = setup.tokenServer.callCount
        let acceptedBefore = setup.backend.accepted.load(ordering: .relaxed)
        setup.authority.revokeAll()
        let answers = try setup.get(Array(repeating: "/whoami", count: 8))
        let calls = setup.tokenServer.callCount - callsBefore
        let accepted = setup.backend.accepted.load(ordering: .relaxed) - acceptedBefore
        let rejected = setup.backend.rejected.load(ordering: .relaxed)
        _ = setup.stop()
        #expect(answers == Array(repeating: "200 h2 1", count: 8))
        #expect(calls == 1)
        #expect(accepted == 8)
        #expect((1...8).contains(rejected), "each stream the upstream refused is replayed once: \(rejected)")
    }

    /// A POST body larger than the stream windows (so both sides' WINDOW_UPDATEs carry it) reaches
    /// the h2 upstream and is replayed byte for byte after its 401; a response larger than this
    /// side's windows comes back whole.
    @Test(.requires(.pythonH2), .requires(.curl)) func largeBodiesCrossTheWindowsAndTheReplay() throws {
        let setup = try Setup("upstream_http2 = on")
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let file = temporaryDirectory() + "/body"
        try Data(body).write(to: URL(fileURLWithPath: file))
        let echoed = file + ".echoed"
        #expect(try setup.get(["/whoami"]) == ["200 h2 1"])
        let callsBefore = setup.tokenServer.callCount
        setup.authority.revokeAll()
        let post = try ExternalTools.run(
            [
                ExternalTools.curl, "-sS", "--max-time", "20", "--data-binary", "@\(file)", "-o", echoed, "-w",
                "%{http_code}", "http://127.0.0.1:\(setup.port)/echo",
            ],
            timeout: .seconds(30)
        )
        let large = try ExternalTools.run(
            [
                ExternalTools.curl, "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                "http://127.0.0.1:\(setup.port)/bytes/3000000",
            ],
            timeout: .seconds(30)
        )
        let calls = setup.tokenServer.callCount - callsBefore
        _ = setup.stop()
        #expect(post.standardOutput == "200", "\(post.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: echoed)) == Data(body))
        #expect(calls == 1)
        #expect(large.standardOutput == "200 3000000", "\(large.standardError)")
    }

    /// A stream an HTTP/2 client resets (python3-h2, by hand) is reset towards the h2 upstream
    /// too: the server hears RST_STREAM for the stream it was answering (RFC 9113 §8.1: a client's
    /// reset cancels the upstream's work).
    @Test(.requires(.pythonH2), .requires(.curl)) func aStreamTheClientResetsIsResetUpstream() throws {
        let setup = try Setup("upstream_http2 = on")
        let client = HTTP2StreamControlTests.Client(
            HTTP2StreamControlTests.Client.resetAfterResume("/slow/5000"),
            port: setup.port
        )
        #expect(waitUntil { setup.backend.requests.count == 1 })
        client.resume()
        let outcome = client.finish()
        let reset = waitUntil {
            let answer = try? ExternalTools.run(
                [ExternalTools.curl, "-sS", "--max-time", "5", "http://127.0.0.1:\(setup.port)/front-resets"],
                timeout: .seconds(10)
            )
            return answer?.standardOutput == "1"
        }
        _ = setup.stop()
        #expect(outcome?.status == 0, "\(outcome?.standardError ?? "no outcome")")
        #expect(reset, "the upstream heard no RST_STREAM")
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS holds: 8 concurrent slow requests against a
    /// server that allows 2 streams at once are all answered, and it refused none.
    @Test(.requires(.pythonH2), .requires(.curl)) func theServersConcurrentStreamLimitIsHonoured() throws {
        let setup = try Setup("upstream_http2 = on", maxStreams: 2)
        let answers = try setup.get(Array(repeating: "/slow/300", count: 8))
        let refused = try ExternalTools.run(
            [ExternalTools.curl, "-sS", "--max-time", "20", "http://127.0.0.1:\(setup.port)/front-refused"],
            timeout: .seconds(30)
        )
        _ = setup.stop()
        #expect(answers.count == 8)
        #expect(answers.allSatisfy { $0.hasPrefix("200 h2 ") }, "\(answers)")
        #expect(refused.standardOutput == "0")
    }

    /// `auto` offers ALPN `h2, http/1.1` to an https upstream and speaks what it chose; `off` offers
    /// http/1.1 alone.
    @Test(
        .requires(.pythonH2),
        .requires(.curl),
        arguments: [
            ("upstream_http2 = auto", "h2,http/1.1", "200 h2 1"),
            ("upstream_http2 = auto", "http/1.1", "200 http/1.1 1"),
            ("upstream_http2 = off", "h2,http/1.1", "200 http/1.1 1"),
        ]
    )
    func alpnChoosesTheProtocolOfAnHTTPSUpstream(setting: String, alpn: String, expected: String) throws {
        let setup = try Setup(setting, scheme: "https", tls: true, alpn: alpn)
        let first = try setup.get(["/whoami"])
        let second = try setup.get(["/whoami"])
        _ = setup.stop()
        #expect(first == [expected])
        #expect(second == [expected], "the second request reuses the connection")
    }

    /// `auto` leaves an `http://` upstream in HTTP/1.1 (no prior knowledge).
    @Test(.requires(.pythonH2), .requires(.curl)) func autoSpeaksHTTP1ToAnHTTPUpstream() throws {
        let setup = try Setup("")
        let answers = try setup.get(["/whoami"])
        _ = setup.stop()
        #expect(answers == ["200 http/1.1 1"])
    }

    /// A server that sends GOAWAY and closes mid-request is a 502 naming it; the next request goes
    /// on a new connection.
    @Test(.requires(.pythonH2), .requires(.curl)) func aGoAwayMidRequestIsA502AndTheNextRequestGetsANewConnection()
        throws
    {
        let setup = try Setup("upstream_http2 = on")
        let body = try ExternalTools.run(
            [
                ExternalTools.curl, "-sS", "--max-time", "20", "-w", "\n%{http_code}",
                "http://127.0.0.1:\(setup.port)/goaway",
            ],
            timeout: .seconds(30)
        )
        let next = try setup.get(["/whoami"])
        _ = setup.stop()
        #expect(body.standardOutput.hasSuffix("reset the connection\n\n502"), "\(body.standardOutput)")
        #expect(body.standardOutput.hasPrefix("bearer-proxy: upstream 127.0.0.1:"))
        #expect(next == ["200 h2 2"])
    }

    /// An h2 upstream that is not there is a 502 naming it and why, as over HTTP/1.1.
    @Test(.requires(.pythonH2), .requires(.curl)) func aDeadUpstreamIsA502WithItsReason() throws {
        let setup = try Setup("upstream_http2 = on")
        setup.front.stop()
        let outcome = try ExternalTools.run(
            [
                ExternalTools.curl, "-sS", "--max-time", "20", "-w", "\n%{http_code}",
                "http://127.0.0.1:\(setup.port)/whoami",
            ],
            timeout: .seconds(30)
        )
        _ = setup.stop()
        let lines = outcome.standardOutput.split(separator: "\n")
        #expect(lines.count == 2, "\(outcome.standardOutput)")
        #expect(lines.first?.contains("cannot connect") == true, "\(outcome.standardOutput)")
        #expect(lines.last == "502")
    }

    /// An upstream that never answers the preface with SETTINGS (no HTTP/2 server: here a socket
    /// nobody accepts on) is given up after upstream_connect_timeout: a 502, and a warning that
    /// says what `upstream_http2 = on` does.
    @Test(.requires(.curl)) func anUpstreamThatNeverAnswersThePrefaceIsA502() throws {
        let fd = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        defer { Socket.close(fd) }
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            upstream = http://127.0.0.1:\(Socket.localAddress(fd)!.port!)
            access_token = static-token
            upstream_http2 = on
            upstream_connect_timeout = 1s
            """
        )
        let proxy = try ProxyProcess(["--config", config])
        let port = try tcpPort(of: try #require(proxy.waitUntilListening()))
        let outcome = try ExternalTools.run(
            [ExternalTools.curl, "-sS", "--max-time", "20", "-w", "\n%{http_code}", "http://127.0.0.1:\(port)/"],
            timeout: .seconds(30)
        )
        proxy.signal(SIGTERM)
        _ = proxy.waitForExit()
        #expect(outcome.standardOutput.hasSuffix("reset the connection\n\n502"), "\(outcome.standardOutput)")
        #expect(proxy.standardError.contains("upstream did not answer the HTTP/2 preface with SETTINGS"))
    }

    /// Response trailers from the h2 upstream reach an HTTP/2 client as trailers (nghttp prints
    /// the last HEADERS, with END_STREAM, after the DATA) and an HTTP/1.1 client that sent `TE:
    /// trailers` in the chunked body's trailer section; a client that did not gets the body whole,
    /// and the trailers are counted as dropped.
    @Test(.requires(.pythonH2), .requires(.curl), .requires(.h2load))
    func trailersFromTheUpstreamReachClientsThatTakeThem() throws {
        let setup = try Setup("upstream_http2 = on")
        let url = "http://127.0.0.1:\(setup.port)/trailers"
        let overHTTP2 = try ExternalTools.run(["/usr/bin/nghttp", "-v", "--timeout=20", url], timeout: .seconds(30))
        let withTE = try ExternalTools.run(
            [ExternalTools.curl, "-sS", "--max-time", "20", "--raw", "-H", "TE: trailers", url],
            timeout: .seconds(30)
        )
        let withoutTE = try ExternalTools.run(
            [ExternalTools.curl, "-sS", "--max-time", "20", url],
            timeout: .seconds(30)
        )
        let metrics = try setup.metrics()
        _ = setup.stop()
        let frames = overHTTP2.standardOutput
        let data = try #require(frames.range(of: "recv DATA frame <length=21"), "\(frames)")
        let trailer = try #require(frames.range(of: "recv (stream_id=13) grpc-status: 0"), "\(frames)")
        #expect(data.upperBound < trailer.lowerBound)
        #expect(frames[trailer.upperBound...].contains("recv HEADERS frame <length=27, flags=0x05, stream_id=13>"))
        #expect(
            withTE.standardOutput.hasSuffix(
                "body before trailers\n\r\n0\r\ngrpc-status: 0\r\ngrpc-message: done\r\n\r\n"
            ),
            "\(withTE.standardOutput)"
        )
        #expect(withoutTE.standardOutput == "body before trailers\n")
        #expect(metrics.contains("bearer_proxy_trailers_dropped_total 1"), "\(metrics)")
    }
}
