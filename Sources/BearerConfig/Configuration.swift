import BearerCore
import BearerHTTP
import BearerIO

/// Everything the proxy is configured with, typed and validated, with the documented defaults.
package struct Configuration: Sendable {
    package var listen: [ListenAddressSpec] = [.hostPort(host: "127.0.0.1", port: 8080)]
    package var upstream: HTTPURL?
    /// Nil means the default: the upstream's host and port.
    package var injectHosts: [HostPattern]?
    package var otherHosts: OtherHostsPolicy = .forward
    package var accessToken: Secret<String>?
    package var workers: Int = EventLoopGroup.coreCount
    /// How the event loops do their I/O. io_uring by default: it measured faster per core than epoll
    /// at 256 and 1,000 connections (README, Benchmark), and falls back to epoll where refused.
    package var io: IOBackend = .ioUring
    /// Whether `io` was set in the configuration: a fallback the user did not ask about is not a warning.
    package var ioIsExplicit = false
    package var maxHeaderBytes: Int = 64 * 1024
    package var maxConnections: Int = 10_000
    package var upstreamConnectTimeout: Duration = .seconds(5)
    package var upstreamTimeout: Duration = .seconds(60)
    package var clientHeaderTimeout: Duration = .seconds(10)
    package var clientIdleTimeout: Duration = .seconds(60)
    /// How long a CONNECT tunnel or a WebSocket connection may carry no byte either way.
    package var tunnelIdleTimeout: Duration = .seconds(3600)
    package var logLevel: Logger.Level = .info
    package var shutdownTimeout: Duration = .seconds(10)
    package var adminListen: ListenAddressSpec?
    package var accessLog: AccessLogDestination = .off
    package var revocationURL: HTTPURL?

    // The token session.
    package var refreshToken: Secret<String>?
    package var refreshTokenFile: String?
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
    /// Signing keys, a service account, a TLS client certificate.
    package var credentials = ClientCredentialSettings()
    package var tokenCommand: [String]?
    package var refreshOn: [Int] = [401]
    package var refreshSkew: Duration = .seconds(30)
    package var maxRefreshes: Int = 5
    package var refreshWindow: Duration = .seconds(30)
    package var refreshTimeout: Duration = .seconds(30)
    package var replayBodyLimit: Int = 1 << 20
    package var replayMemoryLimit: Int = 256 << 20
    /// How token_url is spoken to: an OAuth2 form post, or a JSON app backend (`jsonBackend`).
    package var tokenFormat: TokenFormat = .form
    package var jsonBackend = JSONBackendSettings()
    /// `bearer-proxy login`.
    package var login = LoginSettings()
    /// A session shared by a fleet of proxies through Redis.
    package var sessionStore = SessionStoreSettings()
    /// TLS interception for the inject hosts, and where the local CA lives.
    package var intercept = InterceptSettings()
    /// DPoP proofs (RFC 9449) and the session's key.
    package var dpop = DPoPSettings()

    // Who may use the proxy (a local proxy holding a token is a confused deputy).
    package var acceptHosts: [HostPattern] = []
    /// Lower-cased `scheme://host[:port]`.
    package var acceptOrigins: [String] = []

    // Upstream TLS.
    package var caFile: String?
    package var tlsInsecureSkipVerify = false

    /// `mount`: a named session's path prefix on the main listener (`/github`), without a trailing `/`.
    package var mount: String?
    /// The `[session NAME]` sections, in file order; this configuration is the default session's
    /// (README, "Several APIs in one proxy"). Empty in a named session's own configuration.
    package var sessions: [SessionConfiguration] = []

    /// Where each key was set, so that rules checked after every key is read (and start-up's
    /// warnings) name the line.
    package var settingPlaces = SettingPlaces()
    /// The environment variables expanded (`${VAR}`) into keys that hold secrets: `bearer-proxy run`
    /// removes them from the wrapped program's environment (README, "Wrapping a program").
    package var secretVariables: Set<String> = []

    package init() {}

    /// The hosts that get the token: `inject_hosts`, or the upstream's host and port.
    package var effectiveInjectHosts: [HostPattern] {
        if let injectHosts { return injectHosts }
        guard let upstream else { return [] }
        return [.hostAndPort(upstream.host, upstream.port)]
    }
}

extension Configuration {
    /// `grant_type`, or its default: refresh_token when a refresh token is configured, else client_credentials.
    package var effectiveGrantType: GrantType {
        if let grantType { return grantType }
        if self.credentials.serviceAccountFile != nil { return .jwtBearer }
        return self.refreshToken != nil || self.refreshTokenFile != nil ? .refreshToken : .clientCredentials
    }

    /// Whether the session has a way to get tokens.
    package var canRefresh: Bool {
        self.tokenURL != nil || self.tokenCommand != nil
            || (self.tokenFormat == .json && self.jsonBackend.loginURL != nil)
    }
}

/// Where the per-request access log goes.
package enum AccessLogDestination: Equatable, Sendable, CustomStringConvertible {
    case off
    case standardError
    case file(String)

    package var description: String {
        switch self {
        case .off: "off"
        case .standardError: "stderr"
        case .file(let path): path
        }
    }
}

/// The OAuth2 grants (RFC 6749 §6, §4.4, §4.3; RFC 7523 §2.1).
package enum GrantType: String, Equatable, Sendable {
    case refreshToken = "refresh_token"
    case clientCredentials = "client_credentials"
    case password
    /// A JWT the proxy signs is the grant (RFC 7523 §2.1): service accounts.
    case jwtBearer = "jwt_bearer"

    /// The `grant_type` form value.
    package var formValue: String {
        self == .jwtBearer ? "urn:ietf:params:oauth:grant-type:jwt-bearer" : self.rawValue
    }
}

/// How the client authenticates to the token endpoint (RFC 6749 §2.3.1, RFC 7523 §2.2, RFC 8705 §2).
package enum ClientAuthentication: String, Equatable, Sendable {
    /// HTTP Basic with the form-encoded client id and secret (client_secret_basic).
    case basic
    /// client_id and client_secret as form fields (client_secret_post).
    case post
    /// A JWT signed with client_key_file (RFC 7523 §2.2, OIDC Core §9).
    case privateKeyJWT = "private_key_jwt"
    /// The TLS client certificate authenticates; only client_id is sent (RFC 8705 §2).
    case tlsClientAuth = "tls_client_auth"
}

package enum OtherHostsPolicy: String, Equatable, Sendable {
    /// Forward absolute-form requests to other hosts, without the token.
    case forward
    /// Answer them 403.
    case deny
}
