import BearerCore
import BearerIO
import BearerTestSupport
import Dispatch
import Glibc
import Testing

/// HTTP/2's own controls through the built binary: a stream a hand-made client (python3-h2) resets,
/// one beyond max_concurrent_streams, and a shutdown's GOAWAY with a stream in flight (nghttp, which
/// reads on after a GOAWAY).
@Suite struct HTTP2StreamControlTests {
    /// An HTTP/2 client run in the background, which the test steers: `resume()` sends the line it
    /// waits for on its input.
    final class Client: Sendable {
        private let input = makeClosingPipe()
        private let done = DispatchSemaphore(value: 0)
        private let outcome = Locked<ProgramOutcome?>(nil)

        /// A python3-h2 `script` after the shared opening, with the proxy's port as sys.argv[1].
        convenience init(_ script: String, port: Int) {
            self.init(program: [ExternalTool.pythonH2.program, "-c", Self.opening + script, String(port)])
        }

        init(program: [String]) {
            let stdin = self.input.read
            DispatchQueue.global().async { [outcome, done] in
                let result = try? runProgram(program, stdin: stdin, timeout: .seconds(30))
                outcome.withLock { $0 = result }
                done.signal()
            }
        }

        func resume() { _ = write(self.input.write, "\n", 1) }

        /// A script that opens stream 1 with `GET path`, resets it (CANCEL) once resumed, and exits 0
        /// when the PING sent after the reset is acknowledged (the connection went on).
        static func resetAfterResume(_ path: String) -> String {
            """
            get(c, 1, "\(path)")
            sys.stdin.readline()
            c.reset_stream(1, error_code=8)
            c.ping(b"12345678")
            send(c)
            while (found := events(c)) is not None:
                if any(isinstance(e, h2.events.PingAckReceived) for e in found): sys.exit(0)
                send(c)
            sys.exit(3)
            """
        }

        /// Waits (bounded) for the client to end.
        func finish() -> ProgramOutcome? {
            close(self.input.write)
            _ = self.done.wait(timeout: .now() + .seconds(40))
            return self.outcome.withLock { $0 }
        }

        /// A connection with prior knowledge; `send(c)` writes what h2 has to send; `events(c)`
        /// reads the next events (none: the proxy closed).
        static let opening = """
            import socket, sys, h2.connection, h2.config, h2.events
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
            c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
            c.initiate_connection()
            def send(c): s.sendall(c.data_to_send())
            def events(c):
                data = s.recv(65536)
                return c.receive_data(data) if data else None
            def get(c, stream, path):
                headers = [(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "127.0.0.1:" + sys.argv[1])]
                c.send_headers(stream, headers, end_stream=True)
                send(c)

            """
    }

    @Test(.requires(.pythonH2)) func aStreamTheClientResetsClosesItsUpstreamRequest() throws {
        let setup = try HTTP2PriorKnowledgeTests.Setup()
        let client = Client(Client.resetAfterResume("/hang"), port: setup.port)
        #expect(waitUntil { setup.upstream.requests.count == 1 })
        #expect(setup.upstream.server.openConnections == 1)
        client.resume()
        let outcome = client.finish()
        #expect(outcome?.status == 0, "\(outcome?.standardError ?? "no outcome")")
        #expect(waitUntil { setup.upstream.server.openConnections == 0 })
        _ = setup.stop()
    }

    @Test(.requires(.pythonH2)) func aStreamBeyondMaxConcurrentStreamsIsRefused() throws {
        let setup = try HTTP2PriorKnowledgeTests.Setup("max_concurrent_streams = 1")
        let client = Client(
            """
            get(c, 1, "/hang")
            get(c, 3, "/whoami")
            while (found := events(c)) is not None:
                for e in found:
                    if isinstance(e, h2.events.RemoteSettingsChanged):
                        print("max", e.changed_settings[3].new_value, flush=True)
                    if isinstance(e, h2.events.StreamReset):
                        print("reset", e.stream_id, int(e.error_code), flush=True)
                        sys.exit(0)
                send(c)
            sys.exit(3)
            """,
            port: setup.port
        )
        let outcome = client.finish()
        _ = setup.stop()
        #expect(outcome?.standardOutput == "max 1\nreset 3 7\n", "\(outcome?.standardError ?? "no outcome")")
        #expect(setup.upstream.requests.map(\.target) == ["/hang"])
    }

    /// A client that opens a stream to a 64 MiB response and never grants window: the proxy sends
    /// the stream's window (65 535 bytes), stops reading the upstream at a bound, and after
    /// client_idle_timeout resets the stream (CANCEL) and lets its upstream connection go. What the
    /// upstream wrote past what the proxy holds sits in the kernel's socket buffers (about 4 MiB here);
    /// unbounded, the proxy read all 64 MiB.
    @Test(.requires(.pythonH2)) func aZeroWindowHeldForeverEndsTheStreamAfterClientIdleTimeout() throws {
        let setup = try HTTP2PriorKnowledgeTests.Setup("client_idle_timeout = 1s")
        let client = Client(
            """
            get(c, 1, "/bytes/67108864")
            received = 0
            while (found := events(c)) is not None:
                for e in found:
                    if isinstance(e, h2.events.DataReceived): received += e.flow_controlled_length
                    if isinstance(e, h2.events.StreamReset):
                        print("reset", e.stream_id, int(e.error_code), received, flush=True)
                        sys.exit(0)
                send(c)
            sys.exit(3)
            """,
            port: setup.port
        )
        let outcome = client.finish()
        #expect(waitUntil { setup.upstream.server.openConnections == 0 })
        let streamed = setup.upstream.server.streamedBodyBytes.load(ordering: .relaxed)
        _ = setup.stop()
        #expect(outcome?.standardOutput == "reset 1 8 65535\n", "\(outcome?.standardError ?? "no outcome")")
        #expect(streamed < 16 << 20, "the upstream sent \(streamed) bytes of a response the client took 65 535 of")
    }

    /// A request's trailers cannot be sent to an HTTP/1.1 upstream: its body ends where they came,
    /// and they are counted as dropped.
    @Test(.requires(.pythonH2)) func aRequestsTrailersAreDroppedTowardsHTTP11AndCounted() throws {
        let setup = try HTTP2PriorKnowledgeTests.Setup("admin_listen = 127.0.0.1:0")
        let client = Client(
            """
            c.send_headers(1, [(":method", "POST"), (":path", "/echo"), (":scheme", "http"), (":authority", "127.0.0.1:" + sys.argv[1])])
            c.send_data(1, b"hello")
            c.send_headers(1, [("x-checksum", "5d41402a")], end_stream=True)
            send(c)
            body = b""
            while (found := events(c)) is not None:
                for e in found:
                    if isinstance(e, h2.events.DataReceived): body += e.data
                    if isinstance(e, h2.events.StreamEnded):
                        print(body.decode(), flush=True)
                        sys.exit(0)
                send(c)
            sys.exit(3)
            """,
            port: setup.port
        )
        let outcome = client.finish()
        let admin = try #require(word(startingWith: "admin=", in: setup.proxy.standardError)?.dropFirst(6))
        let metrics = try setup.curl(["http://\(admin)/metrics"]).standardOutput
        _ = setup.stop()
        #expect(outcome?.standardOutput == "hello\n", "\(outcome?.standardError ?? "no outcome")")
        #expect(setup.upstream.requests.first?.header("x-checksum") == nil)
        #expect(metrics.contains("bearer_proxy_trailers_dropped_total 1\n"), "\(metrics)")
    }

    /// An answer whose end the proxy already has when its body goes out ends the stream with its
    /// last DATA frame, as nginx's does: no empty DATA frame after it.
    @Test(.requires(.h2load)) func anAnswersLastDataFrameEndsTheStream() throws {
        let setup = try HTTP2PriorKnowledgeTests.Setup()
        let client = Client(program: ["/usr/bin/nghttp", "-v", "--timeout=20", "http://127.0.0.1:\(setup.port)/v1/ok"])
        let outcome = client.finish()
        _ = setup.stop()
        let data = (outcome?.standardOutput ?? "").split(separator: "\n").filter { $0.contains("recv DATA") }
        #expect(outcome?.status == 0, "\(outcome?.standardOutput ?? "no outcome")")
        #expect(data.count == 1, "\(data)")
        #expect(data.first?.contains("flags=0x01") == true && data.first?.contains("length=0,") == false, "\(data)")
    }

    /// `nghttp` comes with h2load (nghttp2-client).
    @Test(.requires(.h2load)) func aShutdownSendsGoawayAndFinishesTheStreamInFlight() throws {
        let setup = try HTTP2PriorKnowledgeTests.Setup()
        let url = "http://127.0.0.1:\(setup.port)/slow/500"
        let client = Client(program: ["/usr/bin/nghttp", "-v", "--timeout=20", url])
        #expect(waitUntil { setup.upstream.requests.count == 1 })
        setup.proxy.signal(SIGTERM)
        let outcome = client.finish()
        #expect(setup.proxy.waitForExit() == 0)
        _ = setup.stop()
        let frames = (outcome?.standardOutput ?? "").split(separator: "\n").filter { $0.contains("recv ") }
        let goaway = frames.firstIndex { $0.contains("recv GOAWAY") }
        let ended = frames.firstIndex { $0.contains("recv DATA") && $0.contains("flags=0x01") }
        #expect(outcome?.status == 0, "\(outcome?.standardOutput ?? "no outcome")")
        #expect(goaway != nil && ended != nil && goaway! < ended!, "\(frames)")
        #expect(outcome?.standardOutput.contains("slow") == true)
    }
}
