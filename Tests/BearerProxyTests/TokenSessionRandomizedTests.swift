import BearerCore
import Testing

@testable import BearerProxy

/// Drives the state machine through many random interleavings and checks its invariants after every
/// event: at most one refresh in flight, no request replayed twice, every parked request resumed or
/// failed in the end, the generation only increasing.
@Suite struct TokenSessionRandomizedTests {
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            self.state &+= 0x9E37_79B9_7F4A_7C15
            var z = self.state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    enum Phase: Equatable {
        case parked
        case inFlight(generation: Int)
        case done
    }

    struct Request {
        var phase: Phase
        var wasRejected = false
        var sends = 0
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func invariantsHoldUnderRandomInterleavings(seed: UInt64) throws {
        var random = SplitMix(state: seed)
        var now = t0
        var session = machine(
            token: Machine.Token(value: Secret("t0"), expiresAt: now + .seconds(20), refreshAt: now + .seconds(10)),
            retryWithoutNewCredentials: Bool.random(using: &random),
            maximumSuspect: 3
        )
        var requests: [UInt64: Request] = [:]
        var nextID: UInt64 = 1
        var refreshInFlight = false
        var lastGeneration = session.generation
        var tokenNumber = 1

        func startRefresh(_ started: Bool) {
            if started {
                #expect(!refreshInFlight, "a second refresh started while one was in flight (seed \(seed))")
                refreshInFlight = true
            }
        }

        func send(_ id: UInt64, generation: Int) {
            requests[id]!.sends += 1
            requests[id]!.phase = .inFlight(generation: generation)
        }

        for _ in 0..<20_000 {
            now = now + .milliseconds(Int64.random(in: 0...400, using: &random))
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<30:
                let id = nextID
                nextID += 1
                requests[id] = Request(phase: .done)
                switch session.requestNeedsToken(id, now: now) {
                case .send(_, let generation):
                    send(id, generation: generation)
                case .sendAndStartRefresh(_, let generation):
                    send(id, generation: generation)
                    startRefresh(true)
                case .sendWithoutToken:
                    requests[id]!.phase = .done
                case .park:
                    requests[id]!.phase = .parked
                case .parkAndStartRefresh:
                    requests[id]!.phase = .parked
                    startRefresh(true)
                case .fail:
                    requests[id]!.phase = .done
                }
            case 30..<60:
                guard
                    let (id, request) = requests.first(where: {
                        if case .inFlight = $0.value.phase { true } else { false }
                    }),
                    case .inFlight(let generation) = request.phase
                else { continue }
                if Int.random(in: 0..<3, using: &random) > 0 {
                    session.upstreamAccepted(generation: generation)
                    requests[id]!.phase = .done
                    continue
                }
                let isReplay = request.wasRejected
                requests[id]!.wasRejected = true
                let replayable = Int.random(in: 0..<10, using: &random) > 0
                switch session.upstreamRejected(
                    id,
                    generation: generation,
                    isReplay: isReplay,
                    isReplayable: replayable,
                    now: now
                ) {
                case .replay(_, let newGeneration):
                    #expect(!isReplay)
                    send(id, generation: newGeneration)
                case .park:
                    #expect(!isReplay && replayable)
                    requests[id]!.phase = .parked
                case .parkAndStartRefresh:
                    requests[id]!.phase = .parked
                    startRefresh(true)
                case .forwardToClient, .forwardToClientStormGuard:
                    requests[id]!.phase = .done
                case .forwardToClientAndStartRefresh:
                    requests[id]!.phase = .done
                    startRefresh(true)
                }
            case 60..<75:
                guard refreshInFlight else { continue }
                let result: Machine.RefreshResult
                switch Int.random(in: 0..<10, using: &random) {
                case 0: result = .rejected(code: "invalid_grant", description: nil)
                case 1: result = .transient(reason: "refused", timedOut: false)
                case 2: result = .rateLimited(retryAfter: .seconds(Int64.random(in: 1...60, using: &random)))
                default:
                    tokenNumber += 1
                    let lifetime = Double.random(in: 2...60, using: &random)
                    result = .success(
                        Machine.Token(
                            value: Secret("t\(tokenNumber)"),
                            expiresAt: now + .milliseconds(Int64(lifetime * 1000)),
                            refreshAt: now + .milliseconds(Int64(lifetime * 500))
                        )
                    )
                }
                switch session.refreshEnded(result, now: now) {
                case .resume(let waiters, _, let generation):
                    refreshInFlight = false
                    for id in waiters {
                        #expect(requests[id]?.phase == .parked, "resumed a request that was not parked (seed \(seed))")
                        send(id, generation: generation)
                    }
                case .fail(let waiters, _):
                    refreshInFlight = false
                    for id in waiters {
                        #expect(requests[id]?.phase == .parked)
                        requests[id]!.phase = .done
                    }
                case .keepCurrentToken:
                    refreshInFlight = false
                case .retry:
                    break
                case .ignore:
                    Issue.record("a refresh in flight was ignored (seed \(seed))")
                }
            case 75..<82:
                startRefresh(session.proactiveRefreshDue(now: now))
            case 82..<88:
                guard let id = requests.first(where: { $0.value.phase == .parked })?.key else { continue }
                session.waiterCancelled(id)
                requests[id]!.phase = .done
            case 88..<93:
                for (id, _) in session.expireWaiters(now: now) {
                    #expect(requests[id]?.phase == .parked)
                    requests[id]!.phase = .done
                }
            case 93..<95:
                session.credentialsChanged()
            default:
                break
            }
            #expect(
                session.isRefreshing == refreshInFlight,
                "the machine and the model disagree on a refresh in flight (seed \(seed))"
            )
            #expect(session.generation >= lastGeneration)
            lastGeneration = session.generation
            let parked = requests.values.filter { $0.phase == .parked }.count
            #expect(session.parkedCount == parked, "parked count differs (seed \(seed))")
            #expect(requests.values.allSatisfy { $0.sends <= 2 }, "a request was replayed twice (seed \(seed))")
            requests = requests.filter { $0.value.phase != .done }
        }

        // Drain: let refreshes succeed until nobody waits any more.
        var rounds = 0
        while requests.values.contains(where: { $0.phase == .parked }) && rounds < 100 {
            rounds += 1
            if !refreshInFlight { continue }
            now = now + .milliseconds(10)
            if case .resume(let waiters, _, let generation) = session.refreshEnded(
                .success(Machine.Token(value: Secret("final"))),
                now: now
            ) {
                refreshInFlight = false
                for id in waiters { send(id, generation: generation) }
            }
        }
        #expect(
            !requests.values.contains { $0.phase == .parked },
            "a parked request was never resumed or failed (seed \(seed))"
        )
    }
}
