import Testing

@testable import BearerHTTP2

/// The server connection machine: handshake, streams, flow control both ways, and each defence.
@Suite struct HTTP2ServerConnectionTests {
    typealias Action = HTTP2ServerConnectionStateMachine.Action

    @Test func thePrefaceIsAnsweredWithSettingsAndTheConnectionWindow() {
        var driver = ClientDriver()
        let action = driver.machine.received(HTTP2FrameParserEvent(.preface, consumed: 24))
        #expect(
            action
                == .write([
                    .settings([
                        HTTP2Setting(.maxConcurrentStreams, 100), HTTP2Setting(.initialWindowSize, 65_535),
                        HTTP2Setting(.maxHeaderListSize, 16_384),
                    ]),
                    .windowUpdate(streamID: 0, increment: (1 << 20) - 65_535),
                ])
        )
        #expect(driver.send(.settings([HTTP2Setting(.maxFrameSize, 32_768)])) == .write([.settingsAck]))
        #expect(driver.machine.peerMaxFrameSize == 32_768)
    }

    @Test func theFirstFrameMustBeSettings() {
        var driver = ClientDriver()
        _ = driver.machine.received(HTTP2FrameParserEvent(.preface, consumed: 24))
        #expect(driver.send(.ping(ack: false, opaqueData: 1)).goAwayCode == .protocolError)
    }

    /// A GET, its response head and body within the windows, and the stream gone once both ended.
    @Test func aRequestAndItsResponse() throws {
        var driver = ClientDriver.connected()
        guard case .startRequest(1, let head, true) = driver.headers(1, ClientDriver.get("/items")) else {
            Issue.record("no request started")
            return
        }
        #expect(head.method == .get)
        #expect(head.list.bytes[head.path!] == ArraySlice(bytes("/items")))
        #expect(driver.machine.activeStreamCount == 1)

        guard
            case .write(let frames) = driver.machine.sendHeaders(
                streamID: 1,
                HeaderList([(":status", "200")]),
                endStream: false
            ),
            case .headers(let response) = frames.first
        else {
            Issue.record("no response head written")
            return
        }
        var decoder = HPACKDecoder(maxHeaderListSize: 1_000)
        #expect(try decoder.decode(response.block).strings.elementsEqual([(":status", "200")], by: ==))
        #expect(driver.machine.sendableByteCount(streamID: 1) == 16_384)
        #expect(driver.machine.dataSent(streamID: 1, count: 16_384, endStream: false) == .nothing)
        #expect(driver.machine.sendableByteCount(streamID: 1) == 16_384)
        #expect(driver.machine.dataSent(streamID: 1, count: 10, endStream: true) == .nothing)
        #expect(driver.machine.activeStreamCount == 0)
        #expect(driver.machine.sendableByteCount(streamID: 1) == 0)
    }

    /// Request body credit goes back only as the exchange consumes it, in batches of half a window.
    @Test func requestBodyCreditFollowsConsumption() {
        var driver = ClientDriver.connected()
        #expect(driver.headers(1, ClientDriver.post(), endStream: false).startedStream == 1)
        #expect(driver.data(1, 20_000) == .forwardRequestData(streamID: 1, count: 20_000, endStream: false, write: []))
        #expect(driver.machine.requestDataConsumed(streamID: 1, count: 20_000) == .nothing)
        #expect(driver.data(1, 20_000) == .forwardRequestData(streamID: 1, count: 20_000, endStream: false, write: []))
        #expect(
            driver.machine.requestDataConsumed(streamID: 1, count: 20_000)
                == .write([.windowUpdate(streamID: 1, increment: 40_000)])
        )
        // Unconsumed, the window closes: 65 535 - 40 000 + 40 000 left, then one byte too many.
        #expect(driver.data(1, 65_535) == .forwardRequestData(streamID: 1, count: 65_535, endStream: false, write: []))
        let overrun = driver.data(1, 1)
        #expect(overrun == .cancelRequest(streamID: 1, write: [.rstStream(streamID: 1, code: .flowControlError)]))
    }

    @Test func dataPastTheConnectionWindowEndsTheConnection() {
        var driver = ClientDriver.connected { $0.connectionWindowSize = 65_535 }
        _ = driver.headers(1, ClientDriver.post(), endStream: false)
        _ = driver.headers(3, ClientDriver.post(), endStream: false)
        _ = driver.data(1, 40_000)
        #expect(driver.data(3, 40_000).goAwayCode == .flowControlError)
    }

    /// Padding is given back at once: the exchange never sees it.
    @Test func paddingIsCreditedAtOnce() {
        var driver = ClientDriver.connected()
        _ = driver.headers(1, ClientDriver.post(), endStream: false)
        #expect(
            driver.data(1, 10, padding: 40_000)
                == .forwardRequestData(
                    streamID: 1,
                    count: 10,
                    endStream: false,
                    write: [.windowUpdate(streamID: 1, increment: 40_000)]
                )
        )
    }

    @Test func streamsPastTheLimitAreRefused() {
        var driver = ClientDriver.connected { $0.maxConcurrentStreams = 2 }
        #expect(driver.headers(1, ClientDriver.post(), endStream: false).startedStream == 1)
        #expect(driver.headers(3, ClientDriver.post(), endStream: false).startedStream == 3)
        #expect(driver.headers(5, ClientDriver.get()) == .write([.rstStream(streamID: 5, code: .refusedStream)]))
        _ = driver.send(.rstStream(streamID: 1, code: .cancel))
        #expect(driver.headers(7, ClientDriver.get()).startedStream == 7)
    }

    /// A malformed request is reset, and the HPACK tables stay in step: the next request refers to an
    /// entry the malformed one added.
    @Test func aMalformedRequestIsResetAndTheTablesStayInStep() {
        var driver = ClientDriver.connected()
        let malformed = ClientDriver.get() + [("x-trace", "abc"), ("connection", "close")]
        #expect(driver.headers(1, malformed) == .write([.rstStream(streamID: 1, code: .protocolError)]))
        guard case .startRequest(3, let head, _) = driver.headers(3, ClientDriver.get() + [("x-trace", "abc")]) else {
            Issue.record("no request started")
            return
        }
        #expect(head.list.strings.last! == ("x-trace", "abc"))
    }

    /// After the client's END_STREAM, more DATA on the stream is STREAM_CLOSED (§5.1).
    @Test func dataAfterTheClientsEndIsStreamClosed() {
        var driver = ClientDriver.connected()
        _ = driver.headers(1, ClientDriver.get())
        #expect(driver.data(1, 5) == .cancelRequest(streamID: 1, write: [.rstStream(streamID: 1, code: .streamClosed)]))
    }

    @Test func contentLengthMustMatchTheData() {
        var driver = ClientDriver.connected()
        _ = driver.headers(1, ClientDriver.post(contentLength: 5), endStream: false)
        #expect(
            driver.data(1, 3, endStream: true)
                == .cancelRequest(streamID: 1, write: [.rstStream(streamID: 1, code: .protocolError)])
        )
        _ = driver.headers(3, ClientDriver.post(contentLength: 5), endStream: false)
        #expect(
            driver.data(3, 6) == .cancelRequest(streamID: 3, write: [.rstStream(streamID: 3, code: .protocolError)])
        )
        #expect(
            driver.headers(5, ClientDriver.post(contentLength: 5))
                == .write([.rstStream(streamID: 5, code: .protocolError)])
        )
    }

    @Test func trailersMustEndTheStreamAndCarryNoPseudoHeaders() {
        var driver = ClientDriver.connected()
        _ = driver.headers(1, ClientDriver.post(), endStream: false)
        _ = driver.data(1, 3)
        let trailers = driver.headers(1, [("grpc-status", "0")])
        #expect(trailers == .forwardTrailers(streamID: 1, trailers: HeaderList([("grpc-status", "0")])))
        _ = driver.headers(3, ClientDriver.post(), endStream: false)
        #expect(
            driver.headers(3, [("x", "1")], endStream: false)
                == .cancelRequest(streamID: 3, write: [.rstStream(streamID: 3, code: .protocolError)])
        )
        _ = driver.headers(5, ClientDriver.post(), endStream: false)
        #expect(
            driver.headers(5, [(":path", "/")])
                == .cancelRequest(streamID: 5, write: [.rstStream(streamID: 5, code: .protocolError)])
        )
    }

    @Test(arguments: [
        (
            "even stream id", HTTP2Frame.headers(HTTP2HeadersFrame(streamID: 2, endStream: true, block: [0x82])),
            HTTP2ErrorCode.protocolError
        ),
        ("DATA on an idle stream", .data(streamID: 9, endStream: false, flowControlledLength: 0), .protocolError),
        ("RST_STREAM on an idle stream", .rstStream(streamID: 9, code: .cancel), .protocolError),
        ("WINDOW_UPDATE on an idle stream", .windowUpdate(streamID: 9, increment: 1), .protocolError),
        ("connection window past 2^31-1", .windowUpdate(streamID: 0, increment: 0x7fff_ffff), .flowControlError),
        (
            "HPACK index out of range", .headers(HTTP2HeadersFrame(streamID: 1, endStream: true, block: [0xff, 0x10])),
            .compressionError
        ),
    ])
    func protocolViolationsEndTheConnection(_ id: String, frame: HTTP2Frame, code: HTTP2ErrorCode) {
        var driver = ClientDriver.connected()
        #expect(driver.send(frame).goAwayCode == code, "\(id)")
    }

    /// A HEADERS whose id is not above every earlier one, for a stream not reset here, is a
    /// connection error (§5.1.1); one in flight towards a stream this side reset is ignored.
    @Test func streamIDsOnlyIncrease() {
        var driver = ClientDriver.connected()
        _ = driver.headers(5, ClientDriver.get())
        _ = driver.machine.sendHeaders(streamID: 5, HeaderList([(":status", "204")]), endStream: true)
        #expect(driver.headers(3, ClientDriver.get()).goAwayCode == .protocolError)

        driver = ClientDriver.connected()
        _ = driver.headers(1, ClientDriver.post(), endStream: false)
        _ = driver.machine.resetStream(streamID: 1, code: .internalError)
        #expect(driver.data(1, 100) == .nothing)
        #expect(driver.headers(1, [("grpc-status", "0")]) == .nothing)
    }

    @Test func aStreamThatDependsOnItselfIsReset() {
        var driver = ClientDriver.connected()
        let action = driver.headers(
            1,
            ClientDriver.get(),
            priority: HTTP2Priority(exclusive: false, dependency: 1, weight: 16)
        )
        #expect(action == .write([.rstStream(streamID: 1, code: .protocolError)]))
    }

    /// Send windows: the smallest of the connection's, the stream's and the frame size; SETTINGS
    /// moves every stream's window by its change (§6.9.2), WINDOW_UPDATE grows one.
    @Test func responseDataFollowsTheClientsWindows() {
        var driver = ClientDriver.connected()
        _ = driver.headers(1, ClientDriver.get())
        _ = driver.send(.settings([HTTP2Setting(.maxFrameSize, 1 << 20)]))
        #expect(driver.machine.sendableByteCount(streamID: 1) == 65_535)
        _ = driver.send(.settings([HTTP2Setting(.initialWindowSize, 1_000)]))
        #expect(driver.machine.sendableByteCount(streamID: 1) == 1_000)
        _ = driver.machine.dataSent(streamID: 1, count: 1_000, endStream: false)
        #expect(driver.machine.sendableByteCount(streamID: 1) == 0)
        #expect(driver.send(.windowUpdate(streamID: 1, increment: 500)) == .resumeSending(write: []))
        #expect(driver.machine.sendableByteCount(streamID: 1) == 500)
        _ = driver.machine.dataSent(streamID: 1, count: 500, endStream: false)
        #expect(driver.machine.sendableByteCount(streamID: 1) == 0)
        // The connection's window is spent by 1 500 bytes of its 65 535.
        _ = driver.send(.windowUpdate(streamID: 1, increment: 100_000))
        #expect(driver.machine.sendableByteCount(streamID: 1) == 64_035)
        #expect(
            driver.send(.windowUpdate(streamID: 1, increment: 0x7fff_ffff))
                == .cancelRequest(streamID: 1, write: [.rstStream(streamID: 1, code: .flowControlError)])
        )
    }

    @Test func pingsAreAcknowledgedUntilTheyFlood() {
        var driver = ClientDriver.connected { $0.maxPendingAcknowledgements = 3 }
        for data in 1...2 as ClosedRange<UInt64> {
            #expect(driver.send(.ping(ack: false, opaqueData: data)) == .write([.ping(ack: true, opaqueData: data)]))
        }
        driver.machine.outboundFlushed()
        for data in 1...3 as ClosedRange<UInt64> { _ = driver.send(.ping(ack: false, opaqueData: data)) }
        #expect(driver.send(.ping(ack: true, opaqueData: 9)) == .nothing)
        #expect(driver.send(.ping(ack: false, opaqueData: 4)).goAwayCode == .enhanceYourCalm)
    }

    @Test func settingsAreAcknowledgedUntilTheyFlood() {
        var driver = ClientDriver.connected { $0.maxPendingAcknowledgements = 3 }  // the first SETTINGS counts
        _ = driver.send(.settings([]))
        _ = driver.send(.settings([]))
        #expect(driver.send(.settings([])).goAwayCode == .enhanceYourCalm)
    }

    /// CVE-2023-44487: streams opened and reset spend a budget that completed streams earn back.
    @Test func rapidResetEndsTheConnection() {
        var driver = ClientDriver.connected { $0.maxRapidResets = 10 }
        var streamID: UInt32 = 1
        for _ in 0..<10 {
            _ = driver.headers(streamID, ClientDriver.get())
            #expect(
                driver.send(.rstStream(streamID: streamID, code: .cancel))
                    == .cancelRequest(streamID: streamID, write: [])
            )
            streamID += 2
        }
        // One completed stream earns one reset back.
        _ = driver.headers(streamID, ClientDriver.get())
        _ = driver.machine.sendHeaders(streamID: streamID, HeaderList([(":status", "204")]), endStream: true)
        streamID += 2
        _ = driver.headers(streamID, ClientDriver.get())
        #expect(
            driver.send(.rstStream(streamID: streamID, code: .cancel)) == .cancelRequest(streamID: streamID, write: [])
        )
        streamID += 2
        _ = driver.headers(streamID, ClientDriver.get())
        #expect(driver.send(.rstStream(streamID: streamID, code: .cancel)).goAwayCode == .enhanceYourCalm)
    }

    /// Streams the client makes the server reset (malformed ones) spend the same budget.
    @Test func provokedResetsSpendTheSameBudget() {
        var driver = ClientDriver.connected { $0.maxRapidResets = 3 }
        for streamID in [1, 3, 5] as [UInt32] {
            #expect(
                driver.headers(streamID, ClientDriver.get() + [("upgrade", "h2c")])
                    == .write([.rstStream(streamID: streamID, code: .protocolError)])
            )
        }
        #expect(driver.headers(7, ClientDriver.get() + [("upgrade", "h2c")]).goAwayCode == .enhanceYourCalm)
    }

    @Test func drainingFinishesStreamsInFlightThenCloses() {
        var driver = ClientDriver.connected()
        _ = driver.headers(1, ClientDriver.get())
        #expect(driver.machine.startDraining() == .write([.goAway(lastStreamID: 1, code: .noError, debugData: [])]))
        #expect(driver.headers(3, ClientDriver.get()) == .nothing)
        #expect(driver.machine.activeStreamCount == 1)
        let head = HeaderList([(":status", "200")])
        guard case .closeConnection(let frames) = driver.machine.sendHeaders(streamID: 1, head, endStream: true) else {
            Issue.record("the connection stayed open after its last stream")
            return
        }
        #expect(frames.count == 1)
    }

    @Test func aDrainWithNoStreamsClosesAtOnce() {
        var driver = ClientDriver.connected()
        #expect(
            driver.machine.startDraining()
                == .closeConnection(write: [.goAway(lastStreamID: 0, code: .noError, debugData: [])])
        )
    }

    @Test func anIdleTimeoutEndsAConnectionOnlyWithNoStreamOpen() {
        var driver = ClientDriver.connected()
        _ = driver.headers(1, ClientDriver.get())
        #expect(driver.machine.idleTimedOut() == .nothing)
        _ = driver.machine.resetStream(streamID: 1, code: .cancel)
        #expect(
            driver.machine.idleTimedOut()
                == .closeConnection(write: [.goAway(lastStreamID: 1, code: .noError, debugData: [])])
        )
    }

    @Test func theGoAwayCarriesTheReasonAsDebugData() {
        var driver = ClientDriver.connected()
        let action = driver.machine.connectionFailed(.headerBlockTooLarge(limit: 16_384))
        let message = Array("header block larger than 16384 bytes (max_header_bytes)".utf8)
        #expect(
            action == .closeConnection(write: [.goAway(lastStreamID: 0, code: .enhanceYourCalm, debugData: message)])
        )
        #expect(driver.send(.ping(ack: false, opaqueData: 1)) == .nothing)
    }
}
