import BearerCore
import Testing

@testable import BearerProxy

typealias Machine = TokenSessionStateMachine

let t0 = Instant(nanoseconds: 1_000_000_000_000)

func at(_ seconds: Double) -> Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

func token(_ name: String, expiresIn: Double? = nil, refreshIn: Double? = nil) -> Machine.Token {
    Machine.Token(value: Secret(name), expiresAt: expiresIn.map { at($0) }, refreshAt: refreshIn.map { at($0) })
}

func machine(
    token initial: Machine.Token? = token("t1"),
    canRefresh: Bool = true,
    retryWithoutNewCredentials: Bool = false,
    maximumSuspect: Int = 5
) -> Machine {
    Machine(
        settings: .init(
            canRefresh: canRefresh,
            canRetryWithoutNewCredentials: retryWithoutNewCredentials,
            maximumSuspectRefreshes: maximumSuspect,
            refreshWindow: .seconds(30),
            refreshTimeout: .seconds(30)
        ),
        token: initial
    )
}

@Suite struct TokenSessionStateMachineTests {
    @Test func sendsTheCurrentTokenWithItsGeneration() {
        var session = machine()
        #expect(session.requestNeedsToken(1, now: at(0)) == .send(token: Secret("t1"), generation: 1))
    }

    @Test func withoutTokenOrSourceSendsWithoutToken() {
        var session = machine(token: nil, canRefresh: false)
        #expect(session.requestNeedsToken(1, now: at(0)) == .sendWithoutToken)
        #expect(!mutate(&session) { $0.started(now: at(0)) })
    }

    @Test func withoutSourceA401PassesThroughWarnedOfOncePerToken() {
        var session = machine(canRefresh: false)
        #expect(!session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
                == .forwardToClientUnrefreshable(isFirst: true)
        )
        #expect(session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected(2, generation: 1, isReplay: false, isReplayable: true, now: at(1))
                == .forwardToClientUnrefreshable(isFirst: false)
        )
        #expect(session.requestNeedsToken(3, now: at(2)) == .send(token: Secret("t1"), generation: 1), "still sent")
        // Accepted again (the refusal was one path's, or fixed upstream): no longer shown, not warned of again.
        session.upstreamAccepted(generation: 1)
        #expect(!session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected(4, generation: 1, isReplay: false, isReplayable: true, now: at(3))
                == .forwardToClientUnrefreshable(isFirst: false)
        )
        #expect(session.isRejectedWithoutRefresh)
        // A new token (from the session store) is a new token: refused, it is warned of.
        #expect(
            session.tokenAdopted(token("t2")) == .resume(waiters: [], token: Secret("t2"), generation: 2)
        )
        #expect(!session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected(5, generation: 1, isReplay: false, isReplayable: true, now: at(4))
                == .forwardToClient,
            "a refusal of the older token says nothing of the new one"
        )
        #expect(!session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected(6, generation: 2, isReplay: false, isReplayable: true, now: at(5))
                == .forwardToClientUnrefreshable(isFirst: true)
        )
    }

    @Test func fetchesAtStartWhenItCanButHasNoToken() {
        var session = machine(token: nil)
        #expect(mutate(&session) { $0.started(now: at(0)) })
        #expect(session.isRefreshing)
        #expect(session.requestNeedsToken(1, now: at(0.1)) == .park)
        #expect(
            session.refreshEnded(.success(token("t2")), now: at(0.2))
                == .resume(waiters: [1], token: Secret("t2"), generation: 1)
        )
    }

    @Test func firstRejectionStartsOneRefreshAndLaterOnesJoinIt() {
        var session = machine()
        #expect(
            session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(1))
                == .parkAndStartRefresh
        )
        #expect(session.upstreamRejected(2, generation: 1, isReplay: false, isReplayable: true, now: at(1)) == .park)
        // New requests wait for the new token instead of spending the dead one.
        #expect(session.requestNeedsToken(3, now: at(1.1)) == .park)
        #expect(session.parkedCount == 3)
        #expect(
            session.refreshEnded(.success(token("t2")), now: at(1.2))
                == .resume(waiters: [1, 2, 3], token: Secret("t2"), generation: 2)
        )
        #expect(session.requestNeedsToken(4, now: at(1.3)) == .send(token: Secret("t2"), generation: 2))
    }

    @Test func aRejectionStampedWithAnOldGenerationReplaysAtOnce() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(1))
        _ = session.refreshEnded(.success(token("t2")), now: at(1.2))
        // A request sent with t1 before the refresh finished comes back 401 afterwards.
        #expect(
            session.upstreamRejected(9, generation: 1, isReplay: false, isReplayable: true, now: at(1.3))
                == .replay(token: Secret("t2"), generation: 2)
        )
        #expect(!session.isRefreshing)
    }

    @Test func aRejectionStampedWithAnOldGenerationDuringTheNextRefreshParks() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(1))
        _ = session.refreshEnded(.success(token("t2")), now: at(1.2))
        session.upstreamAccepted(generation: 2)
        _ = session.upstreamRejected(2, generation: 2, isReplay: false, isReplayable: true, now: at(5))
        #expect(session.upstreamRejected(3, generation: 1, isReplay: false, isReplayable: true, now: at(5.1)) == .park)
        #expect(
            session.refreshEnded(.success(token("t3")), now: at(5.2))
                == .resume(waiters: [2, 3], token: Secret("t3"), generation: 3)
        )
    }

    @Test func aReplayRejectedAgainGoesToTheClient() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(1))
        _ = session.refreshEnded(.success(token("t2")), now: at(1.2))
        #expect(
            session.upstreamRejected(1, generation: 2, isReplay: true, isReplayable: true, now: at(1.3))
                == .forwardToClient
        )
        #expect(!session.isRefreshing)
    }

    @Test func anUnreplayableRequestGoesToTheClientButStillStartsTheRefresh() {
        var session = machine()
        session.upstreamAccepted(generation: 1)
        #expect(
            session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: false, now: at(1))
                == .forwardToClientAndStartRefresh
        )
        #expect(session.isRefreshing)
        #expect(
            session.upstreamRejected(2, generation: 1, isReplay: false, isReplayable: false, now: at(1))
                == .forwardToClient
        )
        #expect(session.requestNeedsToken(3, now: at(1)) == .park)
    }

    @Test func proactiveRefreshKeepsSendingTheOldTokenAndCoalescesWithA401() {
        var session = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        #expect(session.requestNeedsToken(1, now: at(10)) == .send(token: Secret("t1"), generation: 1))
        #expect(session.requestNeedsToken(2, now: at(31)) == .sendAndStartRefresh(token: Secret("t1"), generation: 1))
        #expect(session.requestNeedsToken(3, now: at(31.5)) == .send(token: Secret("t1"), generation: 1))
        #expect(!mutate(&session) { $0.proactiveRefreshDue(now: at(31.6)) }, "one refresh at a time")
        // The upstream rejects t1 early: the proactive refresh becomes the reactive one; no second refresh.
        #expect(session.upstreamRejected(3, generation: 1, isReplay: false, isReplayable: true, now: at(32)) == .park)
        #expect(session.requestNeedsToken(4, now: at(32.1)) == .park)
        #expect(
            session.refreshEnded(.success(token("t2")), now: at(32.2))
                == .resume(waiters: [3, 4], token: Secret("t2"), generation: 2)
        )
    }

    @Test func timerStartsProactiveRefresh() {
        var session = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        #expect(!mutate(&session) { $0.proactiveRefreshDue(now: at(29)) })
        #expect(mutate(&session) { $0.proactiveRefreshDue(now: at(30)) })
        #expect(session.requestNeedsToken(1, now: at(30.1)) == .send(token: Secret("t1"), generation: 1))
    }

    @Test func anExpiredTokenIsNeverSent() {
        var session = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        // The machine slept through the timer and the expiry.
        #expect(session.requestNeedsToken(1, now: at(100)) == .parkAndStartRefresh)
    }

    @Test func proactiveRequestDuringAnExpiredRefreshParks() {
        var session = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        _ = session.requestNeedsToken(1, now: at(31))
        #expect(session.requestNeedsToken(2, now: at(61)) == .park, "the old token expired while the refresh ran")
    }

    @Test func permanentFailureFailsWaitersAndLaterRequestsAtOnce() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(1))
        _ = session.requestNeedsToken(2, now: at(1.1))
        let failure = SessionFailure.rejected(code: "invalid_grant", description: "Token expired")
        #expect(
            session.refreshEnded(.rejected(code: "invalid_grant", description: "Token expired"), now: at(1.2))
                == .fail(waiters: [1, 2], failure)
        )
        #expect(session.requestNeedsToken(3, now: at(2)) == .fail(failure))
        #expect(
            session.requestNeedsToken(4, now: at(100)) == .fail(failure),
            "a refresh token grant waits for new credentials"
        )
        #expect(session.token == nil)
        session.credentialsChanged()
        #expect(session.requestNeedsToken(5, now: at(101)) == .parkAndStartRefresh)
    }

    @Test func permanentFailureOfAGrantWithoutRefreshTokenRetriesAfterTheWindow() {
        var session = machine(token: nil, retryWithoutNewCredentials: true)
        _ = session.started(now: at(0))
        _ = session.refreshEnded(.rejected(code: "invalid_client", description: nil), now: at(0.1))
        #expect(session.requestNeedsToken(1, now: at(10)) == .fail(.rejected(code: "invalid_client", description: nil)))
        #expect(session.requestNeedsToken(2, now: at(30.1)) == .parkAndStartRefresh)
    }

    @Test func permanentFailureOfAProactiveRefreshKeepsTheWorkingToken() {
        var session = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        _ = session.requestNeedsToken(1, now: at(30))
        let failure = SessionFailure.rejected(code: "invalid_grant", description: nil)
        #expect(
            session.refreshEnded(.rejected(code: "invalid_grant", description: nil), now: at(30.5))
                == .keepCurrentToken(failure)
        )
        #expect(session.requestNeedsToken(2, now: at(31)) == .send(token: Secret("t1"), generation: 1))
        // It tries again later, not on every request.
        #expect(session.requestNeedsToken(3, now: at(36.6)) == .sendAndStartRefresh(token: Secret("t1"), generation: 1))
    }

    @Test func transientFailuresRetryWithBackoffThenFailWaiters() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
        #expect(
            session.refreshEnded(.transient(reason: "connection refused", timedOut: false), now: at(0.1))
                == .retry(after: .milliseconds(100))
        )
        #expect(
            session.refreshEnded(.transient(reason: "connection refused", timedOut: false), now: at(0.3))
                == .retry(after: .milliseconds(200))
        )
        #expect(session.requestNeedsToken(2, now: at(0.4)) == .park)
        #expect(
            session.refreshEnded(
                .transient(reason: "cannot connect to token endpoint: Connection refused", timedOut: false),
                now: at(29.99)
            )
                == .fail(waiters: [1, 2], .unreachable(reason: "cannot connect to token endpoint: Connection refused"))
        )
        #expect(!session.isRefreshing)
    }

    @Test func requestsThatGiveUpDuringRetriesNameTheLastFailure() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
        _ = session.refreshEnded(.transient(reason: "Connection refused", timedOut: false), now: at(0.1))
        let expired = mutate(&session) { $0.expireWaiters(now: at(30)) }
        #expect(expired.map(\.1) == [.unreachable(reason: "Connection refused")])
    }

    @Test func aTimedOutRefreshIsA504() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
        #expect(
            session.refreshEnded(.transient(reason: "no answer", timedOut: true), now: at(29.95))
                == .fail(waiters: [1], .timedOut(reason: "no answer"))
        )
        #expect(SessionFailure.timedOut(reason: "x").status == 504)
    }

    @Test func retryAfterParksNewRequestsAndFailsThemAtRefreshTimeoutWith503() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
        #expect(
            session.refreshEnded(.rateLimited(retryAfter: .seconds(120)), now: at(0.1)) == .retry(after: .seconds(120))
        )
        #expect(session.requestNeedsToken(2, now: at(10)) == .park)
        #expect(mutate(&session) { $0.expireWaiters(now: at(29)) }.isEmpty)
        let expired = session.expireWaiters(now: at(30))
        #expect(expired.map(\.0) == [1])
        #expect(expired.first?.1 == .rateLimited(retryAfterSeconds: 91))
        #expect(session.nextWaiterDeadline == at(40))
        #expect(session.expireWaiters(now: at(40)).map(\.1) == [.rateLimited(retryAfterSeconds: 81)])
    }

    @Test func aParkedClientThatLeavesIsDropped() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
        _ = session.requestNeedsToken(2, now: at(0))
        session.waiterCancelled(1)
        #expect(
            session.refreshEnded(.success(token("t2")), now: at(1))
                == .resume(waiters: [2], token: Secret("t2"), generation: 2)
        )
    }

    @Test func stormGuardLimitsRefreshesForTokensThatNeverWorked() {
        var session = machine(maximumSuspect: 3)
        for round in 0..<3 {
            let now = at(Double(round))
            #expect(
                session.upstreamRejected(1, generation: round + 1, isReplay: false, isReplayable: true, now: now)
                    == .parkAndStartRefresh
            )
            _ = session.refreshEnded(.success(token("t\(round + 2)")), now: now + .milliseconds(10))
        }
        #expect(
            session.upstreamRejected(1, generation: 4, isReplay: false, isReplayable: true, now: at(3))
                == .forwardToClientStormGuard(isFirst: true)
        )
        #expect(
            session.upstreamRejected(2, generation: 4, isReplay: false, isReplayable: true, now: at(4))
                == .forwardToClientStormGuard(isFirst: false)
        )
        // After the window, one more try is allowed.
        #expect(
            session.upstreamRejected(3, generation: 4, isReplay: false, isReplayable: true, now: at(31))
                == .parkAndStartRefresh
        )
    }

    @Test func legitimateExpiryIsNeverThrottled() {
        var session = machine(maximumSuspect: 2)
        for round in 0..<50 {
            let now = at(Double(round) * 0.1)
            session.upstreamAccepted(generation: round + 1)
            #expect(
                session.upstreamRejected(1, generation: round + 1, isReplay: false, isReplayable: true, now: now)
                    == .parkAndStartRefresh
            )
            _ = session.refreshEnded(.success(token("t\(round + 2)")), now: now + .milliseconds(5))
        }
    }

    @Test func logoutFailsParkedRequestsAndLaterOnesUntilARefreshIsForced() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
        #expect(session.loggedOut() == [1])
        #expect(session.refreshEnded(.success(token("late")), now: at(0.5)) == .ignore)
        #expect(session.requestNeedsToken(2, now: at(1)) == .fail(.loggedOut))
        session.credentialsChanged()
        #expect(session.requestNeedsToken(3, now: at(2)) == .fail(.loggedOut), "a changed file does not end a logout")
        #expect(mutate(&session) { $0.refreshRequested(now: at(3)) })
        #expect(session.requestNeedsToken(4, now: at(3.1)) == .park)
    }

    @Test func theGenerationCountsTokensPutInUseAndALogoutIsNotOne() {
        var session = machine()
        #expect(session.generation == 1)
        _ = session.loggedOut()
        #expect(session.generation == 1)
        #expect(mutate(&session) { $0.refreshRequested(now: at(1)) })
        #expect(
            session.refreshEnded(.success(token("t2")), now: at(2))
                == .resume(waiters: [], token: Secret("t2"), generation: 2)
        )
        #expect(session.generation == 2)
    }
}

/// Runs a mutating call outside `#expect`, whose expansion cannot mutate its operands.
func mutate<Result>(_ session: inout Machine, _ body: (inout Machine) -> Result) -> Result {
    body(&session)
}
