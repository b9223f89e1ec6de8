import BearerCore
import BearerTestSupport
import Testing

@testable import BearerSession

/// Waiters and observers are names here: the machine keeps whatever it is given.
typealias Machine = TokenSessionStateMachine<String, String>

func token(_ name: String, expiresIn: Double? = nil, refreshIn: Double? = nil) -> Machine.Token {
    Machine.Token(value: Secret(name), expiresAt: expiresIn.map { at($0) }, refreshAt: refreshIn.map { at($0) })
}

func machine<Waiter, Observer>(
    token initial: TokenSessionStateMachine<Waiter, Observer>.Token? = .init(value: Secret("t1")),
    canRefresh: Bool = true,
    retryWithoutNewCredentials: Bool = false,
    maximumSuspect: Int = 5
) -> TokenSessionStateMachine<Waiter, Observer> {
    TokenSessionStateMachine(
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

func parked(_ id: Machine.WaiterID, _ waiter: String) -> Machine.Parked {
    Machine.Parked(id: id, waiter: waiter)
}

func fetch(_ attempt: Machine.AttemptID, replacing: String?) -> Machine.Fetch {
    Machine.Fetch(attempt: attempt, replacing: replacing.map { Secret($0) })
}

func ended(
    _ trigger: Machine.Trigger,
    at seconds: Double,
    _ waiters: [Machine.Parked] = [],
    observers: [String] = []
) -> Machine.EndedRefresh {
    Machine.EndedRefresh(trigger: trigger, startedAt: at(seconds), waiters: waiters, observers: observers)
}

@Suite struct TokenSessionStateMachineTests {
    @Test func sendsTheCurrentTokenWithItsGeneration() {
        var session: Machine = machine()
        #expect(session.requestNeedsToken("a", now: at(0)) == .send(token: Secret("t1"), generation: 1))
    }

    @Test func withoutTokenOrSourceSendsWithoutToken() {
        var session: Machine = machine(token: nil, canRefresh: false)
        #expect(session.requestNeedsToken("a", now: at(0)) == .sendWithoutToken)
        #expect(mutate(&session) { $0.started(now: at(0)) } == nil)
        #expect(mutate(&session) { $0.refreshRequested(by: "admin", observer: "o", now: at(0)) } == .unavailable)
        #expect(session.nextDeadline == nil)
    }

    @Test func withoutSourceA401PassesThroughWarnedOfOncePerToken() {
        var session: Machine = machine(canRefresh: false)
        #expect(!session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
                == .forwardToClientUnrefreshable(isFirst: true)
        )
        #expect(session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected("b", generation: 1, canWait: true, now: at(1))
                == .forwardToClientUnrefreshable(isFirst: false)
        )
        #expect(session.requestNeedsToken("c", now: at(2)) == .send(token: Secret("t1"), generation: 1), "still sent")
        // Accepted again (the refusal was one path's, or fixed upstream): no longer shown, not warned of again.
        session.upstreamAccepted(generation: 1)
        #expect(!session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected("d", generation: 1, canWait: true, now: at(3))
                == .forwardToClientUnrefreshable(isFirst: false)
        )
        #expect(session.isRejectedWithoutRefresh)
        // A new token (from the session store) is a new token: refused, it is warned of.
        #expect(session.tokenAdopted(token("t2")) == .resume(token("t2"), generation: 2, ended: nil))
        #expect(!session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected("e", generation: 1, canWait: true, now: at(4))
                == .forwardToClient,
            "a refusal of the older token says nothing of the new one"
        )
        #expect(!session.isRejectedWithoutRefresh)
        #expect(
            session.upstreamRejected("f", generation: 2, canWait: true, now: at(5))
                == .forwardToClientUnrefreshable(isFirst: true)
        )
    }

    @Test func fetchesAtStartWhenItCanButHasNoToken() {
        var session: Machine = machine(token: nil)
        #expect(mutate(&session) { $0.started(now: at(0)) } == fetch(1, replacing: nil))
        #expect(session.isRefreshing)
        #expect(session.requestNeedsToken("a", now: at(0.1)) == .park(1))
        #expect(
            session.refreshEnded(1, .success(token("t2")), now: at(0.2))
                == .resume(token("t2"), generation: 1, ended: ended(.startup, at: 0, [parked(1, "a")]))
        )
    }

    @Test func firstRejectionStartsOneRefreshAndLaterOnesJoinIt() {
        var session: Machine = machine()
        #expect(
            session.upstreamRejected("a", generation: 1, canWait: true, now: at(1))
                == .parkAndStartRefresh(1, fetch(1, replacing: "t1"))
        )
        #expect(
            session.upstreamRejected("b", generation: 1, canWait: true, now: at(1)) == .park(2)
        )
        // New requests wait for the new token instead of spending the dead one.
        #expect(session.requestNeedsToken("c", now: at(1.1)) == .park(3))
        #expect(session.parkedCount == 3)
        #expect(
            session.refreshEnded(1, .success(token("t2")), now: at(1.2))
                == .resume(
                    token("t2"),
                    generation: 2,
                    ended: ended(.rejected, at: 1, [parked(1, "a"), parked(2, "b"), parked(3, "c")])
                )
        )
        #expect(session.requestNeedsToken("d", now: at(1.3)) == .send(token: Secret("t2"), generation: 2))
    }

    @Test func aRejectionStampedWithAnOldGenerationReplaysAtOnce() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(1))
        _ = session.refreshEnded(1, .success(token("t2")), now: at(1.2))
        // A request sent with t1 before the refresh finished comes back 401 afterwards.
        #expect(
            session.upstreamRejected("b", generation: 1, canWait: true, now: at(1.3))
                == .replay(token: Secret("t2"), generation: 2)
        )
        #expect(!session.isRefreshing)
    }

    @Test func aRejectionStampedWithAnOldGenerationDuringTheNextRefreshParks() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(1))
        _ = session.refreshEnded(1, .success(token("t2")), now: at(1.2))
        session.upstreamAccepted(generation: 2)
        #expect(
            session.upstreamRejected("b", generation: 2, canWait: true, now: at(5))
                == .parkAndStartRefresh(2, fetch(2, replacing: "t2"))
        )
        #expect(
            session.upstreamRejected("c", generation: 1, canWait: true, now: at(5.1)) == .park(3)
        )
        #expect(
            session.refreshEnded(2, .success(token("t3")), now: at(5.2))
                == .resume(
                    token("t3"),
                    generation: 3,
                    ended: ended(.rejected, at: 5, [parked(2, "b"), parked(3, "c")])
                )
        )
    }

    @Test func anUnreplayableRequestGoesToTheClientButStillStartsTheRefresh() {
        var session: Machine = machine()
        session.upstreamAccepted(generation: 1)
        #expect(
            session.upstreamRejected("a", generation: 1, canWait: false, now: at(1))
                == .forwardToClientAndStartRefresh(fetch(1, replacing: "t1"))
        )
        #expect(session.isRefreshing)
        #expect(
            session.upstreamRejected("b", generation: 1, canWait: false, now: at(1))
                == .forwardToClient
        )
        #expect(session.requestNeedsToken("c", now: at(1)) == .park(1))
    }

    @Test func proactiveRefreshKeepsSendingTheOldTokenAndCoalescesWithA401() {
        var session: Machine = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        #expect(session.requestNeedsToken("a", now: at(10)) == .send(token: Secret("t1"), generation: 1))
        #expect(
            session.requestNeedsToken("b", now: at(31))
                == .sendAndStartRefresh(token: Secret("t1"), generation: 1, fetch(1, replacing: "t1"))
        )
        #expect(session.requestNeedsToken("c", now: at(31.5)) == .send(token: Secret("t1"), generation: 1))
        #expect(mutate(&session) { $0.deadlinePassed(now: at(31.6)) } == .init(), "one refresh at a time")
        // The upstream rejects t1 early: the proactive refresh becomes the reactive one; no second refresh.
        #expect(
            session.upstreamRejected("c", generation: 1, canWait: true, now: at(32)) == .park(1)
        )
        #expect(session.requestNeedsToken("d", now: at(32.1)) == .park(2))
        #expect(
            session.refreshEnded(1, .success(token("t2")), now: at(32.2))
                == .resume(
                    token("t2"),
                    generation: 2,
                    ended: ended(.proactive, at: 31, [parked(1, "c"), parked(2, "d")])
                )
        )
    }

    @Test func theDeadlineStartsTheProactiveRefresh() {
        var session: Machine = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        #expect(session.nextDeadline == at(30))
        #expect(mutate(&session) { $0.deadlinePassed(now: at(29)) } == .init(), "early: nothing is due")
        #expect(mutate(&session) { $0.deadlinePassed(now: at(30)) } == .init(fetch: fetch(1, replacing: "t1")))
        #expect(session.requestNeedsToken("a", now: at(30.1)) == .send(token: Secret("t1"), generation: 1))
        #expect(
            session.refreshEnded(1, .success(token("t2", expiresIn: 120, refreshIn: 90)), now: at(31))
                == .resume(token("t2", expiresIn: 120, refreshIn: 90), generation: 2, ended: ended(.proactive, at: 30))
        )
        #expect(session.nextDeadline == at(90), "the next token's proactive refresh")
    }

    @Test func aProactiveRefreshDueAfterTheExpiryIsReactive() {
        var session: Machine = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        // The timer fired late (a laptop that slept past the expiry): requests wait for the new token.
        #expect(mutate(&session) { $0.deadlinePassed(now: at(70)) } == .init(fetch: fetch(1, replacing: "t1")))
        #expect(session.requestNeedsToken("a", now: at(70.1)) == .park(1))
    }

    @Test func anExpiredTokenIsNeverSent() {
        var session: Machine = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        // The machine slept through the timer and the expiry.
        #expect(session.requestNeedsToken("a", now: at(100)) == .parkAndStartRefresh(1, fetch(1, replacing: "t1")))
        #expect(
            session.refreshEnded(1, .success(token("t2")), now: at(101))
                == .resume(token("t2"), generation: 2, ended: ended(.expired, at: 100, [parked(1, "a")]))
        )
    }

    @Test func proactiveRequestDuringAnExpiredRefreshParks() {
        var session: Machine = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        _ = session.requestNeedsToken("a", now: at(31))
        #expect(session.requestNeedsToken("b", now: at(61)) == .park(1), "the old token expired while the refresh ran")
    }

    @Test func permanentFailureFailsWaitersAndLaterRequestsAtOnce() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(1))
        _ = session.requestNeedsToken("b", now: at(1.1))
        let failure = SessionFailure.rejected(code: "invalid_grant", description: "Token expired")
        #expect(
            session.refreshEnded(1, .rejected(code: "invalid_grant", description: "Token expired"), now: at(1.2))
                == .fail(failure, ended: ended(.rejected, at: 1, [parked(1, "a"), parked(2, "b")]))
        )
        #expect(session.requestNeedsToken("c", now: at(2)) == .fail(failure))
        #expect(
            session.requestNeedsToken("d", now: at(100)) == .fail(failure),
            "a refresh token grant waits for new credentials"
        )
        #expect(session.token == nil)
        #expect(session.nextDeadline == nil)
        session.credentialsChanged()
        #expect(session.requestNeedsToken("e", now: at(101)) == .parkAndStartRefresh(3, fetch(2, replacing: nil)))
        #expect(
            session.refreshEnded(2, .success(token("t2")), now: at(102))
                == .resume(token("t2"), generation: 2, ended: ended(.noToken, at: 101, [parked(3, "e")]))
        )
    }

    @Test func permanentFailureOfAGrantWithoutRefreshTokenRetriesAfterTheWindow() {
        var session: Machine = machine(token: nil, retryWithoutNewCredentials: true)
        _ = session.started(now: at(0))
        _ = session.refreshEnded(1, .rejected(code: "invalid_client", description: nil), now: at(0.1))
        #expect(
            session.requestNeedsToken("a", now: at(10)) == .fail(.rejected(code: "invalid_client", description: nil))
        )
        #expect(session.requestNeedsToken("b", now: at(30.1)) == .parkAndStartRefresh(1, fetch(2, replacing: nil)))
    }

    @Test func permanentFailureOfAProactiveRefreshKeepsTheWorkingToken() {
        var session: Machine = machine(token: token("t1", expiresIn: 60, refreshIn: 30))
        _ = session.requestNeedsToken("a", now: at(30))
        let failure = SessionFailure.rejected(code: "invalid_grant", description: nil)
        #expect(
            session.refreshEnded(1, .rejected(code: "invalid_grant", description: nil), now: at(30.5))
                == .keepCurrentToken(failure, ended: ended(.proactive, at: 30))
        )
        #expect(session.requestNeedsToken("b", now: at(31)) == .send(token: Secret("t1"), generation: 1))
        // It tries again later, not on every request: the window over the storm guard's allowance.
        #expect(session.nextDeadline == at(36.5))
        #expect(
            session.requestNeedsToken("c", now: at(36.6))
                == .sendAndStartRefresh(token: Secret("t1"), generation: 1, fetch(2, replacing: "t1"))
        )
    }

    @Test func transientFailuresRetryWithBackoffThenFailWaiters() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        #expect(
            session.refreshEnded(1, .transient(reason: "connection refused", timedOut: false), now: at(0.1))
                == .retry(after: .milliseconds(100), becameUnreachable: true, gaveUp: nil)
        )
        #expect(session.nextDeadline == at(0.2), "the retry comes before the waiter gives up")
        #expect(mutate(&session) { $0.deadlinePassed(now: at(0.2)) } == .init(fetch: fetch(2, replacing: "t1")))
        #expect(
            session.refreshEnded(2, .transient(reason: "connection refused", timedOut: false), now: at(0.3))
                == .retry(after: .milliseconds(200), becameUnreachable: false, gaveUp: nil)
        )
        #expect(mutate(&session) { $0.deadlinePassed(now: at(0.5)) } == .init(fetch: fetch(3, replacing: "t1")))
        #expect(
            session.refreshEnded(
                3,
                .transient(reason: "cannot connect to token endpoint: Connection refused", timedOut: false),
                now: at(29.99)
            )
                == .fail(
                    .unreachable(reason: "cannot connect to token endpoint: Connection refused"),
                    ended: ended(.rejected, at: 0, [parked(1, "a")])
                )
        )
        #expect(!session.isRefreshing)
    }

    /// Issue 32, point 4: with the token source known to be down, a request that needs a token is
    /// answered at once while the backoff runs, and after one failed call when it joined a call in
    /// flight; it never waits out refresh_timeout. The requests that parked before the source was
    /// known down still ride out a blip through the retries.
    @Test func whileTheTokenSourceIsDownRequestsFailAtOnce() {
        var session: Machine = machine(token: nil)
        #expect(session.started(now: at(0)) == fetch(1, replacing: nil))
        let storm = session.requestNeedsToken("before", now: at(0.01))
        #expect(storm == .park(1))
        let reason = "token endpoint http://127.0.0.1:9: connection refused"
        let refused = SessionFailure.unreachable(reason: reason)
        #expect(
            session.refreshEnded(1, .transient(reason: reason, timedOut: false), now: at(0.02))
                == .retry(after: .milliseconds(100), becameUnreachable: true, gaveUp: nil)
        )
        #expect(session.unreachableFailure == refused, "/status shows why")
        // The backoff runs, no call is in flight: at once.
        #expect(session.requestNeedsToken("during the backoff", now: at(0.05)) == .fail(refused))
        #expect(mutate(&session) { $0.deadlinePassed(now: at(0.12)) } == .init(fetch: fetch(2, replacing: nil)))
        // A call is in flight: wait for it, and for it alone.
        #expect(session.requestNeedsToken("during a call", now: at(0.13)) == .park(2))
        #expect(
            session.refreshEnded(2, .transient(reason: reason, timedOut: false), now: at(0.14))
                == .retry(
                    after: .milliseconds(200),
                    becameUnreachable: false,
                    gaveUp: .init(waiters: [parked(2, "during a call")], failure: refused)
                )
        )
        #expect(session.parkedCount == 1, "the request of before the source was known down still waits")
        #expect(mutate(&session) { $0.deadlinePassed(now: at(0.34)) } == .init(fetch: fetch(3, replacing: nil)))
        #expect(
            session.refreshEnded(3, .success(token("t1")), now: at(0.4))
                == .resume(token("t1"), generation: 1, ended: ended(.startup, at: 0, [parked(1, "before")]))
        )
        #expect(session.unreachableFailure == nil)
        #expect(session.tokenSourceDown == nil, "an answer ends it")
    }

    /// After the refresh gave up, the source is still known down: the next request's refresh ends its
    /// wait with its first failed call.
    @Test func aRefreshStartedWhileTheSourceIsDownEndsItsWaitersAtTheFirstFailure() {
        var session: Machine = machine(token: nil)
        _ = session.started(now: at(0))
        let refused = SessionFailure.unreachable(reason: "refused")
        _ = session.refreshEnded(1, .transient(reason: "refused", timedOut: false), now: at(29.95))
        #expect(!session.isRefreshing)
        #expect(session.unreachableFailure == refused)
        #expect(session.requestNeedsToken("a", now: at(40)) == .parkAndStartRefresh(1, fetch(2, replacing: nil)))
        #expect(
            session.refreshEnded(2, .transient(reason: "refused", timedOut: false), now: at(40.01))
                == .retry(
                    after: .milliseconds(100),
                    becameUnreachable: false,
                    gaveUp: .init(waiters: [parked(1, "a")], failure: refused)
                )
        )
        // A 401 meeting the backoff is answered at once too.
        #expect(
            session.upstreamRejected("b", generation: 0, canWait: true, now: at(40.05))
                == .fail(refused)
        )
    }

    /// A Retry-After is an answer, not an outage: requests park behind it as before.
    @Test func aRateLimitIsNotAnOutage() {
        var session: Machine = machine(token: nil)
        _ = session.started(now: at(0))
        #expect(
            session.refreshEnded(1, .rateLimited(retryAfter: .seconds(2)), now: at(0.1))
                == .retry(after: .seconds(2), becameUnreachable: false, gaveUp: nil)
        )
        #expect(session.requestNeedsToken("a", now: at(0.2)) == .park(1))
        #expect(session.unreachableFailure == nil)
    }

    /// Issue 32, point 3: a 401 that comes back after the refresh failed for good gets the same
    /// failure as the requests that waited for it, not the upstream's own answer.
    @Test func aRejectionAfterAPermanentFailureGetsTheFailure() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        let failure = SessionFailure.rejected(code: "invalid_grant", description: "revoked")
        _ = session.refreshEnded(1, .permanent(failure), now: at(0.1))
        #expect(
            session.upstreamRejected("late", generation: 1, canWait: true, now: at(0.2))
                == .fail(failure)
        )
        #expect(
            session.upstreamRejected("big body", generation: 1, canWait: false, now: at(0.2))
                == .fail(failure)
        )
        _ = session.loggedOut()
        #expect(
            session.upstreamRejected("after logout", generation: 1, canWait: true, now: at(1))
                == .fail(.loggedOut)
        )
    }

    /// A grant that can be repeated tries again once the window passed, for a 401 as for a request.
    @Test func aRejectionAfterTheWindowOfARepeatableGrantStartsARefresh() {
        var session: Machine = machine(retryWithoutNewCredentials: true)
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        _ = session.refreshEnded(1, .rejected(code: "invalid_client", description: nil), now: at(0.1))
        #expect(
            session.upstreamRejected("b", generation: 1, canWait: true, now: at(1))
                == .fail(.rejected(code: "invalid_client", description: nil))
        )
        #expect(
            session.upstreamRejected("c", generation: 1, canWait: true, now: at(30.1))
                == .parkAndStartRefresh(2, fetch(2, replacing: nil))
        )
    }

    /// SIGHUP re-read the config: a changed access_token is put in use at once, also for the requests
    /// parked behind a running refresh, and a failure for good ends.
    @Test func aReconfigurationPutsAChangedConfiguredTokenInUse() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        #expect(
            session.reconfigured(
                .init(canRefresh: false, canRetryWithoutNewCredentials: false),
                configuredToken: token("t2")
            )
                == .resume(token("t2"), generation: 2, ended: ended(.rejected, at: 0, [parked(1, "a")]))
        )
        #expect(!session.settings.canRefresh)
        #expect(session.requestNeedsToken("b", now: at(1)) == .send(token: Secret("t2"), generation: 2))
        #expect(session.refreshEnded(1, .success(token("late")), now: at(1.5)) == .ignore, "the call it ended")
    }

    /// Without a new access_token only the settings change: the token and a running refresh stay, and
    /// a session that can no longer refresh has nothing left to fail for.
    @Test func aReconfigurationWithoutANewTokenChangesTheSettingsOnly() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        let repeatable = Machine.Settings(
            canRefresh: true,
            canRetryWithoutNewCredentials: true,
            maximumSuspectRefreshes: 2
        )
        #expect(session.reconfigured(repeatable, configuredToken: nil) == .ignore)
        #expect(session.settings.maximumSuspectRefreshes == 2)
        #expect(session.isRefreshing)
        _ = session.refreshEnded(1, .rejected(code: "invalid_client", description: nil), now: at(0.1))
        #expect(session.failure != nil)
        #expect(
            session.reconfigured(.init(canRefresh: false, canRetryWithoutNewCredentials: false), configuredToken: nil)
                == .ignore
        )
        #expect(session.failure == nil)
        #expect(session.requestNeedsToken("b", now: at(1)) == .sendWithoutToken)
    }

    @Test func theBackoffDoublesToFiveSeconds() {
        // A refresh_timeout long enough for every retry below.
        var session = Machine(
            settings: .init(canRefresh: true, canRetryWithoutNewCredentials: true, refreshTimeout: .seconds(600)),
            token: nil
        )
        #expect(session.started(now: at(0)) == fetch(1, replacing: nil))
        var delays: [Duration] = []
        var now = at(0)
        for attempt in Machine.AttemptID(1)...8 {
            guard
                case .retry(let delay, _, _) = session.refreshEnded(
                    attempt,
                    .transient(reason: "x", timedOut: false),
                    now: now
                )
            else {
                Issue.record("attempt \(attempt) was not retried")
                return
            }
            delays.append(delay)
            now = now + delay
            #expect(session.deadlinePassed(now: now).fetch == fetch(attempt + 1, replacing: nil))
        }
        #expect(delays == [100, 200, 400, 800, 1600, 3200, 5000, 5000].map { .milliseconds($0) })
    }

    @Test func requestsThatGiveUpDuringRetriesNameTheLastFailure() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        _ = session.refreshEnded(1, .transient(reason: "Connection refused", timedOut: false), now: at(0.1))
        _ = session.deadlinePassed(now: at(0.2))
        #expect(
            mutate(&session) { $0.deadlinePassed(now: at(30)) }
                == .init(gaveUp: .init(waiters: [parked(1, "a")], failure: .unreachable(reason: "Connection refused")))
        )
        #expect(session.isRefreshing, "the call still runs for later requests")
    }

    @Test func aParkedRequestGivesUpAfterRefreshTimeout() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        _ = session.requestNeedsToken("b", now: at(10))
        #expect(session.nextDeadline == at(30))
        #expect(mutate(&session) { $0.deadlinePassed(now: at(29.9)) } == .init())
        #expect(
            mutate(&session) { $0.deadlinePassed(now: at(30)) }
                == .init(
                    gaveUp: .init(
                        waiters: [parked(1, "a")],
                        failure: .timedOut(reason: "no new token within refresh_timeout")
                    )
                )
        )
        #expect(session.nextDeadline == at(40))
        #expect(session.parkedCount == 1)
    }

    @Test func aTimedOutRefreshIsA504() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        #expect(
            session.refreshEnded(1, .transient(reason: "no answer", timedOut: true), now: at(29.95))
                == .fail(.timedOut(reason: "no answer"), ended: ended(.rejected, at: 0, [parked(1, "a")]))
        )
        #expect(SessionFailure.timedOut(reason: "x").status == 504)
    }

    @Test func retryAfterParksNewRequestsAndFailsThemAtRefreshTimeoutWith503() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        #expect(
            session.refreshEnded(1, .rateLimited(retryAfter: .seconds(120)), now: at(0.1))
                == .retry(after: .seconds(120), becameUnreachable: false, gaveUp: nil)
        )
        #expect(session.requestNeedsToken("b", now: at(10)) == .park(2))
        #expect(session.nextDeadline == at(30), "the first waiter gives up before the retry")
        #expect(mutate(&session) { $0.deadlinePassed(now: at(29)) } == .init())
        #expect(
            mutate(&session) { $0.deadlinePassed(now: at(30)) }
                == .init(gaveUp: .init(waiters: [parked(1, "a")], failure: .rateLimited(retryAfterSeconds: 91)))
        )
        #expect(session.nextDeadline == at(40))
        #expect(
            mutate(&session) { $0.deadlinePassed(now: at(40)) }
                == .init(gaveUp: .init(waiters: [parked(2, "b")], failure: .rateLimited(retryAfterSeconds: 81)))
        )
        #expect(session.nextDeadline == at(120.1), "then only the retry is due")
        #expect(mutate(&session) { $0.deadlinePassed(now: at(120.1)) } == .init(fetch: fetch(2, replacing: "t1")))
    }

    @Test func aParkedClientThatLeavesIsDropped() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        _ = session.requestNeedsToken("b", now: at(1))
        session.waiterCancelled(1)
        #expect(session.nextDeadline == at(31), "the next waiter's deadline")
        #expect(
            session.refreshEnded(1, .success(token("t2")), now: at(2))
                == .resume(token("t2"), generation: 2, ended: ended(.rejected, at: 0, [parked(2, "b")]))
        )
    }

    @Test func stormGuardLimitsRefreshesForTokensThatNeverWorked() {
        var session: Machine = machine(maximumSuspect: 3)
        for round in 0..<3 {
            let now = at(Double(round))
            let attempt = Machine.AttemptID(round + 1)
            #expect(
                session.upstreamRejected("a", generation: round + 1, canWait: true, now: now)
                    == .parkAndStartRefresh(Machine.WaiterID(round + 1), fetch(attempt, replacing: "t\(round + 1)"))
            )
            _ = session.refreshEnded(attempt, .success(token("t\(round + 2)")), now: now + .milliseconds(10))
        }
        // What the admin page shows as "storm guard": the next refusal goes to the client, until the
        // window moves past the three refreshes.
        #expect(session.isHoldingStormGuard(at: at(2.5)))
        #expect(
            session.upstreamRejected("b", generation: 4, canWait: true, now: at(3))
                == .forwardToClientStormGuard(isFirst: true)
        )
        #expect(session.isHoldingStormGuard(at: at(3)))
        #expect(!session.isHoldingStormGuard(at: at(30.5)))
        #expect(
            session.upstreamRejected("c", generation: 4, canWait: true, now: at(4))
                == .forwardToClientStormGuard(isFirst: false)
        )
        // After the window, one more try is allowed.
        #expect(
            session.upstreamRejected("d", generation: 4, canWait: true, now: at(31))
                == .parkAndStartRefresh(4, fetch(4, replacing: "t4"))
        )
    }

    @Test func legitimateExpiryIsNeverThrottled() {
        var session: Machine = machine(maximumSuspect: 2)
        for round in 0..<50 {
            let now = at(Double(round) * 0.1)
            session.upstreamAccepted(generation: round + 1)
            #expect(
                session.upstreamRejected("a", generation: round + 1, canWait: true, now: now)
                    == .parkAndStartRefresh(
                        Machine.WaiterID(round + 1),
                        fetch(Machine.AttemptID(round + 1), replacing: "t\(round + 1)")
                    )
            )
            _ = session.refreshEnded(Machine.AttemptID(round + 1), .success(token("t\(round + 2)")), now: now)
        }
    }

    @Test func logoutFailsParkedRequestsAndLaterOnesUntilARefreshIsForced() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        #expect(session.loggedOut() == ended(.rejected, at: 0, [parked(1, "a")]))
        #expect(session.refreshEnded(1, .success(token("late")), now: at(0.5)) == .ignore)
        #expect(session.requestNeedsToken("b", now: at(1)) == .fail(.loggedOut))
        session.credentialsChanged()
        #expect(session.requestNeedsToken("c", now: at(2)) == .fail(.loggedOut), "a changed file does not end a logout")
        #expect(mutate(&session) { $0.refreshTokenFileChanged(now: at(2.5)) } == nil, "nor does a new file")
        #expect(mutate(&session) { $0.refreshRequested(by: "admin", now: at(3)) } == .start(fetch(2, replacing: nil)))
        #expect(session.requestNeedsToken("d", now: at(3.1)) == .park(2))
    }

    /// Admin `POST /refresh?park=1`: the current token still works, yet requests wait for the new
    /// one, as after a 401; without it they go on with the current token. A running proactive
    /// refresh turns parking too, and stays the one refresh.
    @Test func aParkingRequestedRefreshHoldsRequestsUntilTheNewToken() {
        var session: Machine = machine(token: token("t1", expiresIn: 100, refreshIn: 90))
        #expect(mutate(&session) { $0.refreshRequested(by: "admin", now: at(0)) } == .start(fetch(1, replacing: "t1")))
        #expect(session.requestNeedsToken("a", now: at(0.1)) == .send(token: Secret("t1"), generation: 1))
        #expect(mutate(&session) { $0.refreshRequested(by: "admin-park", parks: true, now: at(0.2)) } == .join)
        #expect(session.requestNeedsToken("b", now: at(0.3)) == .park(1))
        let end = session.refreshEnded(1, .success(token("t2")), now: at(0.5))
        #expect(end == .resume(token("t2"), generation: 2, ended: ended(.requested("admin"), at: 0, [parked(1, "b")])))

        #expect(
            mutate(&session) { $0.refreshRequested(by: "admin-park", parks: true, now: at(1)) }
                == .start(fetch(2, replacing: "t2"))
        )
        #expect(session.requestNeedsToken("c", now: at(1.1)) == .park(2))
    }

    @Test func theGenerationCountsTokensPutInUseAndALogoutIsNotOne() {
        var session: Machine = machine()
        #expect(session.generation == 1)
        #expect(session.loggedOut() == nil, "no refresh ran")
        #expect(session.generation == 1)
        #expect(mutate(&session) { $0.refreshRequested(by: "SIGHUP", now: at(1)) } == .start(fetch(1, replacing: nil)))
        #expect(
            session.refreshEnded(1, .success(token("t2")), now: at(2))
                == .resume(token("t2"), generation: 2, ended: ended(.requested("SIGHUP"), at: 1))
        )
        #expect(session.generation == 2)
    }

    // MARK: Attempts

    /// A token call the session moved past ends without effect: the machine, not a guard, drops it.
    @Test func theEndOfAnEarlierAttemptIsIgnored() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        _ = session.loggedOut()
        // A forced refresh starts attempt 2 while attempt 1's call is still out.
        #expect(mutate(&session) { $0.refreshRequested(by: "admin", now: at(1)) } == .start(fetch(2, replacing: nil)))
        #expect(session.refreshEnded(1, .success(token("from-before-the-logout")), now: at(1.5)) == .ignore)
        #expect(session.isRefreshing)
        #expect(
            session.refreshEnded(2, .success(token("t2")), now: at(2))
                == .resume(token("t2"), generation: 2, ended: ended(.requested("admin"), at: 1))
        )
    }

    @Test func aCallThatFailedIsOverWhileItsRetryWaits() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        #expect(
            session.refreshEnded(1, .rateLimited(retryAfter: .seconds(1)), now: at(0.1))
                == .retry(after: .seconds(1), becameUnreachable: false, gaveUp: nil)
        )
        // A second answer to the same call (there is none, but nothing may count on that) changes nothing.
        #expect(session.refreshEnded(1, .success(token("t2")), now: at(0.2)) == .ignore)
        #expect(mutate(&session) { $0.deadlinePassed(now: at(1.1)) } == .init(fetch: fetch(2, replacing: "t1")))
    }

    /// A logout while a refresh waits out a Retry-After ends it: when the wait is over, nothing calls
    /// the token endpoint (that would spend the refresh token for nobody).
    @Test func aLogoutEndsARefreshWaitingToRetry() {
        var session: Machine = machine(token: nil)
        _ = session.started(now: at(0))
        _ = session.refreshEnded(1, .rateLimited(retryAfter: .seconds(1)), now: at(0.1))
        #expect(session.loggedOut() == ended(.startup, at: 0))
        #expect(session.nextDeadline == nil)
        #expect(mutate(&session) { $0.deadlinePassed(now: at(1.1)) } == .init())
    }

    // MARK: The deadline

    /// The session's timer is asked for only when it must move earlier: a session used from every
    /// loop hops to its timer's thread rarely.
    @Test func theTimerIsArmedOnlyWhenTheDeadlineMovesEarlier() {
        var session: Machine = machine(token: token("t1", expiresIn: 600, refreshIn: 300))
        #expect(session.deadlineToArm() == at(300))
        #expect(session.deadlineToArm() == nil, "armed already")
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(10))
        #expect(session.deadlineToArm() == at(40), "the waiter gives up before the proactive refresh")
        _ = session.requestNeedsToken("b", now: at(11))
        #expect(session.deadlineToArm() == nil, "a later waiter's deadline is later")
        _ = session.refreshEnded(1, .transient(reason: "x", timedOut: false), now: at(12))
        #expect(session.deadlineToArm() == at(12.1), "the retry comes first")
        // The timer fires: what it was armed for is forgotten, and the next deadline asked for.
        #expect(mutate(&session) { $0.deadlinePassed(now: at(12.1)) } == .init(fetch: fetch(2, replacing: "t1")))
        #expect(session.deadlineToArm() == at(40))
        // A timer that fires early (armed for a deadline that moved later) finds nothing due.
        session.waiterCancelled(1)
        #expect(mutate(&session) { $0.deadlinePassed(now: at(40)) } == .init())
        #expect(session.deadlineToArm() == at(41))
    }

    @Test func nothingIsDueWhenNothingWaits() {
        var failed: Machine = machine()
        _ = failed.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        _ = failed.refreshEnded(1, .rejected(code: "invalid_grant", description: nil), now: at(1))
        #expect(failed.nextDeadline == nil)
        #expect(failed.deadlineToArm() == nil)
        #expect(mutate(&failed) { $0.deadlinePassed(now: at(100)) } == .init())
        var withoutExpiry: Machine = machine()
        #expect(withoutExpiry.nextDeadline == nil)
        #expect(mutate(&withoutExpiry) { $0.deadlinePassed(now: at(100)) } == .init())
    }

    // MARK: Forced refreshes and the refresh token file

    @Test func whoeverForcesARefreshHearsHowItEnds() {
        var session: Machine = machine()
        #expect(
            mutate(&session) { $0.refreshRequested(by: "admin", observer: "first", now: at(0)) }
                == .start(fetch(1, replacing: "t1"))
        )
        #expect(mutate(&session) { $0.refreshRequested(by: "SIGHUP", observer: "second", now: at(1)) } == .join)
        #expect(mutate(&session) { $0.refreshRequested(by: "SIGHUP", now: at(1)) } == .join)
        #expect(session.requestNeedsToken("a", now: at(1)) == .send(token: Secret("t1"), generation: 1), "proactive")
        #expect(
            session.refreshEnded(1, .success(token("t2")), now: at(2))
                == .resume(
                    token("t2"),
                    generation: 2,
                    ended: ended(.requested("admin"), at: 0, observers: ["first", "second"])
                )
        )
    }

    @Test func aForcedRefreshEndsAPermanentFailure() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        _ = session.refreshEnded(1, .rejected(code: "invalid_grant", description: nil), now: at(1))
        #expect(
            mutate(&session) { $0.refreshRequested(by: "SIGHUP", observer: "o", now: at(2)) }
                == .start(fetch(2, replacing: nil))
        )
        #expect(
            session.refreshEnded(2, .rejected(code: "invalid_grant", description: nil), now: at(3))
                == .fail(
                    .rejected(code: "invalid_grant", description: nil),
                    ended: ended(.requested("SIGHUP"), at: 2, observers: ["o"])
                )
        )
    }

    /// A logout ends the refresh someone forced: they hear it, rather than wait for the next refresh.
    @Test func aLogoutTellsWhoeverForcedTheRunningRefresh() {
        var session: Machine = machine()
        _ = session.refreshRequested(by: "admin", observer: "operator", now: at(0))
        _ = session.requestNeedsToken("a", now: at(0.5))
        #expect(session.loggedOut() == ended(.requested("admin"), at: 0, observers: ["operator"]))
    }

    @Test func aNewRefreshTokenFileRestartsARefreshThatFailedForGood() {
        var session: Machine = machine()
        #expect(mutate(&session) { $0.refreshTokenFileChanged(now: at(0)) } == nil, "nothing failed")
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        #expect(mutate(&session) { $0.refreshTokenFileChanged(now: at(0.5)) } == nil, "a refresh runs")
        _ = session.refreshEnded(1, .rejected(code: "invalid_grant", description: nil), now: at(1))
        #expect(mutate(&session) { $0.refreshTokenFileChanged(now: at(2)) } == fetch(2, replacing: nil))
        #expect(
            session.refreshEnded(2, .success(token("t2")), now: at(3))
                == .resume(token("t2"), generation: 2, ended: ended(.refreshTokenFile, at: 2))
        )
    }

    @Test(arguments: [
        (Machine.Trigger.startup, "startup"), (.proactive, "proactive"), (.noToken, "no token"),
        (.expired, "expired"), (.rejected, "401"), (.refreshTokenFile, "file"), (.requested("SIGHUP"), "SIGHUP"),
    ])
    func triggersAreNamedAsTheREADMESays(trigger: Machine.Trigger, name: String) {
        #expect(trigger.name == name)
    }
}

/// Runs a mutating call outside `#expect`, whose expansion cannot mutate its operands.
func mutate<Result>(_ session: inout Machine, _ body: (inout Machine) -> Result) -> Result {
    body(&session)
}
