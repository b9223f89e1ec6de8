import BearerCore
import BearerIO
import Synchronization

/// What `bearer-proxy --demo` runs in its own process: a mock OAuth2 token server issuing short-lived
/// tokens, and a mock API that accepts only live ones and revokes them all now and then, so both the
/// proactive refresh and the 401 → refresh → replay path show up in the proxy's log.
///
/// `--demo json` puts the token server's JSON endpoints in front instead (login with a username and
/// password, refresh with a rotating refresh token, camelCase answers inside `{"data": …}`); every
/// other revocation also forgets the refresh tokens, so the log shows a refused refresh followed by
/// one login.
package final class DemoEnvironment: Sendable {
    /// Which kind of token server the demo shows.
    package enum Backend: String, Sendable {
        case oauth2
        case json
    }

    package let backend: Backend
    package let authority = MockTokenAuthority()
    package let tokenServer: MockTokenServer
    package let upstream: MockUpstream
    private let revocations = Atomic<Int>(0)

    package static let clientID = "demo-client"
    package static let clientSecret = "demo-secret"
    package static let tokenLifetime = 10
    package static let revokeEvery: Duration = .seconds(25)
    /// The JSON demo's user.
    package static let username = "demo"
    package static let password = "demo-password"

    package init(group: EventLoopGroup, backend: Backend = .oauth2) throws(IOError) {
        self.backend = backend
        var settings = MockTokenServer.Settings()
        settings.expiresIn = Self.tokenLifetime
        settings.clientID = Self.clientID
        settings.clientSecret = Self.clientSecret
        settings.users = [Self.username: Self.password]
        settings.rotatesRefreshTokens = true
        settings.json.isEnveloped = true
        self.tokenServer = MockTokenServer(group: group, authority: self.authority, settings: settings, additions: nil)
        self.upstream = MockUpstream(group: group, authority: self.authority, recordsRequests: false)
        try self.tokenServer.start()
        try self.upstream.start()
        self.scheduleRevocation(on: group.loops[0])
    }

    private func scheduleRevocation(on loop: EventLoop) {
        loop.execute {
            loop.schedule(after: Self.revokeEvery) {
                self.authority.revokeAll()
                let count = self.revocations.add(1, ordering: .relaxed).newValue
                if self.backend == .json && count % 2 == 0 { self.tokenServer.update { $0.refreshTokens.removeAll() } }
                self.scheduleRevocation(on: loop)
            }
        }
    }

    package func stop() {
        self.upstream.stop()
        self.tokenServer.stop()
    }
}
