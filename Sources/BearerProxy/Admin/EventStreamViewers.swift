import BearerCore
import BearerIO

/// The viewers of `GET /events` and the one timer that sends them all a snapshot each second.
///
/// The timer is the admin loop's (a `DeadlineTimer`, armed while anyone watches): no thread of its
/// own, no sleep, and in tests the loop's manual clock sets the cadence. A new viewer gets a snapshot
/// at once, then one per tick with the others. A viewer that reads slower than the snapshots come is
/// skipped while its unsent bytes are over `backlogLimit`, so watching costs a bounded amount each.
/// At most `limit` viewers: a page left open in many tabs must not turn the admin into a fan-out
/// service. Confined to the admin's loop.
final class EventStreamViewers {
    static let limit = 8
    static let interval = Duration.seconds(1)
    static let backlogLimit = 256 * 1024

    private let loop: EventLoop
    /// Set by the first viewer: the server whose loops and sessions the snapshots read.
    private weak var server: AdminServer?
    private var viewers: [StreamConnection] = []
    private var timer = DeadlineTimer()
    private var previous: AdminSnapshot.Totals?
    private var isGathering = false

    init(loop: EventLoop) {
        self.loop = loop
    }

    var count: Int { self.viewers.count }

    /// Adds `stream` as a viewer, or answers false when `limit` are watching already.
    func add(_ stream: StreamConnection, of server: AdminServer) -> Bool {
        guard self.viewers.count < Self.limit else { return false }
        self.server = server
        self.viewers.append(stream)
        self.send(to: [stream])
        return true
    }

    /// The viewer's client went away (or the proxy closed it): it gets nothing more.
    func remove(_ stream: StreamConnection) {
        self.viewers.removeAll { $0 === stream }
        if self.viewers.isEmpty {
            self.timer.cancel(on: self.loop)
            self.previous = nil
        }
    }

    private func arm() {
        guard !self.viewers.isEmpty else { return }
        self.timer.arm(at: self.loop.now + Self.interval, on: self.loop) { [weak self] in self?.tick() }
    }

    private func tick() {
        self.timer.fired()
        self.send(to: self.viewers)
    }

    /// Gathers the loops' counters, then writes one snapshot to `targets` (those still watching).
    private func send(to targets: [StreamConnection]) {
        guard let server = self.server else { return }
        server.gatherLoopMetrics(from: self.loop) { [weak self] loops in
            guard let self else { return }
            let now = self.loop.now
            let snapshot = AdminSnapshot(runtime: server.runtime, loops: loops, now: now, previous: self.previous)
            // A viewer joining mid-second gets the snapshot, not a rate over a sliver of time.
            if targets.count == self.viewers.count || self.previous == nil { self.previous = snapshot.totals }
            for stream in targets where self.viewers.contains(where: { $0 === stream }) {
                guard stream.pendingWriteBytes < Self.backlogLimit else { continue }
                stream.withOutbound { $0.writeString("data: \(snapshot.json)\n\n") }
                stream.flush()
            }
            self.arm()
        }
    }
}

@available(*, unavailable)
extension EventStreamViewers: Sendable {}
