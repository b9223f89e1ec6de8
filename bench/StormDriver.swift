import BearerCore
import BearerIO
import Foundation
import Glibc

/// Watches one phase of a run against your own stack from the admin listener, on a thread of its
/// own: every `every` it forces an expiry storm (`POST /refresh?park=1`, answered when the refresh
/// ended) and reads `/status` for how long the token endpoint took and how many requests waited;
/// between storms it polls `/status` every 100 ms for refreshes the proxy made by itself (ahead of
/// an expiry, after a 401), the natural ones. Times are seconds since the phase's measurement began.
final class StormDriver: @unchecked Sendable {
    struct Storm {
        /// When the POST went, and when its answer came: the window requests parked in.
        var start: Double
        var end: Double
        /// `ok`, or the admin's error (`rejected`, `unreachable`, …).
        var outcome: String
        var generation: Int?
        /// The refresh as /status told it right after: its duration (the token endpoint's latency
        /// under this load, as the proxy measured it) and how many requests it held. Nil when
        /// another refresh ended before it was read.
        var refresh: StackAdmin.LastRefresh?
        /// It joined a refresh the proxy had started by itself, instead of starting one.
        var joined = false
    }

    /// A refresh the proxy made by itself, seen within 100 ms of its end.
    struct NaturalRefresh {
        var seenAt: Double
        var refresh: StackAdmin.LastRefresh
    }

    private let admin: StackAdmin
    private let session: String?
    private let lock = NSLock()
    private var stopped = false
    private var storms: [Storm] = []
    private var naturals: [NaturalRefresh] = []
    private var thread: pthread_t?

    init(admin: StackAdmin, session: String?) {
        self.admin = admin
        self.session = session
    }

    /// Starts watching; `every`: nil watches without storms (the steady phase). `quietAfter`: no
    /// storm starts after then (a storm nobody sends a request into is not a storm).
    func start(every: Duration?, from start: Instant, quietAfter: Instant) {
        let lastSeen = (try? self.admin.status(session: self.session))?.lastRefresh?.key
        self.thread = spawnThread(name: "bench-storms") {
            self.run(every: every, from: start, quietAfter: quietAfter, lastSeen: lastSeen)
        }
    }

    private func run(every: Duration?, from start: Instant, quietAfter: Instant, lastSeen initial: String?) {
        var lastSeen = initial
        var nextStorm = every.map { start + $0 }
        while !self.isStopped {
            if let every, let planned = nextStorm, Instant.now() >= planned, Instant.now() < quietAfter {
                let storm = self.storm(start: start)
                lastSeen = storm.seen ?? lastSeen
                self.record { $0.storms.append(storm.storm) }
                nextStorm = max(planned + every, Instant.now())
                continue
            }
            if let seen = self.pollNatural(start: start, lastSeen: lastSeen) { lastSeen = seen }
            let pollEnd = Instant.now() + .milliseconds(100)
            while !self.isStopped && Instant.now() < min(pollEnd, nextStorm ?? pollEnd) { usleep(10_000) }
        }
    }

    private var isStopped: Bool {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.stopped
    }

    private func record(_ change: (StormDriver) -> Void) {
        self.lock.lock()
        change(self)
        self.lock.unlock()
    }

    /// One storm: the POST, then /status for the refresh it ended.
    private func storm(start: Instant) -> (storm: Storm, seen: String?) {
        let began = Instant.now()
        var storm = Storm(start: (began - start).seconds, end: 0, outcome: "ok")
        do {
            let answer = try self.admin.forceStorm()
            storm.end = (Instant.now() - start).seconds
            storm.outcome = answer.error ?? "ok"
            storm.generation = answer.generation
            let last = try self.admin.status(session: self.session).lastRefresh
            if let last, last.generation == answer.generation || answer.generation == nil {
                storm.refresh = last
                storm.joined = last.trigger != "admin-park"
                if storm.joined { self.noteNatural(last, start: start) }
            }
            return (storm, last?.key)
        } catch {
            storm.end = (Instant.now() - start).seconds
            storm.outcome = "admin: \(error)"
            return (storm, nil)
        }
    }

    /// A refresh the proxy made by itself since `lastSeen`, noted; returns the key now seen.
    private func pollNatural(start: Instant, lastSeen: String?) -> String? {
        guard let last = try? self.admin.status(session: self.session).lastRefresh else { return nil }
        if last.key != lastSeen && last.trigger != "admin-park" { self.noteNatural(last, start: start) }
        return last.key
    }

    private func noteNatural(_ last: StackAdmin.LastRefresh, start: Instant) {
        let natural = NaturalRefresh(seenAt: (Instant.now() - start).seconds, refresh: last)
        self.record { $0.naturals.append(natural) }
    }

    /// Stops (waiting for a storm in flight to be answered) and returns what the phase saw.
    func stop() -> (storms: [Storm], naturals: [NaturalRefresh]) {
        self.record { $0.stopped = true }
        if let thread = self.thread { joinThread(thread) }
        self.lock.lock()
        defer { self.lock.unlock() }
        return (self.storms, self.naturals)
    }
}
