import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Testing

@testable import BearerConfig
@testable import BearerProxy
@testable import BearerSession

typealias ConnectionMachine = ClientConnectionStateMachine
typealias Action = ClientConnectionStateMachine.Action

/// The client connection's logic without sockets: events in, whole action lists out, time by hand.
@Suite struct ClientConnectionStateMachineTests {
    static let upstream = Origin(isHTTPS: false, host: "api.test", port: 8000)
    static let proxy = SocketAddress(ipAddress: "127.0.0.1", port: 8080)!
    static let line1 = Array("Authorization: Bearer one\r\n".utf8)
    static let line2 = Array("Authorization: Bearer two\r\n".utf8)
    static let token1 = SessionToken(line: line1, generation: 1)
    static let token2 = SessionToken(line: line2, generation: 2)

    static func token(_ generation: Int) -> SessionToken { generation == 1 ? Self.token1 : Self.token2 }

    static func configuration(_ configure: (inout Configuration) -> Void = { _ in }) -> Configuration {
        var configuration = Configuration()
        configuration.upstream = try? HTTPURL.parse("http://api.test:8000").get()
        configuration.replayBodyLimit = 16
        configure(&configuration)
        return configuration
    }

    static func machine(_ configure: (inout Configuration) -> Void = { _ in }) -> ConnectionMachine {
        let configuration = Self.configuration(configure)
        let names = ProxyNames(boundAddresses: [Self.proxy], acceptHosts: configuration.acceptHosts)
        let rules = ConnectionMachine.Rules(
            settings: .init(configuration),
            router: Router(configuration: configuration, sessions: [.standalone(configuration)], names: names),
            requestGuard: RequestGuard(configuration: configuration, names: names)
        )
        return ConnectionMachine(rules: rules, isFromUnixSocket: false, now: at(0))
    }

    static func request(_ text: String) -> RequestHead {
        var parser = HTTPRequestParser()
        let bytes = Array(text.utf8)
        let event = bytes.withUnsafeBytes { try? parser.next($0) }
        guard case .head(let head, _) = event else { preconditionFailure("not a request head: \(text)") }
        return head
    }

    static func response(_ text: String, to method: HTTPMethod = .get) -> ResponseHead {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: method)
        let bytes = Array(text.utf8)
        let event = bytes.withUnsafeBytes { try? parser.next($0) }
        guard case .head(let head, _) = event else { preconditionFailure("not a response head: \(text)") }
        return head
    }

    static let get = request("GET /items HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
    static let post10 = request("POST /upload HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 10\r\n\r\n")
    static let ok = response("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
    static let unauthorized = response("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")

    static func send(
        _ head: RequestHead,
        authorization: [UInt8]? = line1,
        kept: String = "",
        endsChunkedBody: Bool = false,
        spent: Duration? = nil
    ) -> Action {
        .sendRequest(
            .init(
                head: head,
                target: Self.upstreamTarget,
                path: .prefixed(head.target),
                authorization: authorization,
                keptBody: ByteBuffer(string: kept),
                endsChunkedBody: endsChunkedBody,
                spent: spent
            )
        )
    }

    /// The default session as the machine's routes name it (sessions are equal by name and place).
    static let session = NamedSession.standalone(Self.configuration())

    static let upstreamTarget = Target(
        origin: upstream,
        authority: Array("api.test:8000".utf8),
        pathPrefix: [],
        session: session,
        injectsToken: true
    )

    static func forward(
        _ head: ResponseHead,
        _ framing: ClientFraming,
        keepAlive: Bool = true,
        generation: Int?,
        releases: Int = 0
    )
        -> Action
    {
        .forwardResponseHead(
            .init(
                head: head,
                framing: framing,
                keepAlive: keepAlive,
                clientVersion: .http11,
                accepted: generation.map { AcceptedToken(session: Self.session, generation: $0) },
                releasesReplayBytes: releases
            )
        )
    }

    static func end(
        _ head: RequestHead,
        status: Int = 200,
        bytes: Int = 2,
        replay: Bool = false,
        pools: Bool = true,
        closes: Bool = false,
        startedAt: Double = 0,
        generation: Int? = 1,
        bodyBytesIn: Int = 0
    ) -> Action {
        .finishExchange(
            .init(
                record: Self.record(head, startedAt: startedAt, generation: generation, bodyBytesIn: bodyBytesIn),
                status: status,
                bodyBytes: bytes,
                replayed: replay,
                writesChunkedEnd: false,
                poolsUpstream: pools,
                closesConnection: closes
            )
        )
    }

    /// A request to the upstream as the audit log sees it: the token's generation, whether it waited.
    static func record(
        _ head: RequestHead,
        startedAt: Double = 0,
        generation: Int? = 1,
        waited: Bool = false,
        bodyBytesIn: Int = 0
    ) -> ConnectionMachine.RequestRecord {
        var record = ConnectionMachine.RequestRecord(
            head: head,
            startedAt: at(startedAt),
            target: Self.upstreamTarget,
            tokenGeneration: generation
        )
        record.waitedForToken = waited
        record.bodyBytesIn = bodyBytesIn
        return record
    }

    static func bytes(_ text: String, _ body: (UnsafeRawBufferPointer) -> Action) -> Action {
        Array(text.utf8).withUnsafeBytes(body)
    }

    // MARK: The plain path

    @Test func aRequestWithTheTokenFromHeadToPooledConnection() {
        var machine = Self.machine()
        #expect(machine.deadline == at(60))
        var actions: [Action] = []
        actions.append(machine.requestHeadReceived(Self.get, now: at(1)))
        actions.append(machine.tokenAnswered(.send(Self.token1), now: at(1)))
        #expect(machine.deadline == nil, "connecting is bounded by the connector")
        actions.append(machine.upstreamReady(isReused: true, now: at(1)))
        #expect(machine.deadline == at(61), "upstream_timeout from the send")
        #expect(machine.clientInput == .none, "a bodiless request reads nothing more until its answer")
        actions.append(machine.responseHeadReceived(Self.ok, now: at(2)))
        actions.append(machine.responseBodyReceived(count: 2, now: at(2)))
        actions.append(machine.responseEnded(upstreamSentMore: false, now: at(3)))
        #expect(
            actions == [
                .requestToken(Self.session, reserving: 0),
                .connectUpstream(Self.upstream, allowReuse: true),
                Self.send(Self.get),
                Self.forward(Self.ok, .contentLength(2), generation: 1),
                .forwardResponseBody(chunked: false),
                Self.end(Self.get, startedAt: 1),
            ]
        )
        #expect(machine.clientInput == .head)
        #expect(machine.deadline == at(63), "client_idle_timeout from the end of the exchange")
    }

    // MARK: Orders that are easy to get wrong

    /// The upstream refuses the token while the client is still sending the body: the response is
    /// drained (the connection cannot be pooled: the body was cut), the request parks, and the
    /// replay sends the bytes kept so far before the rest of the body.
    @Test func a401WhileTheClientIsStillSendingTheBody() {
        var machine = Self.machine()
        var actions: [Action] = []
        actions.append(machine.requestHeadReceived(Self.post10, now: at(0)))
        actions.append(machine.tokenAnswered(.send(Self.token1), reserved: 10, now: at(0)))
        actions.append(machine.upstreamReady(isReused: false, now: at(0)))
        #expect(machine.clientInput == .body)
        actions.append(Self.bytes("abcd") { machine.requestBodyReceived($0, now: at(0.1)) })
        actions.append(machine.responseHeadReceived(Self.unauthorized, now: at(0.2)))
        actions.append(machine.rejectionAnswered(.wait(Ticket(7)), now: at(0.2)))
        #expect(machine.clientInput == .none, "the rest of the body waits in the buffer while parked")
        #expect(machine.deadline == at(35.2), "refresh_timeout plus the margin")
        actions.append(machine.tokenReady(Ticket(7), .send(Self.token2), now: at(0.5)))
        actions.append(machine.upstreamReady(isReused: false, now: at(0.5)))
        actions.append(Self.bytes("efghij") { machine.requestBodyReceived($0, now: at(0.6)) })
        actions.append(machine.requestEnded(now: at(0.6)))
        actions.append(machine.responseHeadReceived(Self.ok, now: at(0.7)))
        actions.append(machine.responseBodyReceived(count: 2, now: at(0.7)))
        actions.append(machine.responseEnded(upstreamSentMore: false, now: at(0.8)))
        #expect(
            actions == [
                .requestToken(Self.session, reserving: 10),
                .connectUpstream(Self.upstream, allowReuse: true),
                Self.send(Self.post10),
                .forwardRequestBody(chunked: false),
                .reportRejection(Self.session, generation: 1, canWait: true),
                .discardResponse(reusable: false, next: .wait),
                .replay(Self.upstream),
                // Sent again: a gRPC call's grpc-timeout would go on less the half second spent.
                Self.send(Self.post10, authorization: Self.line2, kept: "abcd", spent: .milliseconds(500)),
                .forwardRequestBody(chunked: false),
                .endRequestBody(chunked: false),
                Self.forward(Self.ok, .contentLength(2), generation: 2, releases: 10),
                .forwardResponseBody(chunked: false),
                .finishExchange(
                    .init(
                        record: Self.record(Self.post10, generation: 2, waited: true, bodyBytesIn: 10),
                        status: 200,
                        bodyBytes: 2,
                        replayed: true,
                        writesChunkedEnd: false,
                        poolsUpstream: true,
                        closesConnection: false
                    )
                ),
            ]
        )
    }

    @Test func theClientClosingWhileParkedGivesUpItsPlaceAndLaterEventsAreIgnored() {
        var machine = Self.machine()
        var actions: [Action] = []
        actions.append(machine.requestHeadReceived(Self.post10, now: at(0)))
        actions.append(machine.tokenAnswered(.wait(Ticket(3)), reserved: 10, now: at(0)))
        actions.append(machine.clientClosed())
        actions.append(machine.tokenReady(Ticket(3), .send(Self.token2), now: at(1)))
        actions.append(machine.timerFired(now: at(100)))
        actions.append(machine.clientClosed())
        // A body within replay_body_limit reserves its size; the close gives it back.
        #expect(
            actions == [
                .requestToken(Self.session, reserving: 10), .none,
                .close(
                    .clientGone(
                        cancelsWaiter: ParkedRequest(session: Self.session, ticket: Ticket(3)),
                        releasesReplayBytes: 10
                    )
                ), .none, .none, .none,
            ]
        )
        #expect(machine.isClosed)
    }

    /// The machine is a value: a copy taken before an event does not see it (an exchange shared by
    /// reference would move both).
    @Test func aCopyOfTheMachineKeepsItsOwnExchange() {
        var machine = Self.machine()
        _ = machine.requestHeadReceived(Self.get, now: at(0))
        _ = machine.tokenAnswered(.send(Self.token1), now: at(0))
        let before = machine
        _ = machine.upstreamReady(isReused: true, now: at(0))
        #expect(machine.upstreamInput == .response)
        #expect(before.upstreamInput == .none, "the copy's exchange moved with the original's")
    }

    // MARK: The replay budget, reserved and released by the connection

    static let chunkedPost = request(
        "POST /upload HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nTransfer-Encoding: chunked\r\n\r\n"
    )

    /// Gives the request whose head `machine` has the token and a fresh connection.
    static func started(_ machine: inout ConnectionMachine, _ head: RequestHead) {
        _ = machine.tokenAnswered(.send(Self.token1), now: at(0))
        _ = machine.upstreamReady(isReused: false, now: at(0))
    }

    @Test func aContentLengthBodyTheBudgetRefusesIsForwardedWithoutACopy() {
        var machine = Self.machine()
        #expect(machine.requestHeadReceived(Self.post10, now: at(0)) == .requestToken(Self.session, reserving: 10))
        Self.started(&machine, Self.post10)
        #expect(
            Self.bytes("0123456789") { machine.requestBodyReceived($0, now: at(0)) }
                == .forwardRequestBody(chunked: false)
        )
        _ = machine.requestEnded(now: at(0))
        #expect(
            machine.responseHeadReceived(Self.unauthorized, now: at(0.1))
                == .reportRejection(Self.session, generation: 1, canWait: false),
            "forwarded without a copy: the 401 goes to the client"
        )
    }

    @Test func aChunkedBodyReservesAsItGrowsAndGivesItBackWithTheStatus() {
        var machine = Self.machine { $0.replayBodyLimit = 1 << 20 }
        #expect(
            machine.requestHeadReceived(Self.chunkedPost, now: at(0)) == .requestToken(Self.session, reserving: 0),
            "nothing to reserve yet"
        )
        Self.started(&machine, Self.chunkedPost)
        #expect(Self.bytes("abcd") { machine.requestBodyReceived($0, now: at(0)) } == .reserveReplayBody(65536))
        #expect(machine.replayBodyReserved(65536, granted: true, now: at(0)) == .none)
        #expect(
            Self.bytes("abcd") { machine.requestBodyReceived($0, now: at(0)) } == .forwardRequestBody(chunked: true)
        )
        #expect(
            Self.bytes("efgh") { machine.requestBodyReceived($0, now: at(0)) } == .forwardRequestBody(chunked: true)
        )
        _ = machine.requestEnded(now: at(0))
        #expect(
            machine.responseHeadReceived(Self.ok, now: at(0.1))
                == Self.forward(Self.ok, .contentLength(2), generation: 1, releases: 65536)
        )
    }

    @Test func aChunkedBodyTheBudgetRefusesMoreLosesItsCopy() {
        var machine = Self.machine { $0.replayBodyLimit = 1 << 20 }
        _ = machine.requestHeadReceived(Self.chunkedPost, now: at(0))
        Self.started(&machine, Self.chunkedPost)
        #expect(Self.bytes("abcd") { machine.requestBodyReceived($0, now: at(0)) } == .reserveReplayBody(65536))
        #expect(machine.replayBodyReserved(65536, granted: false, now: at(0)) == .releaseReplayBody(0))
        #expect(
            Self.bytes("abcd") { machine.requestBodyReceived($0, now: at(0)) } == .forwardRequestBody(chunked: true)
        )
        #expect(
            machine.responseHeadReceived(Self.unauthorized, now: at(0.1))
                == .reportRejection(Self.session, generation: 1, canWait: false)
        )
    }

    @Test func aChunkedBodyPastTheReplayLimitGivesItsReservationBack() {
        var machine = Self.machine()  // replay_body_limit = 16
        _ = machine.requestHeadReceived(Self.chunkedPost, now: at(0))
        Self.started(&machine, Self.chunkedPost)
        #expect(Self.bytes("abcd") { machine.requestBodyReceived($0, now: at(0)) } == .reserveReplayBody(65536))
        _ = machine.replayBodyReserved(65536, granted: true, now: at(0))
        #expect(
            Self.bytes("abcd") { machine.requestBodyReceived($0, now: at(0)) } == .forwardRequestBody(chunked: true)
        )
        let past = String(repeating: "x", count: 20)
        #expect(Self.bytes(past) { machine.requestBodyReceived($0, now: at(0)) } == .releaseReplayBody(65536))
        #expect(Self.bytes(past) { machine.requestBodyReceived($0, now: at(0)) } == .forwardRequestBody(chunked: true))
        _ = machine.requestEnded(now: at(0))
        #expect(
            machine.responseHeadReceived(Self.ok, now: at(0.1))
                == Self.forward(Self.ok, .contentLength(2), generation: 1, releases: 0),
            "released once, not twice"
        )
    }

    /// Pipelined requests wait behind a request that is replayed: the next head is read only once
    /// the replayed exchange has ended, so answers stay in order.
    @Test func pipelinedRequestsWaitBehindAReplay() {
        var machine = Self.machine()
        var actions: [Action] = []
        actions.append(machine.requestHeadReceived(Self.get, now: at(0)))
        actions.append(machine.tokenAnswered(.send(Self.token1), now: at(0)))
        actions.append(machine.upstreamReady(isReused: true, now: at(0)))
        actions.append(machine.responseHeadReceived(Self.unauthorized, now: at(0.1)))
        // A newer token exists already: replay at once, on another connection.
        actions.append(machine.rejectionAnswered(.send(Self.token2), now: at(0.1)))
        #expect(machine.clientInput == .none)
        actions.append(machine.upstreamReady(isReused: true, now: at(0.1)))
        #expect(machine.clientInput == .none, "the second request stays in the buffer")
        actions.append(machine.responseHeadReceived(Self.ok, now: at(0.2)))
        actions.append(machine.responseBodyReceived(count: 2, now: at(0.2)))
        actions.append(machine.responseEnded(upstreamSentMore: false, now: at(0.3)))
        #expect(machine.clientInput == .head)
        actions.append(machine.requestHeadReceived(Self.get, now: at(0.3)))
        #expect(
            actions == [
                .requestToken(Self.session, reserving: 0),
                .connectUpstream(Self.upstream, allowReuse: true),
                Self.send(Self.get),
                .reportRejection(Self.session, generation: 1, canWait: true),
                .discardResponse(reusable: true, next: .replay(Self.upstream)),
                Self.send(Self.get, authorization: Self.line2, spent: .milliseconds(100)),
                Self.forward(Self.ok, .contentLength(2), generation: 2),
                .forwardResponseBody(chunked: false),
                Self.end(Self.get, replay: true, generation: 2),
                .requestToken(Self.session, reserving: 0),
            ]
        )
    }

    @Test func aTimerFiringAfterTheExchangeEndedDoesNothing() {
        var machine = Self.machine()
        _ = machine.requestHeadReceived(Self.get, now: at(0))
        _ = machine.tokenAnswered(.send(Self.token1), now: at(0))
        _ = machine.upstreamReady(isReused: true, now: at(0))
        let upstreamDeadline = machine.deadline
        #expect(upstreamDeadline == at(60))
        _ = machine.responseHeadReceived(Self.ok, now: at(1))
        _ = machine.responseBodyReceived(count: 2, now: at(1))
        _ = machine.responseEnded(upstreamSentMore: false, now: at(1))
        // The timer armed for the upstream deadline fires; the connection is idle since 1 s.
        #expect(machine.timerFired(now: at(60)) == .none)
        #expect(machine.deadline == at(61))
        #expect(machine.timerFired(now: at(61)) == .close(.idle))
        #expect(machine.timerFired(now: at(62)) == .none)
    }

    @Test func aParkedRequestGivesUpAtTheTokenWaitLimit() {
        var machine = Self.machine()
        _ = machine.requestHeadReceived(Self.get, now: at(0))
        _ = machine.tokenAnswered(.wait(Ticket(9)), now: at(0))
        #expect(machine.timerFired(now: at(30)) == .none)
        let failure = SessionFailure.timedOut(reason: "no new token within refresh_timeout")
        #expect(
            machine.timerFired(now: at(35))
                == .respond(
                    .init(
                        error: .session(failure),
                        closesConnection: false,
                        cancelsWaiter: ParkedRequest(session: Self.session, ticket: Ticket(9)),
                        record: Self.record(Self.get, generation: nil, waited: true),
                        endsExchange: true
                    )
                )
        )
        #expect(machine.clientInput == .head)
    }

    // MARK: Resending after a pooled connection died

    static func diedBeforeAnswering(_ head: RequestHead, sentNothing: Bool, reused: Bool = true) -> Action {
        var machine = Self.machine()
        var reserved = 0
        if case .requestToken(_, let bytes) = machine.requestHeadReceived(head, now: at(0)) { reserved = bytes }
        _ = machine.tokenAnswered(.send(Self.token1), reserved: reserved, now: at(0))
        _ = machine.upstreamReady(isReused: reused, now: at(0))
        if head.framing != .none {
            _ = Self.bytes("0123456789") { machine.requestBodyReceived($0, now: at(0)) }
            _ = machine.requestEnded(now: at(0))
        }
        return machine.upstreamEnded(endsResponse: false, sentNothing: sentNothing, reset: false, now: at(0.1))
    }

    @Test func aRequestIsResentOnlyWhenThatCannotActTwice() {
        let fresh = Action.connectUpstream(Self.upstream, allowReuse: false)
        #expect(Self.diedBeforeAnswering(Self.get, sentNothing: false) == fresh)
        #expect(Self.diedBeforeAnswering(Self.post10, sentNothing: true) == fresh)
        let keyed = Self.request(
            "POST /pay HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nIdempotency-Key: k1\r\nContent-Length: 10\r\n\r\n"
        )
        #expect(Self.diedBeforeAnswering(keyed, sentNothing: false) == fresh)
        #expect(
            Self.diedBeforeAnswering(Self.post10, sentNothing: false)
                == .respond(
                    .init(
                        error: .upstreamClosed(origin: "api.test:8000"),
                        closesConnection: false,
                        record: Self.record(Self.post10, bodyBytesIn: 10),
                        endsExchange: true,
                        releasesReplayBytes: 10
                    )
                )
        )
        // A fresh connection that dies is the upstream failing, not a stale pool.
        #expect(Self.diedBeforeAnswering(Self.get, sentNothing: false, reused: false) != fresh)
    }

    /// An upload larger than replay_body_limit refused before a byte of its body left the client
    /// (Expect: 100-continue) is still replayable; once a byte went out without a copy, it is not.
    @Test func aLargeBodyIsReplayableUntilAByteOfItIsForwarded() {
        let head = Self.request(
            "PUT /big HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n"
        )
        var machine = Self.machine()
        _ = machine.requestHeadReceived(head, now: at(0))
        _ = machine.tokenAnswered(.send(Self.token1), now: at(0))
        _ = machine.upstreamReady(isReused: false, now: at(0))
        #expect(
            machine.responseHeadReceived(Self.unauthorized, now: at(0.1))
                == .reportRejection(Self.session, generation: 1, canWait: true)
        )
        _ = machine.rejectionAnswered(.send(Self.token2), now: at(0.1))
        _ = machine.upstreamReady(isReused: false, now: at(0.2))
        #expect(
            machine.informationalReceived(Self.response("HTTP/1.1 100 Continue\r\n\r\n"), now: at(0.3))
                == .writeInformational(Self.response("HTTP/1.1 100 Continue\r\n\r\n"))
        )
        _ = Self.bytes("x") { machine.requestBodyReceived($0, now: at(0.4)) }
        // A replay's refusal is its client's answer: the session is not asked again, the refusal counted.
        guard case .forwardResponseHead(let response) = machine.responseHeadReceived(Self.unauthorized, now: at(0.5))
        else {
            Issue.record("the replay's 401 did not go to the client")
            return
        }
        #expect(response.head.status == 401)
        #expect(response.refusalOf?.name == "default")
        #expect(response.accepted == nil)
    }

    /// A body for a host that gets no token is never copied: there is no refresh to replay after.
    @Test func aBodyForAHostWithoutTheTokenIsNotKept() {
        var machine = Self.machine { $0.injectHosts = [.host("elsewhere.test")] }
        #expect(
            machine.requestHeadReceived(Self.post10, now: at(0))
                == .connectUpstream(Self.upstream, allowReuse: true),
            "no reservation"
        )
        _ = machine.upstreamReady(isReused: true, now: at(0))
        _ = Self.bytes("0123456789") { machine.requestBodyReceived($0, now: at(0)) }
        _ = machine.requestEnded(now: at(0))
        // Its pooled connection dies after the body went out: a POST is not resent either way.
        guard
            case .respond(let response) = machine.upstreamEnded(
                endsResponse: false,
                sentNothing: false,
                reset: false,
                now: at(0.1)
            )
        else {
            Issue.record("expected a 502")
            return
        }
        #expect(response.error.status == 502)
        #expect(response.releasesReplayBytes == 0)
    }

    // MARK: Tunnels and WebSocket

    @Test func aWebSocketHandshakeBecomesARelay() {
        var machine = Self.machine()
        let head = Self.request(
            "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
        )
        let switching = Self.response(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
        )
        var actions: [Action] = []
        actions.append(machine.requestHeadReceived(head, now: at(0)))
        actions.append(machine.tokenAnswered(.send(Self.token1), now: at(0)))
        actions.append(machine.upstreamReady(isReused: true, now: at(0)))
        actions.append(machine.informationalReceived(switching, now: at(0.1)))
        #expect(machine.clientInput == .relay && machine.upstreamInput == .relay)
        #expect(machine.deadline == at(3600.1), "tunnel_idle_timeout")
        machine.relayed(now: at(10))
        #expect(machine.deadline == at(3610))
        actions.append(machine.clientFinished())
        #expect(machine.clientInput == .none && machine.upstreamInput == .relay)
        actions.append(machine.relayUpstreamEnded(closed: false))
        let record = Self.record(head)
        #expect(
            actions == [
                .requestToken(Self.session, reserving: 0),
                .connectUpstream(Self.upstream, allowReuse: true),
                Self.send(head),
                .switchProtocols(
                    switching,
                    record,
                    accepted: AcceptedToken(session: Self.session, generation: 1),
                    releasesReplayBytes: 0
                ),
                .shutDownUpstreamWrite,
                .close(.relayEnded),
            ]
        )
    }

    @Test func aSwitchNobodyAskedForIs502() {
        var machine = Self.machine()
        _ = machine.requestHeadReceived(Self.get, now: at(0))
        _ = machine.tokenAnswered(.send(Self.token1), now: at(0))
        _ = machine.upstreamReady(isReused: true, now: at(0))
        let action = machine.informationalReceived(
            Self.response("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"),
            now: at(0.1)
        )
        guard case .respond(let response) = action else {
            Issue.record("expected a 502, got \(action)")
            return
        }
        #expect(response.error.status == 502)
        #expect(response.closesConnection)
    }

    /// undici's ProxyAgent: CONNECT with `Connection: close`, then plain requests inside.
    @Test func aServedTunnelOutlivesTheConnectsOwnConnectionClose() {
        var machine = Self.machine()
        let connect = Self.request(
            "CONNECT api.test:8000 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\n"
        )
        let record = ConnectionMachine.RequestRecord(head: connect, startedAt: at(0))
        #expect(machine.requestHeadReceived(connect, now: at(0)) == .acceptServedTunnel(record))
        #expect(machine.clientInput == .tunnelFirstBytes)
        #expect(machine.servedTunnelReceivedFirstBytes(startsTLS: false, now: at(0.1)) == .none)
        let inside = Self.request("GET /inside HTTP/1.1\r\nHost: api.test:8000\r\n\r\n")
        let request = Self.sent(inside, by: &machine, now: at(0.1))
        #expect(request?.path == .absolute(inside.target))
        #expect(request?.target.origin == Self.upstream)
    }

    /// What `head`, arriving now, is sent upstream as, with the token at once and a fresh connection.
    static func sent(
        _ head: RequestHead,
        by machine: inout ConnectionMachine,
        now: Instant
    ) -> ConnectionMachine.RequestToSend? {
        #expect(machine.requestHeadReceived(head, now: now) == .requestToken(Self.session, reserving: 0))
        _ = machine.tokenAnswered(.send(Self.token1), now: now)
        guard case .sendRequest(let request) = machine.upstreamReady(isReused: false, now: now) else {
            Issue.record("expected the request to be sent")
            return nil
        }
        return request
    }

    @Test func tlsInsideAServedTunnelCloses() {
        var machine = Self.machine()
        let connect = Self.request("CONNECT api.test:8000 HTTP/1.1\r\nHost: api.test:8000\r\n\r\n")
        _ = machine.requestHeadReceived(connect, now: at(0))
        #expect(
            machine.servedTunnelReceivedFirstBytes(startsTLS: true, now: at(0.1))
                == .close(.tlsInsideServedTunnel(Self.upstream))
        )
    }

    // MARK: Intercepted tunnels (tls_intercept)

    static func interceptingMachine() -> ConnectionMachine {
        Self.machine {
            $0.intercept.isEnabled = true
            $0.injectHosts = [.host("api.test")]
        }
    }

    static let connect443 = request("CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n")
    static let secureUpstream = Origin(isHTTPS: true, host: "api.test", port: 443)

    @Test func anInterceptedTunnelTerminatesTLSThenServesRequestsToTheHTTPSTarget() {
        var machine = Self.interceptingMachine()
        let record = ConnectionMachine.RequestRecord(head: Self.connect443, startedAt: at(0))
        #expect(machine.requestHeadReceived(Self.connect443, now: at(0)) == .acceptServedTunnel(record))
        #expect(machine.servedTunnelReceivedFirstBytes(startsTLS: true, now: at(0.5)) == .startTLS(host: "api.test"))
        #expect(machine.clientInput == .none, "the stream runs the handshake")
        #expect(machine.deadline == at(10.5), "client_header_timeout from the first byte")
        #expect(machine.tlsEstablished(now: at(0.6)) == .countInterceptedTunnel)
        #expect(machine.clientInput == .head)
        let inside = Self.request("GET /inside HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let request = Self.sent(inside, by: &machine, now: at(0.7))
        #expect(request?.target.origin == Self.secureUpstream)
        #expect(request?.authorization == Self.line1)
        #expect(request?.path == .absolute(inside.target))
    }

    @Test func aHandshakeThatDoesNotCompleteWithinTheHeaderTimeoutCloses() {
        var machine = Self.interceptingMachine()
        _ = machine.requestHeadReceived(Self.connect443, now: at(0))
        _ = machine.servedTunnelReceivedFirstBytes(startsTLS: true, now: at(0.5))
        #expect(machine.timerFired(now: at(10)) == .none)
        #expect(machine.timerFired(now: at(10.5)) == .close(.interceptHandshakeTimedOut(host: "api.test")))
    }

    @Test func aFailedHandshakeOrAMissingCertificateIsNamed() {
        var refused = Self.interceptingMachine()
        _ = refused.requestHeadReceived(Self.connect443, now: at(0))
        _ = refused.servedTunnelReceivedFirstBytes(startsTLS: true, now: at(0.5))
        #expect(
            refused.clientClosed(tlsFailure: .certificateRefused(alert: "unknown ca"))
                == .close(.interceptHandshakeFailed(host: "api.test", .certificateRefused(alert: "unknown ca")))
        )
        var gone = Self.interceptingMachine()
        _ = gone.requestHeadReceived(Self.connect443, now: at(0))
        _ = gone.servedTunnelReceivedFirstBytes(startsTLS: true, now: at(0.5))
        #expect(gone.clientClosed() == .close(.interceptHandshakeFailed(host: "api.test", .peerClosedDuringHandshake)))
        var noCertificate = Self.interceptingMachine()
        _ = noCertificate.requestHeadReceived(Self.connect443, now: at(0))
        _ = noCertificate.servedTunnelReceivedFirstBytes(startsTLS: true, now: at(0.5))
        #expect(
            noCertificate.serverCertificateUnavailable("no key")
                == .close(.interceptCertificateUnavailable(host: "api.test", reason: "no key"))
        )
    }

    /// The first byte decides: on 443 the tunnel takes TLS only; on another port clear HTTP is
    /// still served as before, and TLS is terminated.
    @Test func theFirstByteDecidesBetweenClearAndTLS() {
        var on443 = Self.interceptingMachine()
        _ = on443.requestHeadReceived(Self.connect443, now: at(0))
        #expect(
            on443.servedTunnelReceivedFirstBytes(startsTLS: false, now: at(0.1))
                == .close(.clearTextInsideInterceptedTunnel(Self.secureUpstream))
        )
        let connect9000 = Self.request("CONNECT api.test:9000 HTTP/1.1\r\nHost: api.test:9000\r\n\r\n")
        var clear = Self.interceptingMachine()
        _ = clear.requestHeadReceived(connect9000, now: at(0))
        #expect(clear.servedTunnelReceivedFirstBytes(startsTLS: false, now: at(0.1)) == .none)
        #expect(clear.servedTunnelTarget?.origin == Origin(isHTTPS: false, host: "api.test", port: 9000))
        var tls = Self.interceptingMachine()
        _ = tls.requestHeadReceived(connect9000, now: at(0))
        #expect(tls.servedTunnelReceivedFirstBytes(startsTLS: true, now: at(0.1)) == .startTLS(host: "api.test"))
        #expect(tls.servedTunnelTarget?.origin == Origin(isHTTPS: true, host: "api.test", port: 9000))
    }

    @Test func withoutTLSInterceptionAConnectToAnInjectHostOn443Is405NamingTLSIntercept() {
        var machine = Self.machine { $0.injectHosts = [.host("api.test")] }
        guard case .respond(let response) = machine.requestHeadReceived(Self.connect443, now: at(0)) else {
            Issue.record("expected a 405")
            return
        }
        #expect(response.error.status == 405)
        #expect(response.error.message.contains("tls_intercept"))
        #expect(response.error.message.contains("http://"))
    }

    @Test func aConnectToAnotherHostOpensAByteTunnel() {
        var machine = Self.machine()
        let connect = Self.request("CONNECT elsewhere.test:443 HTTP/1.1\r\nHost: elsewhere.test:443\r\n\r\n")
        let origin = Origin(isHTTPS: false, host: "elsewhere.test", port: 443)
        #expect(machine.requestHeadReceived(connect, now: at(0)) == .openTunnel(origin))
        #expect(machine.clientInput == .none && machine.deadline == nil)
        let record = ConnectionMachine.RequestRecord(head: connect, startedAt: at(0))
        #expect(machine.tunnelConnected(now: at(0.5)) == .writeTunnelEstablished(record))
        #expect(machine.clientInput == .relay)
        #expect(machine.relayUpstreamEnded(closed: true) == .close(.relayEnded))
    }

    // MARK: Refusals and the client's end

    @Test func malformedRequestsAre400AndClose() {
        var machine = Self.machine()
        #expect(
            machine.requestMalformed(.invalidRequestLine)
                == .respond(.init(error: .malformedRequest(.invalidRequestLine), closesConnection: true))
        )
        #expect(machine.clientInput == .none)
    }

    @Test func aRefusedRequestWithABodyClosesTheConnection() {
        var machine = Self.machine()
        let head = Self.request("POST /x HTTP/1.1\r\nHost: evil.test\r\nContent-Length: 3\r\n\r\n")
        let action = machine.requestHeadReceived(head, now: at(0))
        #expect(
            action
                == .respond(
                    .init(
                        error: .hostRefused("evil.test"),
                        closesConnection: true,
                        record: .init(head: head, startedAt: at(0))
                    )
                )
        )
    }

    @Test func aHalfCloseAfterACompleteRequestStillGetsTheAnswer() {
        var machine = Self.machine()
        _ = machine.requestHeadReceived(Self.get, now: at(0))
        _ = machine.tokenAnswered(.send(Self.token1), now: at(0))
        _ = machine.upstreamReady(isReused: true, now: at(0))
        #expect(machine.clientFinished() == .none)
        _ = machine.responseHeadReceived(Self.ok, now: at(0.1))
        _ = machine.responseBodyReceived(count: 2, now: at(0.1))
        #expect(machine.responseEnded(upstreamSentMore: false, now: at(0.2)) == Self.end(Self.get))
        #expect(machine.clientFinished() == .closeAfterFlush)
    }

    @Test func aHalfCloseMidBodyAbandonsTheRequest() {
        var machine = Self.machine()
        _ = machine.requestHeadReceived(Self.post10, now: at(0))
        _ = machine.tokenAnswered(.send(Self.token1), reserved: 10, now: at(0))
        _ = machine.upstreamReady(isReused: true, now: at(0))
        #expect(
            machine.clientFinished()
                == .close(
                    .aborted(
                        reason: "client closed the connection mid-request",
                        cancelsWaiter: nil,
                        releasesReplayBytes: 10
                    )
                )
        )
    }

    // MARK: Shutting down

    /// An idle connection with nothing left to send closes outright: a lingering close would hold the
    /// drain for a client that has no reason to close first. One still sending its last response,
    /// or whose client is in the middle of a request head, closes after a flush.
    @Test func aDrainClosesAnIdleConnectionAtOnceAndTheOthersAfterAFlush() {
        var idle = Self.machine()
        #expect(idle.drainRequested(hasPendingWrites: false) == .close(.idle))
        #expect(idle.isClosed)

        var flushing = Self.machine()
        _ = flushing.requestHeadReceived(Self.get, now: at(0))
        _ = flushing.tokenAnswered(.send(Self.token1), now: at(0))
        _ = flushing.upstreamReady(isReused: true, now: at(0))
        _ = flushing.responseHeadReceived(Self.ok, now: at(0.1))
        _ = flushing.responseBodyReceived(count: 2, now: at(0.1))
        #expect(flushing.responseEnded(upstreamSentMore: false, now: at(0.2)) == Self.end(Self.get))
        #expect(flushing.drainRequested(hasPendingWrites: true) == .closeAfterFlush)
        #expect(!flushing.isClosed)

        var reading = Self.machine()
        reading.requestHeadStarted(now: at(0))
        #expect(reading.drainRequested(hasPendingWrites: false) == .closeAfterFlush)
    }
}
