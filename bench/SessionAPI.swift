import BearerDemo
import BearerIO

/// One API of the bench with a token endpoint of its own: what one session of the proxy under test
/// talks to (`--sessions`). Each has its own authority, so a token of one is refused by every other.
struct SessionAPI {
    /// `default` for the keys outside any section, else `s2` … `sN`.
    let name: String
    let authority: MockTokenAuthority
    let tokenServer: MockTokenServer
    let upstream: MockUpstream

    /// Where the proxy takes requests for it on the main listener (nothing: the default session).
    var mount: String { self.name == "default" ? "" : "/\(self.name)" }

    /// A started API named `name`, whose tokens only its own upstream accepts (and the static token).
    static func start(name: String, group: EventLoopGroup, staticToken: String) throws -> SessionAPI {
        let authority = MockTokenAuthority(prefix: "\(name)-access-")
        var settings = MockTokenServer.Settings()
        settings.clientID = Bench.clientID
        settings.clientSecret = Bench.clientSecret
        let tokenServer = MockTokenServer(group: group, authority: authority, settings: settings)
        let upstream = MockUpstream(
            group: group,
            acceptedTokens: [staticToken],
            authority: authority,
            recordsRequests: false,
            countsRequestIDs: true
        )
        try tokenServer.start()
        try upstream.start()
        return SessionAPI(name: name, authority: authority, tokenServer: tokenServer, upstream: upstream)
    }

    func stop() {
        self.upstream.stop()
        self.tokenServer.stop()
    }

    /// Its `[session NAME]` section in the proxy's config.
    var section: String {
        """
        [session \(self.name)]
        mount = \(self.mount)
        upstream = \(self.upstream.baseURL)
        token_url = \(self.tokenServer.url)
        grant_type = client_credentials
        client_id = \(Bench.clientID)
        client_secret = \(Bench.clientSecret)
        """
    }
}

/// One session's figures in a scenario run: its clients' requests and 401s, its token calls and
/// its API's expiry events.
struct SessionResult: Equatable {
    var name: String
    var requests: Int
    var client401s: Int
    var tokenCalls: Int
    var expiryEvents: Int

    var refreshesPerExpiry: Double? {
        self.expiryEvents > 0 ? Double(self.tokenCalls) / Double(self.expiryEvents) : nil
    }
}
