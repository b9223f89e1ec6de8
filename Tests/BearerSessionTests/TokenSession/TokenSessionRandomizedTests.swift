import BearerCore
import BearerTestSupport
import Testing

@testable import BearerSession

/// Drives the state machine through many random interleavings and checks its invariants after every
/// event: at most one token call in flight, each with a new attempt id, the end of an earlier one
/// ignored, no request replayed twice, every parked request resumed or failed in the end, nothing
/// due right after the deadline passed, the generation only increasing.
///
/// A run depends on its seed alone: every choice comes from the seeded generator, and requests are
/// picked from a list in the order they were made, never in a Dictionary's order (which changes from
/// run to run, even within one process). A failure names its seed and step, and
/// `swift test --filter TokenSessionRandomizedTests` replays it exactly.
@Suite struct TokenSessionRandomizedTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 6, 7, 8]

    @Test(arguments: Self.seeds)
    func invariantsHoldUnderRandomInterleavings(seed: UInt64) {
        let run = RandomSessionRun(seed: seed)
        for violation in run.violations {
            Issue.record("seed \(seed), step \(violation.step): \(violation.message)")
        }
    }

    /// The run is a function of the seed: two runs make the same choices and see the same actions.
    @Test(arguments: Self.seeds)
    func theSameSeedReplaysTheSameRun(seed: UInt64) {
        let first = RandomSessionRun(seed: seed)
        let second = RandomSessionRun(seed: seed)
        #expect(first.trace.count == second.trace.count, "seed \(seed)")
        let divergence = zip(first.trace, second.trace).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(
            divergence == nil,
            "seed \(seed): the runs diverge at event \(divergence.map { "\($0.offset): \($0.element.0) vs \($0.element.1)" } ?? "")"
        )
    }
}

/// One seeded run of random events against the state machine and a model of the requests.
struct RandomSessionRun {
    /// Waiters are the model's request ids; observers are not used.
    typealias Machine = TokenSessionStateMachine<UInt64, String>

    enum Phase: Equatable {
        case parked(Machine.WaiterID)
        case inFlight(generation: Int)
        case done
    }

    struct Request {
        var phase: Phase
        var wasRejected = false
        var sends = 0
    }

    struct Violation {
        var step: Int
        var message: String
    }

    /// What happened, in order: the choices made and the machine's answers.
    enum Event: Equatable {
        case request(UInt64, Machine.RequestAction)
        case accepted(UInt64)
        case rejected(UInt64, Machine.RejectionAction)
        case refreshEnded(Machine.AttemptID, Machine.RefreshEndAction)
        case deadlinePassed(Machine.DeadlineAction)
        case cancelled(UInt64)
        case credentialsChanged
    }

    private(set) var trace: [Event] = []
    private(set) var violations: [Violation] = []

    private var random: SplitMix
    private var now = t0
    private var session: Machine
    private var requests = RequestTable()
    private var nextID: UInt64 = 1
    /// The model of the machine's refresh: whether one runs, and its token call (nil: none runs, or
    /// it waits to call again).
    private var isRefreshing = false
    private var call: Machine.AttemptID?
    private var lastAttempt: Machine.AttemptID = 0
    private var tokenNumber = 1
    private var lastGeneration = 0
    private var step = 0

    init(seed: UInt64, steps: Int = 20_000) {
        self.random = SplitMix(state: seed)
        let retry = Bool.random(using: &self.random)
        self.session = machine(
            token: Machine.Token(value: Secret("t0"), expiresAt: t0 + .seconds(20), refreshAt: t0 + .seconds(10)),
            retryWithoutNewCredentials: retry,
            maximumSuspect: 3
        )
        for step in 0..<steps {
            self.step = step
            self.randomEvent()
            self.checkInvariants()
        }
        self.drain()
    }

    private mutating func check(_ condition: Bool, _ message: String) {
        if !condition { self.violations.append(Violation(step: self.step, message: message)) }
    }

    /// Whether the machine named a request the model has parked with that waiter id; records a
    /// violation when not.
    private mutating func expectParked(_ parked: Machine.Parked, _ what: String) -> Bool {
        let isParked = self.requests[parked.waiter]?.phase == .parked(parked.id)
        self.check(isParked, "the machine \(what) request \(parked.waiter) (waiter \(parked.id)), which was not parked")
        return isParked
    }

    /// A request whose phase matches, chosen with the seeded generator from the candidates in order.
    private mutating func pick(where matches: (Phase) -> Bool) -> UInt64? {
        let candidates = self.requests.ids { matches($0.phase) }
        guard !candidates.isEmpty else { return nil }
        return candidates[Int.random(in: 0..<candidates.count, using: &self.random)]
    }

    /// The machine asked for a token call: never a second at once, and each with a new attempt id.
    private mutating func startCall(_ fetch: Machine.Fetch) {
        self.check(self.call == nil, "a second token call started while attempt \(self.call ?? 0) ran")
        self.check(fetch.attempt > self.lastAttempt, "attempt \(fetch.attempt) is not new")
        self.lastAttempt = max(self.lastAttempt, fetch.attempt)
        self.isRefreshing = true
        self.call = fetch.attempt
    }

    private mutating func send(_ id: UInt64, generation: Int) {
        self.requests[id]!.sends += 1
        self.check(self.requests[id]!.sends <= 2, "request \(id) was sent a third time")
        self.requests[id]!.phase = .inFlight(generation: generation)
    }

    private mutating func randomEvent() {
        self.now = self.now + .milliseconds(Int64.random(in: 0...400, using: &self.random))
        switch Int.random(in: 0..<100, using: &self.random) {
        case 0..<30: self.newRequest()
        case 30..<60: self.upstreamAnswers()
        case 60..<75: self.refreshEnds()
        case 75..<86: self.deadlinePasses()
        case 86..<91:
            guard let id = self.pick(where: { if case .parked = $0 { true } else { false } }),
                case .parked(let waiterID) = self.requests[id]!.phase
            else { return }
            self.session.waiterCancelled(waiterID)
            self.requests[id]!.phase = .done
            self.trace.append(.cancelled(id))
        case 91..<94:
            self.session.credentialsChanged()
            self.trace.append(.credentialsChanged)
        case 94..<97:
            // The end of a call that is over already changes nothing.
            guard self.lastAttempt > 0, Int.random(in: 0..<2, using: &self.random) == 0 else { return }
            let stale = Machine.AttemptID.random(in: 1...self.lastAttempt, using: &self.random)
            guard stale != self.call else { return }
            let action = self.session.refreshEnded(
                stale,
                .success(Machine.Token(value: Secret("stale"))),
                now: self.now
            )
            self.trace.append(.refreshEnded(stale, action))
            self.check(action == .ignore, "the end of attempt \(stale), which was over, was taken: \(action)")
        default:
            break
        }
    }

    private mutating func newRequest() {
        let id = self.nextID
        self.nextID += 1
        self.requests.append(id, Request(phase: .done))
        let action = self.session.requestNeedsToken(id, now: self.now)
        self.trace.append(.request(id, action))
        switch action {
        case .send(_, let generation):
            self.send(id, generation: generation)
        case .sendAndStartRefresh(_, let generation, let fetch):
            self.send(id, generation: generation)
            self.startCall(fetch)
        case .sendWithoutToken, .fail:
            self.requests[id]!.phase = .done
        case .park(let waiterID):
            self.requests[id]!.phase = .parked(waiterID)
        case .parkAndStartRefresh(let waiterID, let fetch):
            self.requests[id]!.phase = .parked(waiterID)
            self.startCall(fetch)
        }
    }

    private mutating func upstreamAnswers() {
        guard let id = self.pick(where: { if case .inFlight = $0 { true } else { false } }),
            case .inFlight(let generation) = self.requests[id]!.phase
        else { return }
        if Int.random(in: 0..<3, using: &self.random) > 0 {
            self.session.upstreamAccepted(generation: generation)
            self.requests[id]!.phase = .done
            self.trace.append(.accepted(id))
            return
        }
        // A replay's refusal goes to its client: the exchange's rule, the session is not asked.
        if self.requests[id]!.wasRejected {
            self.requests[id]!.phase = .done
            return
        }
        self.requests[id]!.wasRejected = true
        let replayable = Int.random(in: 0..<10, using: &self.random) > 0
        let action = self.session.upstreamRejected(id, generation: generation, canWait: replayable, now: self.now)
        self.trace.append(.rejected(id, action))
        switch action {
        case .replay(_, let newGeneration):
            self.send(id, generation: newGeneration)
        case .park(let waiterID):
            self.check(replayable, "request \(id) was parked though it cannot be replayed")
            self.requests[id]!.phase = .parked(waiterID)
        case .parkAndStartRefresh(let waiterID, let fetch):
            self.requests[id]!.phase = .parked(waiterID)
            self.startCall(fetch)
        case .forwardToClient, .forwardToClientStormGuard, .fail:
            self.requests[id]!.phase = .done
        case .forwardToClientUnrefreshable:
            self.check(false, "request \(id): the session can refresh, yet a refusal was called unrefreshable")
            self.requests[id]!.phase = .done
        case .forwardToClientAndStartRefresh(let fetch):
            self.requests[id]!.phase = .done
            self.startCall(fetch)
        }
    }

    private mutating func refreshEnds() {
        guard let attempt = self.call else { return }
        let result: Machine.RefreshResult
        switch Int.random(in: 0..<10, using: &self.random) {
        case 0: result = .rejected(code: "invalid_grant", description: nil)
        case 1: result = .transient(reason: "refused", timedOut: false)
        case 2: result = .rateLimited(retryAfter: .seconds(Int64.random(in: 1...60, using: &self.random)))
        default:
            self.tokenNumber += 1
            let lifetime = Double.random(in: 2...60, using: &self.random)
            result = .success(
                Machine.Token(
                    value: Secret("t\(self.tokenNumber)"),
                    expiresAt: self.now + .milliseconds(Int64(lifetime * 1000)),
                    refreshAt: self.now + .milliseconds(Int64(lifetime * 500))
                )
            )
        }
        let action = self.session.refreshEnded(attempt, result, now: self.now)
        self.trace.append(.refreshEnded(attempt, action))
        self.call = nil
        switch action {
        case .resume(_, let generation, let ended):
            self.check(ended != nil, "a token call's success ended no refresh")
            self.isRefreshing = false
            for parked in ended?.waiters ?? [] where self.expectParked(parked, "resumed") {
                self.send(parked.waiter, generation: generation)
            }
        case .fail(_, let ended):
            self.isRefreshing = false
            for parked in ended.waiters where self.expectParked(parked, "failed") {
                self.requests[parked.waiter]!.phase = .done
            }
        case .keepCurrentToken(_, let ended):
            self.check(ended.waiters.isEmpty, "a kept token left \(ended.waiters.count) requests waiting for nothing")
            self.isRefreshing = false
        case .retry(_, _, let gaveUp):
            for parked in gaveUp?.waiters ?? [] where self.expectParked(parked, "failed while the source is down") {
                self.requests[parked.waiter]!.phase = .done
            }
        case .ignore:
            self.check(false, "the token call in flight was ignored")
        }
    }

    private mutating func deadlinePasses() {
        let action = self.session.deadlinePassed(now: self.now)
        self.trace.append(.deadlinePassed(action))
        for parked in action.gaveUp?.waiters ?? [] where self.expectParked(parked, "expired") {
            self.requests[parked.waiter]!.phase = .done
        }
        if let fetch = action.fetch { self.startCall(fetch) }
        // What was due happened: nothing is due any more (no timer that fires in a loop).
        self.check(self.session.nextDeadline.map { $0 > self.now } ?? true, "a deadline is still due after it passed")
    }

    private mutating func checkInvariants() {
        self.check(
            self.session.isRefreshing == self.isRefreshing,
            "the machine and the model disagree on a refresh in flight"
        )
        let parked = self.requests.parkedCount
        self.check(self.session.parkedCount == parked, "parked count \(self.session.parkedCount), model \(parked)")
        self.check(self.session.generation >= self.lastGeneration, "the generation went down")
        self.lastGeneration = self.session.generation
        if self.step % 256 == 0 { self.requests.removeAll { $0.phase == .done } }
    }

    /// Lets refreshes succeed until nobody waits any more: a refresh waiting to call again is let
    /// call when its deadline passes.
    private mutating func drain() {
        var rounds = 0
        while self.requests.parkedCount > 0 && rounds < 100 {
            rounds += 1
            guard let attempt = self.call else {
                if let deadline = self.session.nextDeadline, deadline > self.now { self.now = deadline }
                self.deadlinePasses()
                continue
            }
            self.now = self.now + .milliseconds(10)
            self.call = nil
            if case .resume(_, let generation, let ended) = self.session.refreshEnded(
                attempt,
                .success(Machine.Token(value: Secret("final"))),
                now: self.now
            ) {
                self.isRefreshing = false
                for parked in ended?.waiters ?? [] where self.expectParked(parked, "resumed") {
                    self.send(parked.waiter, generation: generation)
                }
            }
        }
        self.check(self.requests.parkedCount == 0, "a parked request was never resumed or failed")
    }
}

/// The live requests of a run, in the order they were made (ids only grow): lookups by binary search,
/// choices over a list whose order is the same in every run.
struct RequestTable {
    private var entries: [(id: UInt64, request: RandomSessionRun.Request)] = []
    /// Kept up to date on every change, so that checking it after each event costs nothing.
    private(set) var parkedCount = 0

    func ids(where matches: (RandomSessionRun.Request) -> Bool) -> [UInt64] {
        self.entries.filter { matches($0.request) }.map(\.id)
    }

    mutating func append(_ id: UInt64, _ request: RandomSessionRun.Request) {
        precondition(self.entries.last.map { $0.id < id } ?? true, "ids must grow")
        self.entries.append((id, request))
        if request.isParked { self.parkedCount += 1 }
    }

    mutating func removeAll(where shouldRemove: (RandomSessionRun.Request) -> Bool) {
        self.entries.removeAll { shouldRemove($0.request) }
        self.parkedCount = self.entries.count { $0.request.isParked }
    }

    subscript(id: UInt64) -> RandomSessionRun.Request? {
        get { self.index(of: id).map { self.entries[$0].request } }
        set {
            guard let index = self.index(of: id) else { preconditionFailure("no request \(id)") }
            guard let newValue else { preconditionFailure("requests leave the table through removeAll") }
            if self.entries[index].request.isParked { self.parkedCount -= 1 }
            if newValue.isParked { self.parkedCount += 1 }
            self.entries[index].request = newValue
        }
    }

    private func index(of id: UInt64) -> Int? {
        var low = 0
        var high = self.entries.count
        while low < high {
            let middle = (low + high) / 2
            if self.entries[middle].id < id { low = middle + 1 } else { high = middle }
        }
        return low < self.entries.count && self.entries[low].id == id ? low : nil
    }
}

extension RandomSessionRun.Request {
    var isParked: Bool {
        if case .parked = self.phase { return true }
        return false
    }
}
