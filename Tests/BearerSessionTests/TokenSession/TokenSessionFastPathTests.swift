import BearerCore
import BearerIO
import BearerTestSupport
import Synchronization
import Testing

@testable import BearerConfig
@testable import BearerSession

/// The request path takes no lock while a token simply works: each loop reuses the token line it
/// was last given. These tests pin that it never serves a token the session would not hand out.
@Suite struct TokenSessionFastPathTests {
    final class Waiter: TokenWaiter {
        func tokenGranted(_ id: TokenSession.WaiterID, _ grant: TokenSession.Grant) {}
    }

    /// A token source that answers with the next token in line, at once.
    final class Source: TokenSource, Sendable {
        let next = Atomic<Int>(1)
        var canRetryWithoutNewCredentials: Bool { true }
        var logDescription: String { "test" }
        func fetch(_ completion: @escaping @Sendable (TokenFetchOutcome) -> Void) {
            let number = self.next.add(1, ordering: .relaxed).newValue
            completion(.token(FetchedToken(accessToken: Secret("fetched-\(number)"), expiresIn: .seconds(600))))
        }
    }

    static func session(clock: ManualTimerScheduler) -> TokenSession {
        var configuration = Configuration()
        configuration.accessToken = Secret("first")
        configuration.refreshSkew = .seconds(10)
        return TokenSession(
            settings: configuration.defaultSession,
            process: configuration.process,
            source: Source(),
            store: nil,
            logger: .silent,
            clock: clock,
            timers: clock
        )
    }

    func line(_ result: TokenSession.RequestResult) -> String? {
        guard case .ready(let line, _) = result else { return nil }
        return String(decoding: line, as: UTF8.self)
    }

    @Test func aLoopReusesTheTokenUntilTheSessionChangesIt() throws {
        let clock = ManualTimerScheduler()
        let session = Self.session(clock: clock)
        let loop = mockGroup.loops[0]
        let waiter = Waiter()
        var cache = TokenSession.LoopTokenCache()
        #expect(
            self.line(session.tokenForRequest(loop: loop, waiter: waiter, cache: &cache))
                == "Authorization: Bearer first\r\n"
        )
        #expect(cache.generation == 1 && cache.epoch != 0, "a freely usable token fills the loop's cache")
        #expect(
            self.line(session.tokenForRequest(loop: loop, waiter: waiter, cache: &cache))
                == "Authorization: Bearer first\r\n"
        )

        // A logout: the cached line must not be served any more.
        _ = session.logOut()
        guard case .failed(.loggedOut) = session.tokenForRequest(loop: loop, waiter: waiter, cache: &cache) else {
            Issue.record("a logged-out session still handed out a token")
            return
        }

        // A forced refresh brings a new token: the loop picks it up, not the old line.
        #expect(session.forceRefresh(trigger: "test"))
        #expect(
            self.line(session.tokenForRequest(loop: loop, waiter: waiter, cache: &cache))
                == "Authorization: Bearer fetched-2\r\n"
        )
        #expect(cache.generation == 2)
    }

    @Test func aCachedTokenIsNotServedPastItsProactiveRefreshTime() throws {
        let clock = ManualTimerScheduler()
        let session = Self.session(clock: clock)
        let loop = mockGroup.loops[0]
        let waiter = Waiter()
        var cache = TokenSession.LoopTokenCache()
        // A fetched token lives 600 s; its proactive refresh is due about 10 s before that.
        #expect(session.forceRefresh(trigger: "test"))
        #expect(self.line(session.tokenForRequest(loop: loop, waiter: waiter, cache: &cache)) != nil)
        let cachedUntil = try #require(cache.usableUntil)
        #expect(cachedUntil <= clock.now() + .seconds(591))
        clock.advance(by: .seconds(595))
        // Past the refresh time the session decides again: it sends the still-valid token and starts
        // the proactive refresh (which, with this source, ends at once with a newer token).
        let result = session.tokenForRequest(loop: loop, waiter: waiter, cache: &cache)
        #expect(self.line(result) != nil)
        #expect(session.generation == 3, "the proactive refresh ran")
        #expect(
            self.line(session.tokenForRequest(loop: loop, waiter: waiter, cache: &cache))
                == "Authorization: Bearer fetched-3\r\n"
        )
    }
}
