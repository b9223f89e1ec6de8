import BearerCore
import BearerHTTP
import BearerIO

/// One session's keys: where its requests come in and go, where its tokens come from and how its
/// refreshes go (docs/sessions.md, "Several APIs in one proxy"). The default session is the keys outside any
/// section, a named one its `[session NAME]`'s; a session holds no process-wide key
/// (`ProcessSettings`). With the documented defaults.
package struct SessionSettings: Sendable {
    /// `default`, or the NAME of its `[session NAME]`.
    package var name: String
    /// Its own listener: the main one for the default session (127.0.0.1:8080 unless set), none for
    /// a named one unless it says so.
    package var listen: [ListenAddressSpec]
    package var upstream: HTTPURL?
    /// Nil means the default: the upstream's host and port.
    package var injectHosts: [HostPattern]?
    /// `mount`: a named session's path prefix on the main listener (`/github`), without a trailing `/`.
    package var mount: String?
    package var accessToken: Secret<String>?
    package var revocationURL: HTTPURL?
    /// `issuer`: the authorization server whose metadata fills the endpoint keys left unset.
    package var issuer: Issuer?
    /// `resource_url`: the protected resource whose metadata (RFC 9728) names the issuer; kept as
    /// written, like `issuer`, because the metadata's `resource` must equal it.
    package var resourceURL: Issuer?
    /// The registration endpoint (RFC 7591) the metadata named, for a login without client_id.
    package var registrationURL: HTTPURL?
    /// What discovery set, and from where (nil: nothing was discovered).
    package var discovered: DiscoveredKeys?

    // The token session.
    package var refreshToken: Secret<String>?
    package var refreshTokenFile: String?
    /// Where the refresh token is kept: the desktop's keyring, the file, or whichever is there.
    package var credentialStore: CredentialStoreSetting = .auto
    /// Whether the upstream is spoken to in HTTP/2: offered by ALPN (auto), also with prior knowledge
    /// to an `http://` upstream (on), or never (off).
    package var upstreamHTTP2: UpstreamHTTP2Setting = .auto
    package var tokenURL: HTTPURL?
    package var grantType: GrantType?
    package var clientID: String?
    package var clientSecret: Secret<String>?
    package var scope: String?
    package var audience: String?
    package var username: String?
    package var password: Secret<String>?
    package var clientAuthentication: ClientAuthentication = .basic
    /// Resource indicators (RFC 8707): each a `resource` parameter of every token request.
    package var resources: [String] = []
    /// Signing keys, a service account, a TLS client certificate: their files, and what loading
    /// read in them.
    package var credentials = ClientCredentialSettings()
    package var tokenCommand: [String]?
    /// `refresh_on`'s statuses.
    package var refreshOn: [Int] = [401]
    /// `refresh_on` names `grpc-unauthenticated`: a Trailers-Only gRPC answer with `grpc-status: 16`
    /// is a refused token as its statuses are (docs/grpc.md).
    package var refreshOnGRPCUnauthenticated = true
    package var refreshSkew: Duration = .seconds(30)
    package var maxRefreshes: Int = 5
    package var refreshWindow: Duration = .seconds(30)
    package var replayBodyLimit: Int = 1 << 20
    /// How token_url is spoken to: an OAuth2 form post, or a JSON app backend (`jsonBackend`).
    package var tokenFormat: TokenFormat = .form
    package var jsonBackend = JSONBackendSettings()
    /// `bearer-proxy login`.
    package var login = LoginSettings()
    /// `session_name`: what names its session in a fleet's store (`session_store`); its name by default.
    package var sessionName: String
    /// DPoP proofs (RFC 9449) and the session's key.
    package var dpop = DPoPSettings()
    /// `allow` and `deny`: which requests may use the session's token.
    package var rules = RequestRules()

    /// The defaults of the `[session NAME]` called `name`: no listener of its own unless it says so,
    /// its fleet key its name.
    package init(name: String) {
        self.name = name
        self.listen = []
        self.sessionName = name
    }

    /// The defaults of the keys outside any section: the main listener on 127.0.0.1:8080.
    package static var defaultSession: SessionSettings {
        var settings = SessionSettings(name: Configuration.defaultSessionName)
        settings.listen = [.hostPort(host: "127.0.0.1", port: 8080)]
        return settings
    }

    /// The hosts that get the token: `inject_hosts`, or the upstream's host and port.
    package var effectiveInjectHosts: [HostPattern] {
        if let injectHosts { return injectHosts }
        guard let upstream else { return [] }
        return [.hostAndPort(upstream.host, upstream.port)]
    }

    /// `grant_type`, or its default: refresh_token when a refresh token is configured, else client_credentials.
    package var effectiveGrantType: GrantType {
        if let grantType { return grantType }
        if self.credentials.serviceAccountFile != nil { return .jwtBearer }
        let keepsOne =
            self.refreshToken != nil || self.refreshTokenFile != nil || self.credentialStore == .secretService
        return keepsOne ? .refreshToken : .clientCredentials
    }

    /// `refresh_on`'s word for a Trailers-Only gRPC UNAUTHENTICATED (`grpc-status: 16`).
    package static let grpcUnauthenticated = "grpc-unauthenticated"

    /// `refresh_on` as the config file writes it: `401,grpc-unauthenticated`.
    package var refreshOnDescription: String {
        let statuses = self.refreshOn.map(String.init)
        return (self.refreshOnGRPCUnauthenticated ? statuses + [Self.grpcUnauthenticated] : statuses)
            .joined(separator: ",")
    }

    /// Whether the session has a way to get tokens.
    package var canRefresh: Bool {
        self.tokenURL != nil || self.tokenCommand != nil
            || (self.tokenFormat == .json && self.jsonBackend.loginURL != nil)
    }
}
