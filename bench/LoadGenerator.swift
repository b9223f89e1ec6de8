import BearerCore
import BearerHTTP
import BearerIO
import Glibc
import Synchronization

/// A closed-loop HTTP/1.1 load generator on the library's event loops.
///
/// Each connection keeps `pipeline` requests in flight (1: send, wait for the response, send the next)
/// over keep-alive (with `rate`, a connection's next request waits until it is due, so that two
/// scenarios can be compared at the same offered load rather than each at its own saturation), and stamps every request with a unique `X-Request-Id` so the mock upstream can
/// count how often it saw each one. A connection that fails is counted and opened again.
final class LoadGenerator: Sendable {
    struct Target: Sendable {
        var address: SocketAddress
        var hostHeader: String
        /// Path, or an absolute URL for a forward proxy.
        var requestTarget: String
        var extraHeaders: String
        /// What an `https_proxy` client does first: CONNECT, then TLS inside the tunnel.
        var tunnel: Tunnel? = nil
        /// Each connection carries one request and is then closed and opened again (with a tunnel:
        /// CONNECT and a full handshake every time), so what is measured is new connections.
        var reconnectsAfterEachResponse = false
        /// Sent without a body (with `Content-Length: 0` where a body is expected).
        var method = "GET"
    }

    /// A CONNECT tunnel and the TLS session inside it.
    struct Tunnel: Sendable {
        var authority: String
        /// A client context; the bench does not verify (the client's CPU is not what is measured).
        var tls: TLSContext
        var serverName: String
        /// Each new tunnel offers the session the last one got, so its handshake resumes.
        var resumesSessions = false
    }

    struct Result: Sendable {
        var samples: [Sample] = []
        var statuses: [Int: Int] = [:]
        /// The same by target (`targets` order): what each session's clients saw.
        var statusesByTarget: [Int: [Int: Int]] = [:]
        var errors: [String: Int] = [:]
        /// Tunnels whose TLS handshake resumed a session (resumed-tunnels: all of them, after the first).
        var resumedHandshakes = 0
        var measuredSeconds: Double = 0
    }

    /// Connection i goes to `targets[i % targets.count]` (a fleet spreads its clients over its proxies).
    let targets: [Target]
    let connections: Int
    let pipeline: Int
    let group: EventLoopGroup
    let connectionIDBase: Int
    /// Requests per second over all connections; nil: as fast as the answers come.
    let rate: Double?

    convenience init(target: Target, connections: Int, pipeline: Int, group: EventLoopGroup, connectionIDBase: Int = 0)
    {
        self.init(
            targets: [target],
            connections: connections,
            pipeline: pipeline,
            group: group,
            connectionIDBase: connectionIDBase
        )
    }

    init(
        targets: [Target],
        connections: Int,
        pipeline: Int,
        group: EventLoopGroup,
        connectionIDBase: Int = 0,
        rate: Double? = nil
    ) {
        precondition(!targets.isEmpty, "a load generator needs a target")
        self.rate = rate
        self.targets = targets
        self.connections = connections
        self.pipeline = max(1, pipeline)
        self.group = group
        self.connectionIDBase = connectionIDBase
    }

    enum Phase {
        case warmup
        case measuring
    }

    /// Runs `warmup` unmeasured, then `duration` measured; returns what the measured part saw.
    /// `onMeasurementStart` runs (on this thread) when measuring begins; `progress` about four times
    /// a second, with the time spent in the phase and the requests completed since measuring began.
    func run(
        warmup: Duration,
        duration: Duration,
        onMeasurementStart: () -> Void = {},
        onMeasurementEnd: () -> Void = {},
        progress: (Phase, Duration, Int) -> Void = { _, _, _ in },
        isInterrupted: () -> Bool = { false }
    ) -> Result {
        let shared = SharedState()
        let perLoop = Locked<[Result]>([])
        let started = Atomic<Int>(0)
        for loop in self.group.loops {
            loop.execute {
                let state = LoopState(loop: loop, shared: shared)
                shared.register(loop.index, state)
                started.add(1, ordering: .relaxed)
            }
        }
        while started.load(ordering: .relaxed) < self.group.loops.count { usleep(1000) }
        for index in 0..<self.connections {
            let loop = self.group.loops[index % self.group.loops.count]
            let targetIndex = index % self.targets.count
            let target = self.targets[targetIndex]
            let pipeline = self.pipeline
            let id = self.connectionIDBase + index
            let interval = self.rate.map { Duration.nanoseconds(Int64(Double(self.connections) / $0 * 1e9)) }
            // Each connection's requests fall at its own point of the interval: together an even
            // stream, not all of them at once every interval (a burst the size of the connection
            // count, which measures how a burst queues, not the offered load).
            let offset = interval.map { Duration.nanoseconds($0.nanoseconds * Int64(index) / Int64(self.connections)) }
            loop.execute {
                guard let state = shared.state(for: loop.index) else { return }
                let connection = LoadConnection(
                    id: id,
                    target: target,
                    targetIndex: targetIndex,
                    pipeline: pipeline,
                    state: state,
                    interval: interval,
                    offset: offset
                )
                state.connections.append(connection)
                connection.open()
            }
        }
        Self.wait(warmup, isInterrupted: isInterrupted) { progress(.warmup, $0, 0) }
        let measurementStart = Instant.now()
        shared.measurementStart.withLock { $0 = measurementStart }
        onMeasurementStart()
        Self.wait(duration, isInterrupted: isInterrupted) {
            progress(.measuring, $0, shared.completed.load(ordering: .relaxed))
        }
        let measurementEnd = Instant.now()
        shared.measurementEnd.withLock { $0 = measurementEnd }
        onMeasurementEnd()
        let done = Atomic<Int>(0)
        for loop in self.group.loops {
            loop.execute {
                if let state = shared.state(for: loop.index) {
                    for connection in state.connections { connection.stop() }
                    let result = state.result
                    perLoop.withLock { $0.append(result) }
                }
                done.add(1, ordering: .relaxed)
            }
        }
        while done.load(ordering: .relaxed) < self.group.loops.count { usleep(1000) }
        var merged = Result()
        for result in perLoop.withLock({ $0 }) {
            merged.samples += result.samples
            merged.statuses.merge(result.statuses, uniquingKeysWith: +)
            for (target, statuses) in result.statusesByTarget {
                merged.statusesByTarget[target, default: [:]].merge(statuses, uniquingKeysWith: +)
            }
            merged.errors.merge(result.errors, uniquingKeysWith: +)
            merged.resumedHandshakes += result.resumedHandshakes
        }
        merged.measuredSeconds = (measurementEnd - measurementStart).seconds
        return merged
    }

    /// Sleeps for `duration`, calling `tick` with the time spent every quarter of a second; ends
    /// within 20 ms of `isInterrupted` (a Ctrl-C stops the load at once).
    private static func wait(_ duration: Duration, isInterrupted: () -> Bool, tick: (Duration) -> Void) {
        let start = Instant.now()
        let end = start + duration
        var nextTick = start
        while !isInterrupted() {
            let now = Instant.now()
            guard now < end else { return }
            if now >= nextTick {
                tick(now - start)
                nextTick = now + .milliseconds(250)
            }
            usleep(UInt32(min((end - now).nanoseconds / 1000, 20_000)))
        }
    }

    /// State reachable from every loop: when measuring started and stopped, each loop's own state.
    final class SharedState: Sendable {
        /// Requests completed since measuring began, for the progress line.
        let completed = Atomic<Int>(0)
        let measurementStart = Locked<Instant?>(nil)
        let measurementEnd = Locked<Instant?>(nil)
        private let states = Locked<[Int: UnsafeTransferBox<LoopState>]>([:])

        func register(_ index: Int, _ state: LoopState) {
            self.states.withLock { $0[index] = UnsafeTransferBox(state) }
        }

        func state(for index: Int) -> LoopState? {
            self.states.withLock { $0[index]?.value }
        }
    }

    /// What one loop's connections record. Confined to that loop.
    final class LoopState {
        unowned let loop: EventLoop
        let shared: SharedState
        var connections: [LoadConnection] = []
        var result = Result()
        /// Cached from `shared` once measuring starts, to avoid a lock per request.
        private var start: Instant?
        private var end: Instant?

        init(loop: EventLoop, shared: SharedState) {
            self.loop = loop
            self.shared = shared
        }

        func record(status: Int, target: Int, sentAt: Instant, completedAt: Instant) {
            if self.start == nil { self.start = self.shared.measurementStart.withLock { $0 } }
            guard let start = self.start, sentAt >= start else { return }
            if self.end == nil { self.end = self.shared.measurementEnd.withLock { $0 } }
            if let end = self.end, completedAt > end { return }
            self.result.statuses[status, default: 0] += 1
            self.result.statusesByTarget[target, default: [:]][status, default: 0] += 1
            self.shared.completed.add(1, ordering: .relaxed)
            let latency = completedAt - sentAt
            self.result.samples.append(
                Sample(
                    completedAtMicroseconds: UInt32(clamping: (completedAt - start).nanoseconds / 1000),
                    latencyMicroseconds: UInt32(clamping: latency.nanoseconds / 1000)
                )
            )
        }

        func recordError(_ kind: String) {
            guard self.start != nil || self.shared.measurementStart.withLock({ $0 }) != nil, self.end == nil else {
                return
            }
            self.result.errors[kind, default: 0] += 1
        }

        func recordHandshake(resumed: Bool) {
            guard resumed, self.start != nil, self.end == nil else { return }
            self.result.resumedHandshakes += 1
        }
    }
}

struct UnsafeTransferBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// One keep-alive connection of the load generator. Confined to its loop.
final class LoadConnection: StreamConnectionDelegate {
    let id: Int
    let target: LoadGenerator.Target
    /// Its place in the generator's targets.
    let targetIndex: Int
    let pipeline: Int
    unowned let state: LoadGenerator.LoopState
    private var stream: StreamConnection?
    private var parser = HTTPResponseParser(maximumHeadBytes: 64 * 1024)
    private var sequence = 0
    private var inFlight: [Instant] = []
    private var currentStatus = 0
    private var isStopped = false
    private var phase: Phase = .connecting
    /// When the current connection was opened: a new tunnel's latency runs from here.
    private var openedAt = Instant.now()
    /// With a rate: the time between this connection's requests, and when the last one was due.
    private let interval: Duration?
    private var lastDue: Instant?
    /// With a rate: how far into the interval this connection's first request falls.
    private let offset: Duration?

    /// Where the connection is before its requests can go.
    private enum Phase {
        case connecting
        /// CONNECT sent, its answer awaited.
        case tunnelling
        /// The TLS handshake inside the tunnel is running.
        case handshaking
        case ready
    }

    init(
        id: Int,
        target: LoadGenerator.Target,
        targetIndex: Int,
        pipeline: Int,
        state: LoadGenerator.LoopState,
        interval: Duration?,
        offset: Duration? = nil
    ) {
        self.interval = interval
        self.offset = offset
        self.id = id
        self.target = target
        self.targetIndex = targetIndex
        self.pipeline = pipeline
        self.state = state
    }

    func open() {
        guard !self.isStopped else { return }
        do throws(IOError) {
            self.openedAt = Instant.now()
            let (fd, connected) = try Socket.connect(to: self.target.address)
            let stream = StreamConnection(fd: fd, loop: self.state.loop, isConnecting: !connected)
            self.stream = stream
            self.parser = HTTPResponseParser(maximumHeadBytes: 64 * 1024)
            self.inFlight.removeAll()
            self.phase = .connecting
            stream.start(delegate: self)
            if connected { self.streamConnected(stream) }
        } catch {
            self.state.recordError("connect: \(error.reason)")
            self.state.loop.schedule(after: .milliseconds(100)) { [weak self] in self?.open() }
        }
    }

    func stop() {
        self.isStopped = true
        self.stream?.close()
        self.stream = nil
    }

    private func sendRequests() {
        guard let stream = self.stream else { return }
        let now = Instant.now()
        while self.inFlight.count < self.pipeline {
            self.sequence += 1
            let requestID = self.id << 32 | self.sequence
            stream.withOutbound { buffer in
                buffer.writeString(self.target.method)
                buffer.writeStaticString(" ")
                buffer.writeString(self.target.requestTarget)
                buffer.writeStaticString(" HTTP/1.1\r\nHost: ")
                buffer.writeString(self.target.hostHeader)
                buffer.writeStaticString("\r\nX-Request-Id: ")
                buffer.writeDecimal(requestID)
                buffer.writeStaticString("\r\n")
                buffer.writeString(self.target.extraHeaders)
                buffer.writeStaticString("\r\n")
            }
            // A new tunnel's latency includes its CONNECT and handshake.
            self.inFlight.append(self.target.reconnectsAfterEachResponse ? self.openedAt : now)
        }
        stream.flush()
    }

    /// The next request now, or with a rate when it is due: one interval after the last was due,
    /// never earlier than now (a connection that fell behind does not catch up in a burst).
    private func sendWhenDue() {
        guard let interval = self.interval else { return self.sendRequests() }
        let now = Instant.now()
        let due = max(now, (self.lastDue ?? now) + interval)
        self.lastDue = due
        guard due > now else { return self.sendRequests() }
        _ = self.state.loop.schedule(at: due) { [weak self] in
            // Unless the connection failed and is being opened again: it sends once it is up.
            guard let self, self.phase == .ready else { return }
            self.sendRequests()
        }
    }

    /// TCP is up (then, with a tunnel, CONNECT goes first), or the tunnel's TLS handshake completed.
    func streamConnected(_ connection: StreamConnection) {
        if self.phase == .connecting, let tunnel = self.target.tunnel {
            self.phase = .tunnelling
            connection.write(Array("CONNECT \(tunnel.authority) HTTP/1.1\r\nHost: \(tunnel.authority)\r\n\r\n".utf8))
            connection.flush()
            return
        }
        if self.phase == .handshaking { self.state.recordHandshake(resumed: connection.tls?.wasSessionReused ?? false) }
        self.phase = .ready
        self.parser.expectResponse(to: self.target.method == "HEAD" ? .head : .get)
        if self.lastDue == nil, let interval = self.interval, let offset = self.offset {
            // The first request, at this connection's point of the interval.
            self.lastDue = Instant.now() + offset - interval
            return self.sendWhenDue()
        }
        // A connection opened again (reconnectsAfterEachResponse) keeps its pace under a rate.
        self.sendWhenDue()
    }

    /// The answer to CONNECT: 200, then TLS inside the tunnel.
    private func tunnelAnswered(_ connection: StreamConnection, _ tunnel: LoadGenerator.Tunnel) {
        let end = connection.inbound.withUnsafeReadableBytes { bytes -> Int? in
            guard bytes.count >= 4 else { return nil }
            return (0...(bytes.count - 4)).first {
                bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10
            }
        }
        guard let end else { return }
        let isEstablished = connection.inbound.withUnsafeReadableBytes { $0.starts(with: Array("HTTP/1.1 200".utf8)) }
        connection.inbound.moveReaderIndex(forwardBy: end + 4)
        guard isEstablished,
            let session = tunnel.tls.makeConnection(
                serverName: tunnel.serverName,
                sessionKey: tunnel.resumesSessions ? tunnel.authority : nil
            )
        else {
            self.fail("CONNECT refused")
            return
        }
        self.phase = .handshaking
        connection.startTLS(session)
    }

    func streamReceived(_ connection: StreamConnection) {
        if self.phase == .tunnelling, let tunnel = self.target.tunnel {
            self.tunnelAnswered(connection, tunnel)
            return
        }
        while !self.isStopped {
            let event: HTTPResponseParser.Event
            do throws(HTTPParseError) {
                event = try connection.inbound.parseNext { raw throws(HTTPParseError) in try self.parser.next(raw) }
            } catch {
                self.fail("malformed response")
                return
            }
            switch event {
            case .needMore:
                return
            case .head(let head, _):
                if !head.isInformational { self.currentStatus = head.status }
            case .body:
                continue
            case .end:
                let sentAt = self.inFlight.isEmpty ? Instant.now() : self.inFlight.removeFirst()
                self.state.record(
                    status: self.currentStatus,
                    target: self.targetIndex,
                    sentAt: sentAt,
                    completedAt: Instant.now()
                )
                self.parser.expectResponse(to: self.target.method == "HEAD" ? .head : .get)
                if self.target.reconnectsAfterEachResponse {
                    connection.close()
                    self.stream = nil
                    self.open()
                    return
                }
                if self.inFlight.isEmpty { self.sendWhenDue() }
            }
        }
    }

    func streamReadEnded(_ connection: StreamConnection) {
        self.fail(self.inFlight.isEmpty ? "closed by server" : "closed mid-request")
    }

    func streamWritable(_ connection: StreamConnection) {}

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.stream = nil
        self.fail(error.map { "socket: \($0.reason)" } ?? "closed")
    }

    private func fail(_ kind: String) {
        guard !self.isStopped else { return }
        self.state.recordError(kind)
        self.stream?.close()
        self.stream = nil
        self.state.loop.schedule(after: .milliseconds(10)) { [weak self] in self?.open() }
    }
}
