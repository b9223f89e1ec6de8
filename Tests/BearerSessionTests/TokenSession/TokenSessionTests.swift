import BearerCore
import BearerDemo
import BearerIO
import Foundation
import Testing

@testable import BearerConfig
@testable import BearerSession

/// The token session itself on a manual clock: its timer, the token calls it makes and when, and
/// who it tells. The test answers every token call by hand and moves time by hand; parked requests
/// are told through the manual scheduler, on the test's thread, so nothing here waits or sleeps.
@Suite struct TokenSessionTests {
    /// A token source whose calls the test answers, oldest first.
    final class ScriptedSource: TokenSource, Sendable {
        private let clock: TimeSource
        private let pending = Locked<[@Sendable (TokenFetchOutcome) -> Void]>([])
        private let callTimes = Locked<[Instant]>([])
        let canRetryWithoutNewCredentials: Bool
        var logDescription: String { "scripted" }

        init(clock: TimeSource, canRetryWithoutNewCredentials: Bool = true) {
            self.clock = clock
            self.canRetryWithoutNewCredentials = canRetryWithoutNewCredentials
        }

        func fetch(_ completion: @escaping @Sendable (TokenFetchOutcome) -> Void) {
            self.callTimes.withLock { $0.append(self.clock.now()) }
            self.pending.withLock { $0.append(completion) }
        }

        var callCount: Int { self.callTimes.withLock { $0.count } }
        /// When each call was made, from the first.
        var callOffsets: [Duration] {
            self.callTimes.withLock { times in times.map { $0 - times[0] } }
        }

        /// Answers the oldest call not answered yet.
        func answer(_ outcome: TokenFetchOutcome) {
            let completion = self.pending.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            guard let completion else {
                Issue.record("no token call to answer")
                return
            }
            completion(outcome)
        }

        func answer(token: String, expiresIn: Duration? = .seconds(3600)) {
            self.answer(.token(FetchedToken(accessToken: Secret(token), expiresIn: expiresIn)))
        }
    }

    /// A parked request: what it was told.
    final class Waiter: TokenWaiter, @unchecked Sendable {
        private let told = Locked<[String]>([])
        var grants: [String] { self.told.withLock { $0 } }

        func tokenReady(_ ticket: Ticket, _ answer: TokenAnswer) {
            let text = "\(ticket.id): \(TokenSessionTests.describe(answer))"
            self.told.withLock { $0.append(text) }
        }
    }

    static func session(
        _ clock: ManualTimerScheduler,
        _ source: ScriptedSource?,
        logs: LogSink = LogSink(capturing: ()),
        _ configure: (inout Configuration) -> Void = { _ in }
    ) -> TokenSession {
        var configuration = Configuration()
        configuration.refreshTimeout = .seconds(5)
        configure(&configuration)
        return TokenSession(
            settings: configuration.defaultSession,
            process: configuration.process,
            source: source,
            store: nil,
            logger: Logger(level: .debug, sink: logs),
            clock: clock,
            timers: clock
        )
    }

    /// The line a request is sent with, or what it got instead.
    static func describe(_ answer: TokenAnswer) -> String {
        switch answer {
        case .send(let token?):
            "\(String(decoding: token.line, as: UTF8.self).trimmingCharacters(in: .newlines)) g\(token.generation)"
        case .send(nil): "no token"
        case .wait(let ticket): "parked \(ticket.id)"
        case .fail(let failure): failure.shortName
        case .passThrough: "pass through"
        }
    }

    static func describe(_ outcome: TokenSession.RefreshOutcome) -> String {
        switch outcome {
        case .succeeded(let generation): "ok g\(generation)"
        case .failed(let failure): failure.shortName
        }
    }

    @Test func aParkedRequestGivesUpAtRefreshTimeout() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source) { $0.accessToken = Secret("stale") }
        let waiter = Waiter()
        guard
            case .wait(let ticket) = session.upstreamRejected(
                generation: 1,
                canWait: true,
                loop: clock,
                waiter: waiter
            )
        else {
            Issue.record("the rejected request was not parked")
            return
        }
        #expect(source.callCount == 1)
        clock.advance(by: .milliseconds(4999))
        #expect(waiter.grants.isEmpty)
        clock.advance(by: .milliseconds(1))
        #expect(waiter.grants == ["\(ticket.id): timeout"])
        #expect(session.status.parked == 0)
        // The call's late answer still brings the token, for the requests after it.
        source.answer(token: "fresh")
        #expect(
            Self.describe(session.tokenForRequest(loop: clock, waiter: Waiter())) == "Authorization: Bearer fresh g2"
        )
    }

    @Test func aRateLimitedRefreshTellsTheWaitersWhenToComeBack() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source) { $0.accessToken = Secret("stale") }
        let waiter = Waiter()
        _ = session.upstreamRejected(generation: 1, canWait: true, loop: clock, waiter: waiter)
        source.answer(.rateLimited(retryAfter: .seconds(120)))
        clock.advance(by: .seconds(5))
        #expect(waiter.grants == ["1: rate_limited"])
        #expect(source.callCount == 1, "the token endpoint is asked again only after its Retry-After")
        clock.advance(by: .seconds(115))
        #expect(source.callCount == 2)
    }

    @Test func aFailedCallIsRetriedAfterTheBackoffOnTheSessionsClock() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source)
        session.start()
        let waiter = Waiter()
        #expect(Self.describe(session.tokenForRequest(loop: clock, waiter: waiter)) == "parked 1")
        source.answer(.transient(reason: "connection refused", timedOut: false))
        clock.advance(by: .milliseconds(99))
        #expect(source.callCount == 1)
        clock.advance(by: .milliseconds(1))
        #expect(source.callCount == 2)
        source.answer(.transient(reason: "connection refused", timedOut: false))
        clock.advance(by: .milliseconds(200))
        #expect(source.callOffsets == [.zero, .milliseconds(100), .milliseconds(300)])
        source.answer(token: "third-time")
        #expect(waiter.grants == ["1: Authorization: Bearer third-time g1"])
    }

    /// A logout while a refresh waits out a Retry-After ends that refresh: when the wait is over, the
    /// logged-out session makes no token call (which would spend the refresh token for nobody).
    @Test func aLogoutEndsARefreshWaitingToRetry() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source)
        session.start()
        source.answer(.rateLimited(retryAfter: .seconds(1)))
        _ = session.logOut()
        clock.advance(by: .seconds(2))
        #expect(source.callCount == 1)
        #expect(session.status.state == "logged_out")
        #expect(clock.timerCount == 0)
    }

    /// Whoever forced a refresh hears a logout that ends it. (Before, the observer stayed with the
    /// session, and an admin POST /refresh waited for the next refresh to end, if one ever did.)
    @Test func whoeverForcedARefreshHearsOfALogout() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source) { $0.accessToken = Secret("t1") }
        let outcomes = Locked<[String]>([])
        #expect(
            session.forceRefresh(trigger: "admin") { outcome in outcomes.withLock { $0.append(Self.describe(outcome)) }
            }
        )
        _ = session.logOut()
        #expect(outcomes.withLock { $0 } == ["logged_out"])
    }

    /// The answer of a token call made before a logout is not taken for the refresh forced after it:
    /// that refresh ends with its own call's answer. (Before, the first answer to arrive ended it.)
    @Test func theAnswerOfACallMadeBeforeALogoutIsNotTaken() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source) { $0.accessToken = Secret("t1") }
        #expect(session.forceRefresh(trigger: "admin"))
        _ = session.logOut()
        #expect(session.forceRefresh(trigger: "admin"))
        #expect(source.callCount == 2)
        source.answer(token: "from-before-the-logout")
        #expect(session.status.state == "refreshing")
        source.answer(token: "after-the-logout")
        #expect(
            Self.describe(session.tokenForRequest(loop: clock, waiter: Waiter()))
                == "Authorization: Bearer after-the-logout g2"
        )
    }

    @Test func theProactiveRefreshComesBeforeTheTokenExpires() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source) { $0.refreshSkew = .seconds(3) }
        session.start()
        source.answer(token: "six-seconds", expiresIn: .seconds(6))
        let waiter = Waiter()
        // Due 3 s before expiry, plus up to 10% of the skew as jitter: between 3.0 and 3.3 s.
        clock.advance(by: .milliseconds(2999))
        #expect(source.callCount == 1)
        #expect(
            Self.describe(session.tokenForRequest(loop: clock, waiter: waiter))
                == "Authorization: Bearer six-seconds g1"
        )
        clock.advance(by: .milliseconds(301))
        #expect(source.callCount == 2)
        // While the proactive refresh runs, the token still works and is still sent.
        #expect(
            Self.describe(session.tokenForRequest(loop: clock, waiter: waiter))
                == "Authorization: Bearer six-seconds g1"
        )
        // It is never sent past its expiry: requests then wait for the new one.
        clock.advance(by: .milliseconds(2700))
        #expect(Self.describe(session.tokenForRequest(loop: clock, waiter: waiter)) == "parked 1")
        source.answer(token: "next", expiresIn: .seconds(6))
        #expect(waiter.grants == ["1: Authorization: Bearer next g2"])
        clock.advance(by: .milliseconds(3300))
        #expect(source.callCount == 3, "and the next token's proactive refresh")
    }

    @Test func theExpiryOfAJWTAccessTokenDrivesTheProactiveRefresh() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source) { $0.refreshSkew = .seconds(3) }
        session.start()
        // No expires_in: the token's own exp (wall clock, whole seconds: 5 to 6 s from now) is its expiry.
        source.answer(token: MockTokenServer.jwt(subject: "jwt-1", expiresIn: 6), expiresIn: nil)
        let expiresIn = session.status.expiresInSeconds ?? 0
        #expect(expiresIn > 4.9 && expiresIn <= 6)
        clock.advance(by: .milliseconds(2000))
        #expect(source.callCount == 1)
        clock.advance(by: .milliseconds(1300))
        #expect(source.callCount == 2)
    }

    /// One timer for the session however many requests wait: the machine asks for it only when the
    /// deadline moves earlier, and the timer is kept at the earliest.
    @Test func theSessionKeepsOneTimerHoweverManyWait() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source) { $0.accessToken = Secret("stale") }
        let waiter = Waiter()
        for _ in 0..<100 {
            _ = session.upstreamRejected(
                generation: 1,
                canWait: true,
                loop: clock,
                waiter: waiter
            )
            clock.advance(by: .milliseconds(10))
        }
        #expect(source.callCount == 1)
        #expect(clock.timerCount == 1)
        #expect(clock.nextDeadline == Instant(nanoseconds: 1_000_000_000_000) + .seconds(5))
        clock.advance(by: .seconds(5))
        #expect(waiter.grants.count == 100)
        #expect(clock.timerCount == 0, "nothing left to wait for")
    }

    @Test func aStoppedSessionSetsNoTimer() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source) { $0.accessToken = Secret("stale") }
        session.stop()
        _ = session.upstreamRejected(generation: 1, canWait: true, loop: clock, waiter: Waiter())
        #expect(source.callCount == 1)
        #expect(clock.timerCount == 0)
    }

    @Test func everyoneWhoForcedTheRefreshHearsHowItEnded() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let session = Self.session(clock, source) { $0.accessToken = Secret("t1") }
        let outcomes = Locked<[String]>([])
        for _ in 0..<2 {
            #expect(
                session.forceRefresh(trigger: "admin") { outcome in
                    outcomes.withLock { $0.append(Self.describe(outcome)) }
                }
            )
        }
        #expect(source.callCount == 1, "the second joins the first")
        source.answer(token: "t2")
        #expect(outcomes.withLock { $0 } == ["ok g2", "ok g2"])
        #expect(!Self.session(clock, nil).forceRefresh(trigger: "admin"), "nothing to refresh with")
    }

    /// A session that starts without a token fetches one at once, and its line says why.
    @Test func theStartUpRefreshLogLineSaysStartup() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let logs = LogSink(capturing: ())
        let session = Self.session(clock, source, logs: logs)
        session.start()
        #expect(source.callCount == 1)
        source.answer(token: "first", expiresIn: .seconds(600))
        let line = logs.capturedLines.first { $0.contains("token refreshed") }?.trimmingCharacters(in: .newlines)
        #expect(
            line?.hasSuffix(
                "token refreshed generation=1 trigger=startup duration_ms=0 expires_in=600s waiting_requests=0"
            )
                == true,
            "\(line ?? "no line")"
        )
    }

    @Test func theRefreshLogLineNamesItsTriggerDurationAndWaiters() {
        let clock = ManualTimerScheduler()
        let source = ScriptedSource(clock: clock)
        let logs = LogSink(capturing: ())
        let session = Self.session(clock, source, logs: logs) { $0.accessToken = Secret("stale") }
        _ = session.upstreamRejected(generation: 1, canWait: true, loop: clock, waiter: Waiter())
        _ = session.tokenForRequest(loop: clock, waiter: Waiter())
        clock.advance(by: .milliseconds(250))
        source.answer(token: "fresh", expiresIn: .seconds(600))
        let line = logs.capturedLines.first { $0.contains("token refreshed") }?.trimmingCharacters(in: .newlines)
        #expect(
            line?.hasSuffix(
                "token refreshed generation=2 trigger=401 duration_ms=250 expires_in=600s waiting_requests=2"
            ) == true,
            "\(line ?? "no line")"
        )
    }
}

extension TokenSession {
    /// A request's token, as the port of a loop (`loop`) asks for it.
    func tokenForRequest(loop: any TimerScheduler, waiter: TokenWaiter) -> TokenAnswer {
        self.answerRequest(waiter, on: loop).0
    }

    /// A refusal of `generation`, as the port of a loop (`loop`) reports it.
    func upstreamRejected(generation: Int, canWait: Bool, loop: any TimerScheduler, waiter: TokenWaiter) -> TokenAnswer
    {
        self.answerRejection(of: generation, canWait: canWait, waiter, on: loop)
    }
}
