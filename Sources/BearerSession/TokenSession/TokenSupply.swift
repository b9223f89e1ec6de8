import BearerConfig
import BearerCore

/// Where a session's tokens come from, and how its refreshes go: what SIGHUP's re-read of the config
/// may change while the proxy serves (docs/operations.md, "Signals").
///
/// The rest of a session (its routes, refresh_on, refresh_timeout, its listener, the fleet's store,
/// DPoP) lives as long as the process; a change to it waits for a restart.
package struct TokenSupply: Sendable {
    /// token_url (OAuth2 or a JSON backend) or token_command; nil: the session cannot refresh.
    package var source: TokenSource?
    /// The refresh token, in memory and in refresh_token_file.
    package var store: RefreshTokenStore?
    /// Where admin POST /logout revokes the refresh token; nil: nowhere.
    var revocation: TokenRevocation?
    /// access_token: the session's first token, and a new one when the config brings a changed one.
    var configuredToken: Secret<String>?
    var refreshSkew: Duration
    /// The storm guard: max_refreshes per refresh_window.
    var maximumSuspectRefreshes: Int
    var refreshWindow: Duration

    package init(
        settings: SessionSettings,
        source: TokenSource?,
        store: RefreshTokenStore?,
        revocation: TokenRevocation? = nil
    ) {
        self.source = source
        self.store = store
        self.revocation = revocation
        self.configuredToken = settings.accessToken
        self.refreshSkew = settings.refreshSkew
        self.maximumSuspectRefreshes = settings.maxRefreshes
        self.refreshWindow = settings.refreshWindow
    }

}
