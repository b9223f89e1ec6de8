import BearerConfig
import BearerCore
import BearerCrypto
import BearerHTTP
import BearerSession
import Synchronization

/// One session as the running proxy holds it: its name, its token session, what its requests follow
/// (refresh_on, replay_body_limit), and its place in every loop's token caches (docs/sessions.md, "Several APIs
/// in one proxy").
///
/// Each is independent of the others: its own token and generation, its own coalesced refresh and
/// storm guard, its own refresh_token_file and fleet key. A class, immutable: routes point at it,
/// and every request of a session reads it.
package final class NamedSession: Sendable, Equatable, CustomStringConvertible {
    package let name: String
    /// Its place in `ProxyRuntime.sessions`, and in each loop's token caches.
    let index: Int
    package let tokens: TokenSession
    /// The session's own settings as it started. SIGHUP's changes reach its token session
    /// (`TokenSupply`), not this copy.
    package let settings: SessionSettings
    /// Makes its token supply again when SIGHUP re-reads the config (nil: a session made by a test).
    let supplies: TokenSupplyMaker?
    /// Statuses that mean its token was refused (`refresh_on`).
    let refreshOn: Set<Int>
    /// `refresh_on` names `grpc-unauthenticated`.
    let refreshOnGRPCUnauthenticated: Bool
    let replayBodyLimit: Int
    /// With dpop on: the proofs its requests with a DPoP-bound token carry.
    let dpop: DPoPProver?
    /// The name as the access log writes it.
    let logName: [UInt8]
    /// `allow` and `deny`; nil when neither is set (no request is looked at).
    let rules: RequestRules?
    /// Requests its rules refused, by rule (`bearer_proxy_requests_refused_total`): few, and only on
    /// a refusal, so a lock is no cost on the data path.
    let refusals = Mutex<[String: Int]>([:])

    init(
        name: String,
        index: Int,
        tokens: TokenSession,
        settings: SessionSettings,
        dpop: DPoPProver? = nil,
        supplies: TokenSupplyMaker? = nil
    ) {
        self.name = name
        self.index = index
        self.tokens = tokens
        self.settings = settings
        self.supplies = supplies
        self.refreshOn = Set(settings.refreshOn)
        self.refreshOnGRPCUnauthenticated = settings.refreshOnGRPCUnauthenticated
        self.replayBodyLimit = settings.replayBodyLimit
        self.dpop = dpop
        self.logName = Array(name.utf8)
        self.rules = settings.rules.isEmpty ? nil : settings.rules
    }

    /// The same session: names are unique among a proxy's sessions, and so are places.
    package static func == (lhs: NamedSession, rhs: NamedSession) -> Bool {
        lhs === rhs || (lhs.index == rhs.index && lhs.name == rhs.name)
    }

    package var description: String { "session \(self.name)" }

    /// Whether `head` says the upstream refused the token (`refresh_on`): a status in it, or a
    /// Trailers-Only gRPC UNAUTHENTICATED when it names `grpc-unauthenticated`.
    func refusesToken(_ head: ResponseHead) -> Bool {
        self.refreshOn.contains(head.status) || (self.refreshOnGRPCUnauthenticated && head.isGRPCUnauthenticated)
    }
}

/// A request parked in a session's token session: whom to tell when its client goes away.
struct ParkedRequest: Equatable {
    let session: NamedSession
    let ticket: Ticket
}

/// A token a session's upstream answered with a status not in refresh_on: the storm guard's "it worked".
/// Its generation, not the token: a copy of the token is a retain and a release of its line.
struct AcceptedToken: Equatable {
    let session: NamedSession
    let generation: Int
}
