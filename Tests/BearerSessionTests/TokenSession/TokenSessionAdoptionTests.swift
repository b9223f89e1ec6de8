import BearerCore
import BearerTestSupport
import Testing

/// Tokens adopted from the session store (another proxy of the fleet fetched them).
@Suite struct TokenSessionAdoptionTests {
    @Test func anAdoptedTokenEndsARunningRefreshAndSendsItsWaiters() {
        var session: Machine = machine()
        #expect(
            session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
                == .parkAndStartRefresh(1, fetch(1, replacing: "t1"))
        )
        #expect(session.requestNeedsToken("b", now: at(0.1)) == .park(2))
        #expect(
            session.tokenAdopted(token("fleet"))
                == .resume(
                    token("fleet"),
                    generation: 2,
                    ended: ended(.rejected, at: 0, [parked(1, "a"), parked(2, "b")])
                )
        )
        #expect(!session.isRefreshing)
        // A late answer of the refresh it replaced is ignored.
        #expect(session.refreshEnded(1, .success(token("late")), now: at(0.2)) == .ignore)
        #expect(session.requestNeedsToken("c", now: at(0.3)) == .send(token: Secret("fleet"), generation: 2))
    }

    @Test func anAdoptedTokenReplacesTheCurrentOneWhileIdle() {
        var session: Machine = machine()
        #expect(session.tokenAdopted(token("fleet")) == .resume(token("fleet"), generation: 2, ended: nil))
        // A 401 to a request sent with the replaced token is replayed with the adopted one, no refresh.
        #expect(
            session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
                == .replay(token: Secret("fleet"), generation: 2)
        )
    }

    @Test func anAdoptedTokenEndsAPermanentFailure() {
        var session: Machine = machine()
        _ = session.upstreamRejected("a", generation: 1, canWait: true, now: at(0))
        _ = session.refreshEnded(1, .rejected(code: "invalid_grant", description: nil), now: at(0.1))
        #expect(session.failure != nil)
        #expect(session.tokenAdopted(token("fleet")) == .resume(token("fleet"), generation: 2, ended: nil))
        #expect(session.failure == nil)
    }

    @Test func adoptingTheTokenAlreadyInUseChangesNothing() {
        var session: Machine = machine()
        #expect(session.tokenAdopted(token("fleet")) == .resume(token("fleet"), generation: 2, ended: nil))
        #expect(session.tokenAdopted(token("fleet")) == .ignore)
        #expect(session.generation == 2)
    }

    @Test func aLogoutIsNotUndoneByAnotherProxysToken() {
        var session: Machine = machine()
        _ = session.loggedOut()
        #expect(session.tokenAdopted(token("fleet")) == .ignore)
        #expect(session.requestNeedsToken("a", now: at(0)) == .fail(.loggedOut))
    }

    /// The token a refresh through the store replaces is the one it was decided for, even when a
    /// token is adopted in between: the store must not replace the adopted one in its turn.
    @Test func aRefreshNamesTheTokenItReplaces() {
        var session: Machine = machine()
        #expect(
            mutate(&session) { $0.refreshRequested(by: "admin", now: at(0)) } == .start(fetch(1, replacing: "t1"))
        )
        _ = session.tokenAdopted(token("fleet"))
        session.upstreamAccepted(generation: 2)
        #expect(
            session.upstreamRejected("a", generation: 2, canWait: true, now: at(1))
                == .parkAndStartRefresh(1, fetch(2, replacing: "fleet"))
        )
    }
}
