import BearerCore

/// The fleet protocol: one refresh for every proxy sharing a session, and every proxy following the
/// store's token. Implements docs/fleet.md's "Running a fleet".
///
/// A value type with no I/O, clock or randomness of its own; `SessionStore` performs its actions.
/// A refresh takes the lock (`SET NX PX`, a random value, expiring after refresh_timeout if its
/// holder dies) and reads the store in the same round trip, so the read happens under the lock: a
/// token another proxy stored meanwhile is adopted instead of fetching one. The holder calls the
/// token endpoint, writes the new token (generation + 1), releases the lock and publishes, in one
/// script. The others wait for the publication, or poll the lock, and adopt the stored token.
///
/// The store is the truth: whenever it holds a usable token other than this proxy's, the proxy
/// adopts it. A token this proxy got while the store was unreachable (`session_store_fallback =
/// local`) is written back when the store returns, unless the fleet moved on meanwhile.
struct SessionStoreStateMachine {
    struct Settings {
        /// How often a proxy waiting for another's refresh tries the lock again: soon when no
        /// publication will tell it (subscription down), rarely when one will.
        var retryWhileSubscribed: Duration = .milliseconds(500)
        var retryWhileUnsubscribed: Duration = .milliseconds(100)
        /// How long a refresh may wait for another proxy's lock before giving up (twice the lock's
        /// lifetime: a dead holder's lock has expired by then).
        var waitLimit: Duration
    }

    /// How a refresh asked of the store ended.
    enum Outcome: Equatable {
        /// Another proxy's token (nothing was fetched).
        case adopted(StoredSession)
        /// This proxy fetched the token and stored it.
        case refreshed(StoredSession)
        /// This proxy fetched the token but could not store it; it is written when the store returns.
        case refreshedUnsynced(StoredSession)
        /// The token call failed; its outcome is the token session's to judge.
        case fetchFailed
        /// The fleet could not be coordinated: session_store_fallback decides.
        case storeUnavailable(RedisError)
        /// Another proxy held the lock for longer than it can live.
        case lockWaitTimedOut
    }

    /// Why the store is written.
    enum WritePurpose: Equatable {
        /// The refresh holding the lock stores its new token; the script releases `lockValue`.
        case refresh(lockValue: String)
        /// A token this proxy got while the store was away goes (back) in, outside any refresh.
        case reconcile
    }

    struct Attempt: Equatable {
        var lockValue: String
        var startedAt: Instant
        /// The token the session wants replaced (nil: it has none). Any other usable token in the
        /// store serves, even one this proxy adopted after asking: a refresh asked for just before a
        /// publication arrived must not fetch again.
        var replacing: Secret<String>?
    }

    enum State: Equatable {
        /// No refresh running. Valid transitions: .locking.
        case idle
        /// `SET NX` and the read in flight. Valid transitions: .fetching, .waiting, .idle.
        case locking(Attempt)
        /// Another proxy holds the lock. Valid transitions: .locking, .idle.
        case waiting(Attempt)
        /// The lock is ours; the token call runs. Valid transitions: .writing, .idle.
        case fetching(Attempt, base: Int)
        /// The new token is being written. Valid transitions: .rereading, .idle.
        case writing(Attempt, StoredSession)
        /// The write found another proxy's token (our lock had expired): read it. Valid transitions: .idle.
        case rereading(Attempt, ours: StoredSession)
    }

    enum Action: Equatable {
        case none
        /// `SET lock value NX PX`, `PTTL lock` and `HMGET`, pipelined.
        case lockAndRead(lockValue: String)
        case read
        /// Call the token endpoint; nil means the refresh token the token session holds.
        case fetch(refreshToken: Secret<String>?)
        /// Run the write script; its answer goes to `writeAnswered` or `reconcileAnswered`, as the
        /// purpose says.
        case write(StoredSession, base: Int, purpose: WritePurpose)
        /// The refresh ended; release the lock first when `releasing` names it. `isNewOutage`: the
        /// store could not coordinate it, and the refresh before did not fail so (one warning per
        /// outage).
        case finish(Outcome, releasing: String?, isNewOutage: Bool = false)
        /// A token another proxy stored, found while no refresh ran: use it.
        case adopt(StoredSession)
        /// Try the lock again after `delay` (`retryDue`).
        case retry(after: Duration)
    }

    let settings: Settings
    private(set) var state: State = .idle
    /// The session this proxy uses, as far as the store knows: adopted, written, or got locally.
    private(set) var current: StoredSession?
    /// `current` was got while the store was unreachable and is not in the store yet.
    private(set) var isUnsynced = false
    /// The store's generation when this proxy last read or wrote it: the base of a reconciling write.
    private(set) var lastSeenGeneration = 0
    private(set) var isSubscribed = false
    /// A write of `current` outside a refresh (after the store came back) is in flight.
    private var isReconciling = false
    /// The last refresh could not be coordinated (the store unreachable, its lock held too long).
    private var isInOutage = false

    init(settings: Settings) {
        self.settings = settings
    }

    // MARK: Refreshing

    /// The token session needs a token other than `replacing`.
    /// A request while a refresh runs joins it: `.none`.
    mutating func refreshRequested(lockValue: String, replacing: Secret<String>?, now: Instant) -> Action {
        guard self.state == .idle else { return .none }
        self.state = .locking(Attempt(lockValue: lockValue, startedAt: now, replacing: replacing))
        return .lockAndRead(lockValue: lockValue)
    }

    /// `SET NX` answered (`acquired`; `lockTimeLeft` is what remains of the lock), and the store was
    /// read right after it.
    mutating func lockAnswered(
        acquired: Bool,
        lockTimeLeft: Duration? = nil,
        stored: StoredSession?,
        wallMilliseconds: Int64
    ) -> Action {
        guard case .locking(let attempt) = self.state else { preconditionFailure("Invalid state: \(self.state)") }
        if let stored, self.shouldAdopt(stored, replacing: attempt.replacing, wallMilliseconds: wallMilliseconds) {
            self.adopt(stored)
            self.state = .idle
            return .finish(.adopted(stored), releasing: acquired ? attempt.lockValue : nil)
        }
        guard acquired else {
            self.state = .waiting(attempt)
            var delay = self.isSubscribed ? self.settings.retryWhileSubscribed : self.settings.retryWhileUnsubscribed
            // A holder that died lets go when its lock expires: be there then.
            if let lockTimeLeft, lockTimeLeft > .zero { delay = min(delay, lockTimeLeft + .milliseconds(1)) }
            return .retry(after: delay)
        }
        self.state = .fetching(attempt, base: stored?.generation ?? 0)
        // A token got while the store was away came with the newest refresh token: the session's own.
        return .fetch(refreshToken: self.isUnsynced ? nil : stored?.refreshToken)
    }

    /// The retry delay of a waiting refresh is over.
    mutating func retryDue(now: Instant) -> Action {
        guard case .waiting(let attempt) = self.state else { return .none }
        if now - attempt.startedAt >= self.settings.waitLimit {
            self.state = .idle
            return self.finishUncoordinated(.lockWaitTimedOut)
        }
        self.state = .locking(attempt)
        return .lockAndRead(lockValue: attempt.lockValue)
    }

    /// The token call ended: with the token to store (its refresh token is the one to keep), or not.
    mutating func fetchAnswered(_ token: StoredSession?) -> Action {
        guard case .fetching(let attempt, let base) = self.state else {
            preconditionFailure("Invalid state: \(self.state)")
        }
        guard var token else {
            self.state = .idle
            return .finish(.fetchFailed, releasing: attempt.lockValue)
        }
        token.generation = max(base, self.lastSeenGeneration) + 1
        self.state = .writing(attempt, token)
        return .write(token, base: base, purpose: .refresh(lockValue: attempt.lockValue))
    }

    /// The refresh's write script answered.
    mutating func writeAnswered(written: Bool, generation: Int) -> Action {
        guard case .writing(let attempt, var token) = self.state else {
            preconditionFailure("Invalid state: \(self.state)")
        }
        guard written else {
            self.state = .rereading(attempt, ours: token)
            return .read
        }
        token.generation = generation
        self.current = token
        self.isUnsynced = false
        self.isInOutage = false
        self.lastSeenGeneration = generation
        self.state = .idle
        return .finish(.refreshed(token), releasing: nil)
    }

    /// A command of the running step failed: the store cannot be reached (or answered nonsense).
    mutating func storeFailed(_ error: RedisError) -> Action {
        switch self.state {
        case .locking, .waiting:
            self.state = .idle
            return self.finishUncoordinated(.storeUnavailable(error))
        case .writing(_, let token), .rereading(_, let token):
            self.keepUnsynced(token)
            self.state = .idle
            return .finish(.refreshedUnsynced(token), releasing: nil)
        case .idle, .fetching:
            preconditionFailure("Invalid state: \(self.state)")
        }
    }

    /// A read failed: only a refresh that re-reads after a lost write race waits for it.
    mutating func readFailed(_ error: RedisError) -> Action {
        guard case .rereading = self.state else { return .none }
        return self.storeFailed(error)
    }

    // MARK: Following the store

    /// The store was read (at start, after a publication, a poll, or a reconnection).
    mutating func readAnswered(_ stored: StoredSession?, wallMilliseconds: Int64) -> Action {
        switch self.state {
        case .waiting(let attempt):
            guard let stored,
                self.shouldAdopt(stored, replacing: attempt.replacing, wallMilliseconds: wallMilliseconds)
            else { return .none }
            self.adopt(stored)
            self.state = .idle
            return .finish(.adopted(stored), releasing: nil)
        case .rereading(_, let ours):
            self.state = .idle
            if let stored, stored.isUsable(at: wallMilliseconds) {
                self.adopt(stored)
                return .finish(.adopted(stored), releasing: nil)
            }
            self.keepUnsynced(ours)
            return .finish(.refreshedUnsynced(ours), releasing: nil)
        case .locking, .fetching, .writing:
            // The refresh reads the store itself.
            return .none
        case .idle:
            return self.follow(stored, wallMilliseconds: wallMilliseconds)
        }
    }

    /// A read while no refresh runs: adopt what differs, or put this proxy's token (back) in the store.
    private mutating func follow(_ stored: StoredSession?, wallMilliseconds: Int64) -> Action {
        guard !self.isReconciling else { return .none }
        if self.isUnsynced, let current = self.current {
            // The fleet moved on while this proxy was cut off: follow it, else store what this proxy got.
            if let stored, stored.generation != self.lastSeenGeneration, stored.isUsable(at: wallMilliseconds) {
                self.adopt(stored)
                return .adopt(stored)
            }
            return self.reconcile(current)
        }
        if let stored {
            if stored.isSameToken(as: self.current) {
                // The same token under another generation (stored again after a Redis restart).
                self.current?.generation = stored.generation
                self.lastSeenGeneration = stored.generation
                return .none
            }
            guard stored.isUsable(at: wallMilliseconds) else { return .none }
            self.adopt(stored)
            return .adopt(stored)
        }
        // An empty store (Redis restarted without persistence): put the token the fleet uses back.
        if let current = self.current, current.isUsable(at: wallMilliseconds) { return self.reconcile(current) }
        return .none
    }

    private mutating func reconcile(_ current: StoredSession) -> Action {
        var token = current
        token.generation = self.lastSeenGeneration + 1
        self.isReconciling = true
        return .write(token, base: self.lastSeenGeneration, purpose: .reconcile)
    }

    /// The reconciling write answered: stored, or another proxy's token got there first.
    mutating func reconcileAnswered(written: Bool, generation: Int) -> Action {
        self.isReconciling = false
        guard written, var current = self.current else { return .read }
        current.generation = generation
        self.current = current
        self.isUnsynced = false
        self.lastSeenGeneration = generation
        return .none
    }

    /// The reconciling write failed (the store went away again): try again when it is back.
    mutating func reconcileFailed() {
        self.isReconciling = false
    }

    /// This proxy refreshed on its own while the store was unreachable (session_store_fallback = local).
    mutating func refreshedLocally(_ token: StoredSession) {
        self.keepUnsynced(token)
    }

    /// A publication: some proxy stored generation `generation`.
    func published(generation: Int) -> Action {
        generation == self.lastSeenGeneration ? .none : .read
    }

    /// The command connection is (back) up: catch up with what happened meanwhile.
    func storeConnected() -> Action { .read }

    mutating func subscriptionChanged(isUp: Bool) -> Action {
        self.isSubscribed = isUp
        return isUp ? .read : .none
    }

    /// The poll timer fired: without a subscription, reading is how publications are noticed.
    func pollDue() -> Action {
        self.isSubscribed || self.state != .idle ? .none : .read
    }

    // MARK: Helpers

    /// During a refresh the token being replaced is known bad: any other usable token in the store is
    /// better, unless it is the one this proxy's own (not yet stored) token replaced.
    private func shouldAdopt(_ stored: StoredSession, replacing: Secret<String>?, wallMilliseconds: Int64) -> Bool {
        stored.accessToken != replacing && stored.isUsable(at: wallMilliseconds)
            && !(self.isUnsynced && stored.generation == self.lastSeenGeneration)
    }

    /// The end of a refresh the store could not coordinate; the first of an outage says so.
    private mutating func finishUncoordinated(_ outcome: Outcome) -> Action {
        defer { self.isInOutage = true }
        return .finish(outcome, releasing: nil, isNewOutage: !self.isInOutage)
    }

    private mutating func adopt(_ stored: StoredSession) {
        self.isInOutage = false
        self.current = stored
        self.isUnsynced = false
        self.lastSeenGeneration = stored.generation
    }

    private mutating func keepUnsynced(_ token: StoredSession) {
        self.current = token
        self.isUnsynced = true
    }
}
