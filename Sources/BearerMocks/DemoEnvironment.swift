import BearerCore
import BearerIO

/// The servers `bearer-proxy --demo` runs in its own process: a mock API that accepts one token.
package final class DemoEnvironment: Sendable {
    package let upstream: MockUpstream
    package static let token = "demo-token-1"

    package init(group: EventLoopGroup) throws(IOError) {
        self.upstream = MockUpstream(group: group, acceptedTokens: [Self.token], recordsRequests: false)
        try self.upstream.start()
    }

    package func stop() {
        self.upstream.stop()
    }
}
