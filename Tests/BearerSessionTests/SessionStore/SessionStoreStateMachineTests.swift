import BearerCore
import BearerTestSupport
import Testing

@testable import BearerSession

/// The fleet protocol's decisions without Redis: who refreshes, who adopts, what happens when the
/// store goes away and comes back.
@Suite struct SessionStoreStateMachineTests {
    typealias Machine = SessionStoreStateMachine

    static let now: Int64 = 1_800_000_000_000
    static let lock = "lock-value-1"

    static func machine() -> Machine {
        Machine(settings: .init(waitLimit: .seconds(60)))
    }

    static func session(
        _ generation: Int,
        _ token: String,
        expiresIn seconds: Int64? = 3600,
        refresh: String? = nil
    ) -> StoredSession {
        StoredSession(
            generation: generation,
            accessToken: Secret(token),
            expiresAtMilliseconds: seconds.map { Self.now + $0 * 1000 },
            refreshToken: refresh.map { Secret($0) }
        )
    }

    /// A machine that adopted `stored` at start.
    static func following(_ stored: StoredSession) -> Machine {
        var machine = Self.machine()
        #expect(machine.readAnswered(stored) == .adopt(stored))
        return machine
    }

    @Test func theFirstRefreshOnAnEmptyStoreFetchesWritesAndReleases() {
        var machine = Self.machine()
        #expect(
            machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
                == .lockAndRead(lockValue: Self.lock)
        )
        // A second request while one runs joins it.
        #expect(machine.refreshRequested(lockValue: "other", replacing: nil, now: t0) == .none)
        #expect(
            machine.lockAnswered(acquired: true, stored: nil) == .fetch(refreshToken: nil)
        )
        let fetched = Self.session(0, "tok-1", refresh: "rt-1")
        #expect(
            machine.fetchAnswered(fetched)
                == .write(Self.session(1, "tok-1", refresh: "rt-1"), base: 0, purpose: .refresh(lockValue: Self.lock))
        )
        #expect(
            machine.writeAnswered(written: true, generation: 1)
                == .finish(.refreshed(Self.session(1, "tok-1", refresh: "rt-1")), releasing: nil)
        )
        #expect(machine.state == .idle)
        #expect(machine.lastSeenGeneration == 1)
    }

    @Test func theHolderSpendsTheStoredRefreshTokenAndWritesTheNextGeneration() {
        var machine = Self.following(Self.session(4, "tok-4", refresh: "rt-4"))
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: Secret("tok-4"), now: t0)
        // The store still holds this proxy's own (now rejected) token: fetch with the stored refresh token.
        #expect(
            machine.lockAnswered(acquired: true, stored: Self.session(4, "tok-4", refresh: "rt-4"))
                == .fetch(refreshToken: Secret("rt-4"))
        )
        #expect(
            machine.fetchAnswered(Self.session(0, "tok-5", refresh: "rt-5"))
                == .write(Self.session(5, "tok-5", refresh: "rt-5"), base: 4, purpose: .refresh(lockValue: Self.lock))
        )
    }

    @Test func aTokenStoredMeanwhileIsAdoptedWithoutATokenCall() {
        var machine = Self.following(Self.session(4, "tok-4"))
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: Secret("tok-4"), now: t0)
        let newer = Self.session(5, "tok-5")
        #expect(
            machine.lockAnswered(acquired: true, stored: newer)
                == .finish(.adopted(newer), releasing: Self.lock)
        )
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: Secret("tok-5"), now: t0)
        let newest = Self.session(6, "tok-6")
        #expect(
            machine.lockAnswered(acquired: false, stored: newest)
                == .finish(.adopted(newest), releasing: nil)
        )
    }

    @Test func aRefreshAskedForJustBeforeAPublicationAdoptsWithoutATokenCall() {
        var machine = Self.following(Self.session(4, "tok-4"))
        // The publication of tok-5 is read first; the refresh that replaces tok-4 runs after it.
        #expect(machine.readAnswered(Self.session(5, "tok-5")) == .adopt(Self.session(5, "tok-5")))
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: Secret("tok-4"), now: t0)
        #expect(
            machine.lockAnswered(acquired: true, stored: Self.session(5, "tok-5"))
                == .finish(.adopted(Self.session(5, "tok-5")), releasing: Self.lock)
        )
    }

    @Test func aProxyThatFindsTheLockTakenWaitsForThePublication() {
        var machine = Self.following(Self.session(4, "tok-4"))
        _ = machine.subscriptionChanged(isUp: true)
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: Secret("tok-4"), now: t0)
        #expect(
            machine.lockAnswered(acquired: false, stored: Self.session(4, "tok-4"))
                == .retry(after: .milliseconds(500))
        )
        #expect(machine.published(generation: 5) == .read)
        let published = Self.session(5, "tok-5")
        #expect(
            machine.readAnswered(published) == .finish(.adopted(published), releasing: nil)
        )
        #expect(machine.retryDue(now: t0 + .milliseconds(500)) == .none)
        #expect(machine.published(generation: 5) == .none)
    }

    @Test func withoutASubscriptionTheWaitingProxyRetriesTheLockSoonerAndTakesItWhenItExpires() {
        var machine = Self.following(Self.session(4, "tok-4", refresh: "rt-4"))
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: Secret("tok-4"), now: t0)
        #expect(
            machine.lockAnswered(acquired: false, stored: Self.session(4, "tok-4", refresh: "rt-4"))
                == .retry(after: .milliseconds(100))
        )
        #expect(machine.retryDue(now: t0 + .milliseconds(100)) == .lockAndRead(lockValue: Self.lock))
        #expect(
            machine.lockAnswered(acquired: false, stored: Self.session(4, "tok-4", refresh: "rt-4"))
                == .retry(after: .milliseconds(100))
        )
        // The holder died: its lock expired, nothing new was stored. This proxy refreshes.
        #expect(machine.retryDue(now: t0 + .seconds(30)) == .lockAndRead(lockValue: Self.lock))
        #expect(
            machine.lockAnswered(acquired: true, stored: Self.session(4, "tok-4", refresh: "rt-4"))
                == .fetch(refreshToken: Secret("rt-4"))
        )
    }

    @Test func aWaitingProxyTriesAgainAsTheLockExpires() {
        var machine = Self.machine()
        _ = machine.subscriptionChanged(isUp: true)
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        #expect(
            machine.lockAnswered(
                acquired: false,
                lockTimeLeft: .milliseconds(120),
                stored: nil,
                wallMilliseconds: Self.now
            )
                == .retry(after: .milliseconds(121))
        )
        #expect(machine.retryDue(now: t0 + .milliseconds(121)) == .lockAndRead(lockValue: Self.lock))
        #expect(
            machine.lockAnswered(acquired: false, lockTimeLeft: .seconds(4), stored: nil, wallMilliseconds: Self.now)
                == .retry(after: .milliseconds(500))
        )
    }

    @Test func waitingEndsAfterTheWaitLimit() {
        var machine = Self.machine()
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        _ = machine.lockAnswered(acquired: false, stored: nil)
        #expect(
            machine.retryDue(now: t0 + .seconds(60)) == .finish(.lockWaitTimedOut, releasing: nil, isNewOutage: true)
        )
        #expect(machine.state == .idle)
    }

    @Test func aFailedTokenCallReleasesTheLock() {
        var machine = Self.machine()
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        _ = machine.lockAnswered(acquired: true, stored: nil)
        #expect(machine.fetchAnswered(nil) == .finish(.fetchFailed, releasing: Self.lock))
    }

    @Test func anExpiredStoredTokenIsNeverAdopted() {
        var machine = Self.machine()
        let expired = Self.session(3, "tok-3", expiresIn: -1, refresh: "rt-3")
        #expect(machine.readAnswered(expired) == .none)
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        #expect(
            machine.lockAnswered(acquired: true, stored: expired)
                == .fetch(refreshToken: Secret("rt-3"))
        )
        #expect(
            machine.fetchAnswered(Self.session(0, "tok-4"))
                == .write(Self.session(4, "tok-4"), base: 3, purpose: .refresh(lockValue: Self.lock))
        )
    }

    @Test func losingTheWriteRaceAdoptsTheOtherToken() {
        var machine = Self.machine()
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        _ = machine.lockAnswered(acquired: true, stored: nil)
        _ = machine.fetchAnswered(Self.session(0, "ours"))
        #expect(machine.writeAnswered(written: false, generation: 1) == .read)
        let theirs = Self.session(1, "theirs")
        #expect(machine.readAnswered(theirs) == .finish(.adopted(theirs), releasing: nil))
    }

    @Test func theStoreFailingBeforeTheLockLeavesItToTheFallback() {
        var machine = Self.machine()
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        #expect(
            machine.storeFailed(.unavailable("refused"))
                == .finish(.storeUnavailable(.unavailable("refused")), releasing: nil, isNewOutage: true)
        )
    }

    /// The token session warns once per outage (session_store_fallback = local): the first refresh
    /// the store cannot coordinate says it is new, the next ones do not, until one is coordinated.
    @Test func anOutageIsNewOnceUntilARefreshIsCoordinatedAgain() {
        var machine = Self.machine()
        let refused = RedisError.unavailable("refused")
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        #expect(machine.storeFailed(refused) == .finish(.storeUnavailable(refused), releasing: nil, isNewOutage: true))
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        _ = machine.lockAnswered(acquired: false, stored: nil)
        #expect(
            machine.retryDue(now: t0 + .seconds(60)) == .finish(.lockWaitTimedOut, releasing: nil, isNewOutage: false)
        )
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        _ = machine.lockAnswered(acquired: true, stored: nil)
        _ = machine.fetchAnswered(Self.session(0, "tok-1"))
        #expect(
            machine.writeAnswered(written: true, generation: 1)
                == .finish(.refreshed(Self.session(1, "tok-1")), releasing: nil)
        )
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: Secret("tok-1"), now: t0)
        #expect(machine.storeFailed(refused) == .finish(.storeUnavailable(refused), releasing: nil, isNewOutage: true))
    }

    /// A read that fails matters only to a refresh re-reading after it lost the write race: that
    /// refresh keeps its own token, to be stored once the store is back.
    @Test func aFailedReadEndsOnlyARereadingRefresh() {
        var machine = Self.machine()
        let lost = RedisError.connectionLost("reset")
        #expect(machine.readFailed(lost) == .none)
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        _ = machine.lockAnswered(acquired: true, stored: nil)
        _ = machine.fetchAnswered(Self.session(0, "ours"))
        #expect(machine.writeAnswered(written: false, generation: 1) == .read)
        #expect(machine.readFailed(lost) == .finish(.refreshedUnsynced(Self.session(1, "ours")), releasing: nil))
        #expect(machine.state == .idle)
    }

    @Test func aTokenTheStoreCouldNotTakeIsWrittenWhenItComesBack() {
        var machine = Self.following(Self.session(4, "tok-4"))
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: Secret("tok-4"), now: t0)
        _ = machine.lockAnswered(acquired: true, stored: Self.session(4, "tok-4"))
        _ = machine.fetchAnswered(Self.session(0, "tok-5", refresh: "rt-5"))
        let ours = Self.session(5, "tok-5", refresh: "rt-5")
        #expect(machine.storeFailed(.connectionLost("reset")) == .finish(.refreshedUnsynced(ours), releasing: nil))
        #expect(machine.isUnsynced)
        #expect(machine.storeConnected() == .read)
        // The store did not move: this proxy's token (and its rotated refresh token) goes in.
        #expect(
            machine.readAnswered(Self.session(4, "tok-4"))
                == .write(ours, base: 4, purpose: .reconcile)
        )
        #expect(machine.readAnswered(Self.session(4, "tok-4")) == .none)
        #expect(machine.reconcileAnswered(written: true, generation: 5) == .none)
        #expect(!machine.isUnsynced)
        #expect(machine.lastSeenGeneration == 5)
    }

    @Test func aLocalRefreshDuringAnOutageYieldsToTheFleetIfItMovedOn() {
        var machine = Self.following(Self.session(4, "tok-4"))
        machine.refreshedLocally(Self.session(0, "local", refresh: "rt-local"))
        let fleet = Self.session(5, "fleet")
        #expect(machine.readAnswered(fleet) == .adopt(fleet))
        #expect(!machine.isUnsynced)
    }

    @Test func aRefreshAfterALocalOneSpendsTheLocalRefreshToken() {
        var machine = Self.following(Self.session(4, "tok-4", refresh: "rt-4"))
        machine.refreshedLocally(Self.session(0, "local", refresh: "rt-local"))
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: Secret("local"), now: t0)
        // The store's refresh token was spent by the local refresh: the session's own is the live one.
        #expect(
            machine.lockAnswered(acquired: true, stored: Self.session(4, "tok-4", refresh: "rt-4"))
                == .fetch(refreshToken: nil)
        )
    }

    @Test func anEmptiedStoreGetsTheFleetsTokenBackAndTheOthersFollow() {
        var first = Self.following(Self.session(7, "tok-7"))
        var second = Self.following(Self.session(7, "tok-7"))
        // Redis restarted without persistence: both find the store empty and write the token back.
        #expect(
            first.readAnswered(nil)
                == .write(Self.session(8, "tok-7"), base: 7, purpose: .reconcile)
        )
        #expect(
            second.readAnswered(nil)
                == .write(Self.session(8, "tok-7"), base: 7, purpose: .reconcile)
        )
        #expect(first.reconcileAnswered(written: true, generation: 8) == .none)
        #expect(second.reconcileAnswered(written: false, generation: 8) == .read)
        // Same token, another generation: nothing to adopt, the generation is noted.
        #expect(second.readAnswered(Self.session(8, "tok-7")) == .none)
        #expect(first.lastSeenGeneration == 8)
        #expect(second.lastSeenGeneration == 8)
    }

    @Test func readsWhileNoRefreshRunsAdoptOnlyWhatDiffersAndWorks() {
        var machine = Self.following(Self.session(2, "tok-2"))
        #expect(machine.readAnswered(Self.session(2, "tok-2")) == .none)
        #expect(machine.readAnswered(Self.session(3, "tok-3", expiresIn: -5)) == .none)
        #expect(
            machine.readAnswered(Self.session(3, "tok-3b"))
                == .adopt(Self.session(3, "tok-3b"))
        )
    }

    @Test func pollsOnlyWithoutASubscriptionAndWhileIdle() {
        var machine = Self.machine()
        #expect(machine.pollDue() == .read)
        #expect(machine.subscriptionChanged(isUp: true) == .read)
        #expect(machine.pollDue() == .none)
        #expect(machine.subscriptionChanged(isUp: false) == .none)
        _ = machine.refreshRequested(lockValue: Self.lock, replacing: nil, now: t0)
        #expect(machine.pollDue() == .none)
    }
}

extension SessionStoreStateMachine {
    /// The lock's answer, read at the tests' wall-clock instant.
    mutating func lockAnswered(acquired: Bool, stored: StoredSession?) -> Action {
        self.lockAnswered(acquired: acquired, stored: stored, wallMilliseconds: SessionStoreStateMachineTests.now)
    }

    mutating func readAnswered(_ stored: StoredSession?) -> Action {
        self.readAnswered(stored, wallMilliseconds: SessionStoreStateMachineTests.now)
    }
}
