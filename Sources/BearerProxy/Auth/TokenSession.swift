import BearerCore
import Synchronization

/// The proxy's token: what each injected request carries, with the generation it belongs to.
///
/// Every request reads `(token, generation)` once, so a later 401 can be judged against the
/// generation it was sent with. Shared by all loops behind a lock.
package final class TokenSession: Sendable {
    private struct State {
        var authorization: [UInt8]?
        var generation: Int
    }

    private let state: Mutex<State>

    package init(accessToken: Secret<String>?) {
        self.state = Mutex(State(authorization: accessToken.map(authorizationLine), generation: 1))
    }

    /// The `Authorization` line to send and its generation; nil when there is no token at all.
    package func currentAuthorization() -> (line: [UInt8]?, generation: Int) {
        self.state.withLock { ($0.authorization, $0.generation) }
    }
}

/// `Authorization: Bearer <token>\r\n`, ready to copy into a request head.
func authorizationLine(_ token: Secret<String>) -> [UInt8] {
    Array("Authorization: Bearer ".utf8) + Array(token.reveal().utf8) + [0x0D, 0x0A]
}
