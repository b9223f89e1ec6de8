import BearerCore
import Testing

@testable import BearerProxy

/// Tokens adopted from the session store (another proxy of the fleet fetched them).
@Suite struct TokenSessionAdoptionTests {
    @Test func anAdoptedTokenEndsARunningRefreshAndSendsItsWaiters() {
        var session = machine()
        #expect(
            session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
                == .parkAndStartRefresh
        )
        #expect(session.requestNeedsToken(2, now: at(0.1)) == .park)
        #expect(
            session.tokenAdopted(token("fleet")) == .resume(waiters: [1, 2], token: Secret("fleet"), generation: 2)
        )
        #expect(!session.isRefreshing)
        // A late answer of the refresh it replaced is ignored.
        #expect(session.refreshEnded(.success(token("late")), now: at(0.2)) == .ignore)
        #expect(session.requestNeedsToken(3, now: at(0.3)) == .send(token: Secret("fleet"), generation: 2))
    }

    @Test func anAdoptedTokenReplacesTheCurrentOneWhileIdle() {
        var session = machine()
        #expect(session.tokenAdopted(token("fleet")) == .resume(waiters: [], token: Secret("fleet"), generation: 2))
        // A 401 to a request sent with the replaced token is replayed with the adopted one, no refresh.
        #expect(
            session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
                == .replay(token: Secret("fleet"), generation: 2)
        )
    }

    @Test func anAdoptedTokenEndsAPermanentFailure() {
        var session = machine()
        _ = session.upstreamRejected(1, generation: 1, isReplay: false, isReplayable: true, now: at(0))
        _ = session.refreshEnded(.rejected(code: "invalid_grant", description: nil), now: at(0.1))
        #expect(session.failure != nil)
        #expect(session.tokenAdopted(token("fleet")) == .resume(waiters: [], token: Secret("fleet"), generation: 2))
        #expect(session.failure == nil)
    }

    @Test func adoptingTheTokenAlreadyInUseChangesNothing() {
        var session = machine()
        #expect(session.tokenAdopted(token("fleet")) == .resume(waiters: [], token: Secret("fleet"), generation: 2))
        #expect(session.tokenAdopted(token("fleet")) == .ignore)
        #expect(session.generation == 2)
    }

    @Test func aLogoutIsNotUndoneByAnotherProxysToken() {
        var session = machine()
        _ = session.loggedOut()
        #expect(session.tokenAdopted(token("fleet")) == .ignore)
        #expect(session.requestNeedsToken(1, now: at(0)) == .fail(.loggedOut))
    }
}
