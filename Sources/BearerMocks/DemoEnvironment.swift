import BearerCore
import BearerIO
import Synchronization

/// What `bearer-proxy --demo` runs in its own process: a mock OAuth2 token server issuing short-lived
/// tokens, and a mock API that accepts only live ones and revokes them all now and then, so both the
/// proactive refresh and the 401 → refresh → replay path show up in the proxy's log.
package final class DemoEnvironment: Sendable {
    package let authority = MockTokenAuthority()
    package let tokenServer: MockTokenServer
    package let upstream: MockUpstream
    private let revocations = Atomic<Int>(0)

    package static let clientID = "demo-client"
    package static let clientSecret = "demo-secret"
    package static let tokenLifetime = 10
    package static let revokeEvery: Duration = .seconds(25)

    package init(group: EventLoopGroup) throws(IOError) {
        var settings = MockTokenServer.Settings()
        settings.expiresIn = Self.tokenLifetime
        settings.clientID = Self.clientID
        settings.clientSecret = Self.clientSecret
        self.tokenServer = MockTokenServer(group: group, authority: self.authority, settings: settings)
        self.upstream = MockUpstream(group: group, authority: self.authority, recordsRequests: false)
        try self.tokenServer.start()
        try self.upstream.start()
        self.scheduleRevocation(on: group.loops[0])
    }

    private func scheduleRevocation(on loop: EventLoop) {
        loop.execute {
            loop.schedule(after: Self.revokeEvery) {
                self.authority.revokeAll()
                self.revocations.add(1, ordering: .relaxed)
                self.scheduleRevocation(on: loop)
            }
        }
    }

    package func stop() {
        self.upstream.stop()
        self.tokenServer.stop()
    }
}
