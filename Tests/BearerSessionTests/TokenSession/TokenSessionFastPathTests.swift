import BearerCore
import BearerIO
import BearerTestSupport
import Synchronization
import Testing

@testable import BearerConfig
@testable import BearerSession

/// The request path takes no lock while a token simply works: each loop's port reuses the token it
/// was last given. These tests pin that it never serves a token the session would not hand out.
@Suite struct TokenSessionFastPathTests {
    final class Waiter: TokenWaiter {
        func tokenReady(_ ticket: Ticket, _ answer: TokenAnswer) {}
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

    func line(_ answer: TokenAnswer) -> String? {
        guard case .send(let token?) = answer else { return nil }
        return String(decoding: token.line, as: UTF8.self)
    }

    @Test func aLoopReusesTheTokenUntilTheSessionChangesIt() throws {
        let clock = ManualTimerScheduler()
        let session = Self.session(clock: clock)
        let port = SessionPort(session, loop: mockGroup.loops[0])
        let waiter = Waiter()
        #expect(
            self.line(port.tokenForRequest(waiter))
                == "Authorization: Bearer first\r\n"
        )
        #expect(port.token.generation == 1 && port.epoch != 0, "a freely usable token fills the loop's port")
        #expect(
            self.line(port.tokenForRequest(waiter))
                == "Authorization: Bearer first\r\n"
        )

        // A logout: the cached line must not be served any more.
        _ = session.logOut()
        guard case .fail(.loggedOut) = port.tokenForRequest(waiter) else {
            Issue.record("a logged-out session still handed out a token")
            return
        }

        // A forced refresh brings a new token: the loop picks it up, not the old line.
        #expect(session.forceRefresh(trigger: "test"))
        #expect(
            self.line(port.tokenForRequest(waiter))
                == "Authorization: Bearer fetched-2\r\n"
        )
        #expect(port.token.generation == 2)
    }

    @Test func aCachedTokenIsNotServedPastItsProactiveRefreshTime() throws {
        let clock = ManualTimerScheduler()
        let session = Self.session(clock: clock)
        let port = SessionPort(session, loop: mockGroup.loops[0])
        let waiter = Waiter()
        // A fetched token lives 600 s; its proactive refresh is due about 10 s before that.
        #expect(session.forceRefresh(trigger: "test"))
        #expect(self.line(port.tokenForRequest(waiter)) != nil)
        let cachedUntil = try #require(port.usableUntil)
        #expect(cachedUntil <= clock.now() + .seconds(591))
        clock.advance(by: .seconds(595))
        // Past the refresh time the session decides again: it sends the still-valid token and starts
        // the proactive refresh (which, with this source, ends at once with a newer token).
        let result = port.tokenForRequest(waiter)
        #expect(self.line(result) != nil)
        #expect(session.generation == 3, "the proactive refresh ran")
        #expect(
            self.line(port.tokenForRequest(waiter))
                == "Authorization: Bearer fetched-3\r\n"
        )
    }
}
