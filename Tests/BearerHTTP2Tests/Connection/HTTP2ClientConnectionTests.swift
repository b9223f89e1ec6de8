import BearerCore
import Testing

@testable import BearerHTTP2

/// The client connection machine (the proxy towards an h2 upstream): the server's frames go in as
/// bytes (written by the serializer, read by the client-role parser), actions come out.
@Suite struct HTTP2ClientConnectionTests {
    typealias Action = HTTP2ClientConnectionStateMachine.Action

    /// Plays the server: encodes its header blocks with a real HPACK encoder and feeds the machine
    /// the bytes of each frame through the parser a connection would use.
    struct ServerDriver {
        var machine: HTTP2ClientConnectionStateMachine
        var parser: HTTP2FrameParser
        var encoder = HPACKEncoder()
        var decoder = HPACKDecoder(maxHeaderListSize: 65_536)

        init(_ configure: (inout HTTP2ClientConnectionStateMachine.Configuration) -> Void = { _ in }) {
            var configuration = HTTP2ClientConnectionStateMachine.Configuration()
            configure(&configuration)
            self.machine = HTTP2ClientConnectionStateMachine(configuration: configuration)
            self.parser = configuration.makeFrameParser()
        }

        /// The server's bytes for `frames`, parsed and handed to the machine; every action.
        mutating func send(_ frames: [HTTP2Frame], data: [UInt8] = []) -> [Action] {
            var buffer = ByteBuffer()
            for frame in frames {
                if case .data(let streamID, let endStream, _) = frame {
                    data.withUnsafeBytes {
                        HTTP2FrameSerializer.writeData(streamID: streamID, endStream: endStream, $0, into: &buffer)
                    }
                } else {
                    HTTP2FrameSerializer.write(frame, maxFrameSize: 16_384, into: &buffer)
                }
            }
            var actions: [Action] = []
            while true {
                let event: HTTP2FrameParserEvent
                do throws(HTTP2ConnectionError) {
                    event = try buffer.parseNext(payload: { _ in }) { (bytes) throws(HTTP2ConnectionError) in
                        try self.parser.next(bytes)
                    }
                } catch {
                    actions.append(self.machine.connectionFailed(error))
                    return actions
                }
                if event.kind == .needMore { return actions }
                actions.append(self.machine.received(event))
            }
        }

        mutating func send(_ frame: HTTP2Frame, data: [UInt8] = []) -> Action {
            let actions = self.send([frame], data: data)
            return actions.count == 1 ? actions[0] : .nothing
        }

        mutating func headers(_ streamID: UInt32, _ fields: [(String, String)], endStream: Bool) -> Action {
            var block: [UInt8] = []
            self.encoder.encode(HeaderList(fields), into: &block)
            return self.send(.headers(HTTP2HeadersFrame(streamID: streamID, endStream: endStream, block: block)))
        }

        /// Opens a GET stream on the machine.
        mutating func get(_ path: String = "/", endStream: Bool = true) -> UInt32 {
            let request = HeaderList([
                (":method", "GET"), (":scheme", "http"), (":authority", "api.example.com"), (":path", path),
            ])
            return self.machine.openStream(request, endStream: endStream, isHeadRequest: false).streamID
        }

        /// The server's SETTINGS arrived (and were acknowledged).
        static func connected(
            _ settings: [HTTP2Setting] = [],
            _ configure: (inout HTTP2ClientConnectionStateMachine.Configuration) -> Void = { _ in }
        ) -> ServerDriver {
            var driver = ServerDriver(configure)
            _ = driver.send(.settings(settings))
            return driver
        }
    }

    @Test func theClientSendsItsSettingsWithPushDisabledAndOpensOddStreams() {
        var driver = ServerDriver()
        #expect(
            driver.machine.start() == [
                .settings([
                    HTTP2Setting(.enablePush, 0), HTTP2Setting(.initialWindowSize, 65_535),
                    HTTP2Setting(.maxHeaderListSize, 16_384),
                ]),
                .windowUpdate(streamID: 0, increment: (1 << 20) - 65_535),
            ]
        )
        #expect(!driver.machine.canOpenStream, "streams wait for the server's SETTINGS")
        #expect(driver.send(.settings([])) == .write([.settingsAck]))
        #expect(driver.get() == 1)
        #expect(driver.get() == 3)
        #expect(driver.send(.ping(ack: false, opaqueData: 7)) == .write([.ping(ack: true, opaqueData: 7)]))
    }

    /// RFC 7541 §7.1.3: the token never enters a table along the way, whatever the list says.
    @Test func authorizationIsEncodedNeverIndexed() throws {
        var driver = ServerDriver.connected()
        let request = HeaderList([
            (":method", "GET"), (":scheme", "https"), (":authority", "api.example.com"), (":path", "/"),
            ("authorization", "Bearer secret-token"),
        ])
        let (_, frame) = driver.machine.openStream(request, endStream: true, isHeadRequest: false)
        guard case .headers(let headers) = frame else { Issue.record("not HEADERS: \(frame)"); return }
        let decoded = try driver.decoder.decode(headers.block)
        let authorization = try #require(decoded.fields.last)
        #expect(decoded.strings.last! == ("authorization", "Bearer secret-token"))
        #expect(authorization.indexing == .neverIndexed)
        #expect(!driver.decoder.tableEntries.contains { $0.0 == "authorization" })
    }

    @Test func aResponseArrivesAsHeadDataAndTrailersAndCreditGoesBackOnlyWhenConsumed() {
        var driver = ServerDriver.connected()
        let stream = driver.get()
        let head = driver.headers(stream, [(":status", "200"), ("content-type", "application/grpc")], endStream: false)
        guard case .responseHead(stream, let response, false) = head else {
            Issue.record("no head: \(head)")
            return
        }
        #expect(response.status == 200)
        let body = [UInt8](repeating: 0x61, count: 12_000)
        let frame = HTTP2Frame.data(streamID: stream, endStream: false, flowControlledLength: 0)
        #expect(
            driver.send([frame, frame, frame], data: body)
                == Array(
                    repeating: .responseData(streamID: stream, count: 12_000, endStream: false, write: []),
                    count: 3
                )
        )
        // Not consumed: no credit. Consumed past half the stream's window: it goes back (the
        // connection's window is larger, its half not reached).
        #expect(driver.machine.responseDataConsumed(streamID: stream, count: 24_000) == .nothing)
        #expect(
            driver.machine.responseDataConsumed(streamID: stream, count: 12_000)
                == .write([.windowUpdate(streamID: stream, increment: 36_000)])
        )
        let trailers = driver.headers(stream, [("grpc-status", "0")], endStream: true)
        #expect(trailers == .responseTrailers(streamID: stream, trailers: HeaderList([("grpc-status", "0")])))
        #expect(driver.machine.activeStreamCount == 0)
    }

    @Test func interimResponsesAreSkippedAndAHeadResponseDeclaresALengthItDoesNotCarry() {
        var driver = ServerDriver.connected()
        let stream = driver.get()
        #expect(driver.headers(stream, [(":status", "103"), ("link", "</a.css>")], endStream: false) == .nothing)
        let final = driver.headers(stream, [(":status", "200")], endStream: true)
        guard case .responseHead(stream, _, true) = final else { Issue.record("no final head: \(final)"); return }
        let head = driver.machine.openStream(
            HeaderList([(":method", "HEAD"), (":scheme", "http"), (":authority", "a"), (":path", "/")]),
            endStream: true,
            isHeadRequest: true
        ).streamID
        let headResponse = driver.headers(head, [(":status", "200"), ("content-length", "1234")], endStream: true)
        guard case .responseHead(head, _, true) = headResponse else {
            Issue.record("HEAD's response: \(headResponse)")
            return
        }
    }

    @Test func theServersMaxConcurrentStreamsIsHonoured() {
        var driver = ServerDriver.connected([HTTP2Setting(.maxConcurrentStreams, 1)])
        #expect(driver.machine.canOpenStream)
        let stream = driver.get()
        #expect(!driver.machine.canOpenStream)
        _ = driver.headers(stream, [(":status", "204")], endStream: true)
        #expect(driver.machine.canOpenStream)
    }

    @Test func requestDataIsSentWithinTheServersWindows() {
        var driver = ServerDriver.connected([HTTP2Setting(.initialWindowSize, 1_000)])
        let stream = driver.get(endStream: false)
        #expect(driver.machine.sendableByteCount(streamID: stream) == 1_000)
        driver.machine.dataSent(streamID: stream, count: 1_000, endStream: false)
        #expect(driver.machine.sendableByteCount(streamID: stream) == 0)
        #expect(driver.send(.windowUpdate(streamID: stream, increment: 500)) == .resumeSending)
        #expect(driver.machine.sendableByteCount(streamID: stream) == 500)
        driver.machine.dataSent(streamID: stream, count: 0, endStream: true)
        #expect(driver.machine.sendableByteCount(streamID: stream) == 0)
    }

    /// Streams above GOAWAY's last stream id were not processed: they fail as retryable, the
    /// connection takes no new stream, and is finished once the rest completed.
    @Test func goAwayNamesTheUnprocessedStreamsAndTheConnectionDrains() {
        var driver = ServerDriver.connected()
        let first = driver.get()
        let second = driver.get()
        #expect(
            driver.send(.goAway(lastStreamID: first, code: .noError, debugData: []))
                == .goAwayReceived(code: .noError, unprocessed: [second])
        )
        #expect(!driver.machine.canOpenStream)
        #expect(!driver.machine.isFinished)
        _ = driver.headers(first, [(":status", "200")], endStream: true)
        #expect(driver.machine.isFinished)
    }

    @Test func aRefusedStreamIsRetryableAndACancelledOneIsNot() {
        var driver = ServerDriver.connected()
        let first = driver.get()
        let second = driver.get()
        #expect(
            driver.send(.rstStream(streamID: first, code: .refusedStream))
                == .streamFailed(streamID: first, code: .refusedStream, retryable: true, write: [])
        )
        #expect(
            driver.send(.rstStream(streamID: second, code: .cancel))
                == .streamFailed(streamID: second, code: .cancel, retryable: false, write: [])
        )
    }

    @Test func dataBeforeTheHeadIsAStreamError() {
        var driver = ServerDriver.connected()
        let stream = driver.get()
        let action = driver.send(.data(streamID: stream, endStream: false, flowControlledLength: 0), data: [1, 2, 3])
        #expect(
            action
                == .streamFailed(
                    streamID: stream,
                    code: .protocolError,
                    retryable: false,
                    write: [.rstStream(streamID: stream, code: .protocolError)]
                )
        )
    }

    @Test func aPushPromiseOrAStreamTheClientNeverOpenedEndsTheConnection() {
        var driver = ServerDriver.connected()
        let stream = driver.get()
        let action = driver.headers(stream + 2, [(":status", "200")], endStream: true)
        guard case .closeConnection(let frames, let failed) = action else {
            Issue.record("not closed: \(action)")
            return
        }
        #expect(failed == [stream])
        guard case .goAway(_, let code, _) = frames.first else { Issue.record("no GOAWAY: \(frames)"); return }
        #expect(code == .protocolError)
        #expect(driver.machine.isFinished)
    }

    @Test func theFirstFrameFromTheServerMustBeSettings() {
        var driver = ServerDriver()
        let action = driver.send(.ping(ack: false, opaqueData: 1))
        guard case .closeConnection(let frames, []) = action, case .goAway(_, .protocolError, _) = frames.first else {
            Issue.record("not a GOAWAY PROTOCOL_ERROR: \(action)")
            return
        }
    }
}
