import BearerCore
import BearerHTTP
import BearerIO
import Glibc

/// Every key the config file accepts: how its value is parsed, what it sets, how `--check` shows it.
///
/// One table, so the parser, `--check` and the unknown-key error cannot disagree about what exists,
/// and the one place a key's name is spelled: each key is a constant here (`ConfigurationKey.tokenURL`),
/// and whatever names a key (a rule's finding, a warning, a flag's setting, SIGHUP's list of keys that
/// wait for a restart) names the constant. `Configuration.keys` lists them in `--check`'s order.
package struct ConfigurationKey: Equatable, Sendable, CustomStringConvertible {
    package let name: String
    let isSecret: Bool
    /// Whether `--check` masks the value in whole or in part (a secret; a URL's password; a JSON
    /// template's literals): the `${VAR}`s expanded into it are kept out of `bearer-proxy run`'s child.
    let carriesSecrets: Bool
    /// Whether the key configures the process or one session.
    let scope: Scope
    /// What the key sets and shows: the process's settings, or one session's.
    private let setting: Setting

    /// Where a key may be set (docs/sessions.md, "Several APIs in one proxy").
    ///
    /// A process-wide key configures the one process and is set outside any section; its value lives
    /// once, in `ProcessSettings`. A session key configures one session: the default session outside
    /// any section, a named one under its `[session NAME]`; each session holds its own value in its
    /// `SessionSettings`. A key's scope follows from the settings its entry reads and writes
    /// (`process` or `session`), so a session key cannot be read from the process, nor the reverse.
    enum Scope: Equatable, Sendable {
        /// Outside any section only: a line of it in a section is an error saying the key is process-wide.
        case process
        /// Anywhere: the default session's outside any section, a named session's in its section.
        case session
        /// In a `[session NAME]` section only (`mount`).
        case namedSession
    }

    /// The effective value as `--check` prints it (nil: not set); secrets print as `<redacted>`.
    typealias Show<Settings> = @Sendable (Settings) -> String?
    /// Sets the value; returns nil on success, or what was expected.
    typealias Apply<Settings> = @Sendable (String, inout Settings) -> String?

    /// What a key sets and shows.
    enum Setting: Sendable {
        case process(show: Show<ProcessSettings>, apply: Apply<ProcessSettings>)
        case session(show: Show<SessionSettings>, apply: Apply<SessionSettings>)
    }

    /// The key `name`, whose entry sets `Settings`: a process-wide key for `ProcessSettings`, a session
    /// key for `SessionSettings` (`namedSessionsOnly`: set in a `[session NAME]` section only).
    init<Settings: KeyedSettings>(
        _ name: String,
        of settings: Settings.Type,
        namedSessionsOnly: Bool = false,
        secret: Bool = false,
        carriesSecrets: Bool? = nil,
        show: @escaping Show<Settings>,
        _ apply: @escaping Apply<Settings>
    ) {
        self.name = name
        self.isSecret = secret
        self.carriesSecrets = carriesSecrets ?? secret
        self.setting = Settings.setting(show, apply)
        self.scope =
            switch self.setting {
            case .process: .process
            case .session: namedSessionsOnly ? .namedSession : .session
            }
    }

    /// The key's name: what a message that names the key interpolates.
    package var description: String { self.name }

    /// The same key: names are unique in the table.
    package static func == (lhs: ConfigurationKey, rhs: ConfigurationKey) -> Bool {
        lhs.name == rhs.name
    }

    /// The effective value as `--check` prints it: the process's for a process-wide key, `session`'s
    /// for a session key.
    func show(_ process: ProcessSettings, _ session: SessionSettings) -> String? {
        switch self.setting {
        case .process(let show, _): show(process)
        case .session(let show, _): show(session)
        }
    }

    /// Applies `value` to the process's settings or to `session`'s; nil, or what was expected.
    func apply(_ value: String, to process: inout ProcessSettings, _ session: inout SessionSettings) -> String? {
        switch self.setting {
        case .process(_, let apply): apply(value, &process)
        case .session(_, let apply): apply(value, &session)
        }
    }
}

/// The settings a key's entry reads and writes, which make its scope: what the table's helpers
/// (`textKey`, `durationKey`, …) are written once for.
protocol KeyedSettings: Sendable {
    static func setting(
        _ show: @escaping ConfigurationKey.Show<Self>,
        _ apply: @escaping ConfigurationKey.Apply<Self>
    ) -> ConfigurationKey.Setting
}

extension ProcessSettings: KeyedSettings {
    static func setting(
        _ show: @escaping ConfigurationKey.Show<Self>,
        _ apply: @escaping ConfigurationKey.Apply<Self>
    )
        -> ConfigurationKey.Setting
    { .process(show: show, apply: apply) }
}

extension SessionSettings: KeyedSettings {
    static func setting(
        _ show: @escaping ConfigurationKey.Show<Self>,
        _ apply: @escaping ConfigurationKey.Apply<Self>
    )
        -> ConfigurationKey.Setting
    { .session(show: show, apply: apply) }
}

/// The table's name inside this module, for messages that name keys: `"needs \(Key.tokenURL)"`.
typealias Key = ConfigurationKey

extension Configuration {
    /// Every key the config file accepts, in the order `--check` prints them.
    static let keys: [ConfigurationKey] = [
        // The proxy, and the session's tokens.
        .listen, .upstream, .injectHosts, .otherHosts, .accessToken, .io, .workers, .maxHeaderBytes,
        .maxConnections, .upstreamConnectTimeout, .upstreamTimeout, .clientHeaderTimeout, .clientIdleTimeout,
        .tunnelIdleTimeout, .logLevel, .shutdownTimeout, .adminListen, .accessLog, .revocationURL, .refreshToken,
        .refreshTokenFile, .credentialStore, .tokenURL, .grantType, .clientID, .clientSecret, .scope, .audience,
        .username,
        .password, .clientAuth, .tokenCommand, .refreshOn, .refreshSkew, .maxRefreshes, .refreshWindow,
        .refreshTimeout, .replayBodyLimit, .replayMemoryLimit, .acceptHosts, .acceptOrigins, .caFile,
        .tlsInsecureSkipVerify, .http2, .maxConcurrentStreams, .upstreamHTTP2,
        // JSON backends and `bearer-proxy login`.
        .tokenFormat, .tokenBody, .loginURL, .loginBody, .logoutURL, .tokenField, .refreshTokenField,
        .expiresField, .authorizationURL, .deviceAuthorizationURL, .redirectPort, .loginTimeout,
        // A fleet's shared session.
        .sessionStore, .sessionName, .sessionStoreFallback,
        // TLS interception.
        .tlsIntercept, .caDir,
        // Service accounts and locked-down APIs.
        .clientKeyFile, .clientKeyID, .assertionIssuer, .assertionSubject, .serviceAccountFile, .tlsClientCert,
        .tlsClientKey, .resource,
        // DPoP.
        .dpop, .dpopKeyFile,
        // What a session's token may be used for.
        .allow, .deny, .auditLog,
        // Discovery (RFC 8414, RFC 9728).
        .issuer, .resourceURL,
        // Named sessions only.
        .mount,
    ]

    /// The key called `name`, if there is one.
    static func key(named name: String) -> ConfigurationKey? {
        Self.keys.first { $0.name == name }
    }
}

extension ConfigurationKey {
    package static let listen = ConfigurationKey(
        "listen",
        of: SessionSettings.self,
        show: { $0.listen.isEmpty ? nil : $0.listen.map(\.description).joined(separator: ", ") }
    ) { value, session in
        var addresses: [ListenAddressSpec] = []
        for item in ValueParsers.list(value) {
            do throws(AddressParseError) {
                addresses.append(try ListenAddressSpec.parse(item))
            } catch {
                return error.description
            }
        }
        guard !addresses.isEmpty else { return "expected HOST:PORT, [IPv6]:PORT or unix:/path" }
        session.listen = addresses
        return nil
    }

    package static let upstream = urlKey("upstream", example: "https://api.example.com/v2", \SessionSettings.upstream)

    package static let injectHosts = ConfigurationKey(
        "inject_hosts",
        of: SessionSettings.self,
        show: { $0.effectiveInjectHosts.map(\.description).joined(separator: ", ") }
    ) { value, session in
        let (patterns, mistake) = ValueParsers.hostPatterns(value)
        if let mistake { return mistake }
        // Most likely a ${VAR} that expanded to nothing: a session that injects into no host
        // would send every request without its token, and say nothing.
        guard !patterns.isEmpty else {
            return
                "no host in '\(value)' (expected host, host:port or *.domain; leave the key out for the upstream's host)"
        }
        session.injectHosts = patterns
        return nil
    }

    package static let otherHosts = choiceKey("other_hosts", \ProcessSettings.otherHosts, expected: "forward or deny")

    package static let accessToken = ConfigurationKey(
        "access_token",
        of: SessionSettings.self,
        secret: true,
        show: { $0.accessToken.map { "\($0)" } }
    ) { value, session in
        guard !value.isEmpty, !value.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            return "expected a token without spaces (the value is not shown)"
        }
        session.accessToken = Secret(value)
        return nil
    }

    /// Whether it was set is provenance (`Configuration.ioIsExplicit`), not a setting.
    package static let io = choiceKey("io", \ProcessSettings.io, expected: "epoll or io_uring")

    package static let workers = ConfigurationKey("workers", of: ProcessSettings.self, show: { "\($0.workers)" }) {
        value,
        process in
        guard let count = Int(value), (1...256).contains(count) else {
            return "expected a number from 1 to 256, got '\(value)'"
        }
        process.workers = count
        return nil
    }

    package static let maxHeaderBytes = sizeKey("max_header_bytes", minimum: 1024, \ProcessSettings.maxHeaderBytes)

    package static let maxConnections = countKey("max_connections", \ProcessSettings.maxConnections)

    package static let upstreamConnectTimeout = durationKey(
        "upstream_connect_timeout",
        \ProcessSettings.upstreamConnectTimeout
    )
    package static let upstreamTimeout = durationKey("upstream_timeout", \ProcessSettings.upstreamTimeout)
    package static let clientHeaderTimeout = durationKey("client_header_timeout", \ProcessSettings.clientHeaderTimeout)
    package static let clientIdleTimeout = durationKey("client_idle_timeout", \ProcessSettings.clientIdleTimeout)
    package static let tunnelIdleTimeout = durationKey("tunnel_idle_timeout", \ProcessSettings.tunnelIdleTimeout)

    package static let logLevel = ConfigurationKey("log_level", of: ProcessSettings.self, show: { $0.logLevel.name }) {
        value,
        process in
        guard let level = Logger.Level(name: value) else {
            return "expected error, warn, info or debug, got '\(value)'"
        }
        process.logLevel = level
        return nil
    }

    package static let shutdownTimeout = durationKey(
        "shutdown_timeout",
        allowZero: true,
        \ProcessSettings.shutdownTimeout
    )

    package static let adminListen = ConfigurationKey(
        "admin_listen",
        of: ProcessSettings.self,
        show: { $0.adminListen?.description ?? "off" }
    ) { value, process in
        if value == "off" {
            process.adminListen = nil
            return nil
        }
        do throws(AddressParseError) {
            process.adminListen = try ListenAddressSpec.parse(value)
            return nil
        } catch {
            return error.description
        }
    }

    package static let accessLog = ConfigurationKey(
        "access_log",
        of: ProcessSettings.self,
        show: { $0.accessLog.description }
    ) {
        value,
        process in
        guard let destination = AccessLogDestination(parsing: value) else {
            return "expected off, stderr or a file path"
        }
        process.accessLog = destination
        return nil
    }

    package static let revocationURL = urlKey(
        "revocation_url",
        example: "https://auth.example.com/oauth/revoke",
        \SessionSettings.revocationURL
    )
    package static let refreshToken = secretKey("refresh_token", \SessionSettings.refreshToken)

    package static let refreshTokenFile = ConfigurationKey(
        "refresh_token_file",
        of: SessionSettings.self,
        show: { $0.refreshTokenFile }
    ) {
        value,
        session in
        guard !value.isEmpty else { return "expected a file path" }
        session.refreshTokenFile = ValueParsers.expandingHome(value)
        return nil
    }

    package static let credentialStore = choiceKey(
        "credential_store",
        \SessionSettings.credentialStore,
        expected: "auto, secret-service or file"
    )

    package static let tokenURL = urlKey(
        "token_url",
        example: "https://auth.example.com/oauth/token",
        \SessionSettings.tokenURL
    )

    package static let grantType = ConfigurationKey(
        "grant_type",
        of: SessionSettings.self,
        show: { $0.effectiveGrantType.rawValue }
    ) {
        value,
        session in
        guard let grant = GrantType(rawValue: value) else {
            return "expected refresh_token, client_credentials, password or jwt_bearer, got '\(value)'"
        }
        session.grantType = grant
        return nil
    }

    package static let clientID = textKey("client_id", \SessionSettings.clientID)
    package static let clientSecret = secretKey("client_secret", \SessionSettings.clientSecret)
    package static let scope = textKey("scope", \SessionSettings.scope)
    package static let audience = textKey("audience", \SessionSettings.audience)
    package static let username = textKey("username", \SessionSettings.username)
    package static let password = secretKey("password", \SessionSettings.password)

    package static let clientAuth = choiceKey(
        "client_auth",
        \SessionSettings.clientAuthentication,
        expected: "basic, post, private_key_jwt or tls_client_auth"
    )

    package static let tokenCommand = ConfigurationKey(
        "token_command",
        of: SessionSettings.self,
        show: { $0.tokenCommand.map { $0.joined(separator: " ") } }
    ) { value, session in
        guard let argv = splitCommandLine(value), !argv.isEmpty else {
            return "expected a command and its arguments (quotes must be closed)"
        }
        session.tokenCommand = argv
        return nil
    }

    package static let refreshOn = ConfigurationKey(
        "refresh_on",
        of: SessionSettings.self,
        show: { $0.refreshOnDescription }
    ) { value, session in
        let items = ValueParsers.list(value)
        let grpc = items.contains(SessionSettings.grpcUnauthenticated)
        let statuses = items.filter { $0 != SessionSettings.grpcUnauthenticated }.map { Int($0) }
        guard !items.isEmpty, statuses.allSatisfy({ $0 != nil && (400...599).contains($0!) }) else {
            return "expected a comma list of 4xx/5xx statuses and grpc-unauthenticated, e.g. 401,403; got '\(value)'"
        }
        session.refreshOn = statuses.map { $0! }
        session.refreshOnGRPCUnauthenticated = grpc
        return nil
    }

    package static let refreshSkew = durationKey("refresh_skew", allowZero: true, \SessionSettings.refreshSkew)

    package static let maxRefreshes = countKey("max_refreshes", \SessionSettings.maxRefreshes)

    package static let refreshWindow = durationKey("refresh_window", \SessionSettings.refreshWindow)
    package static let refreshTimeout = durationKey("refresh_timeout", \ProcessSettings.refreshTimeout)
    package static let replayBodyLimit = sizeKey("replay_body_limit", \SessionSettings.replayBodyLimit)
    package static let replayMemoryLimit = sizeKey("replay_memory_limit", \ProcessSettings.replayMemoryLimit)

    package static let acceptHosts = ConfigurationKey(
        "accept_hosts",
        of: ProcessSettings.self,
        show: { process in
            (["localhost", "127.0.0.1", "[::1]"].map { "\($0):<listen port>" }
                + process.acceptHosts.map(\.description)).joined(separator: ", ")
        }
    ) { value, process in
        let (patterns, mistake) = ValueParsers.hostPatterns(value)
        if let mistake { return mistake }
        process.acceptHosts = patterns
        return nil
    }

    package static let acceptOrigins = ConfigurationKey(
        "accept_origins",
        of: ProcessSettings.self,
        show: { $0.acceptOrigins.isEmpty ? "(none)" : $0.acceptOrigins.joined(separator: ", ") }
    ) { value, process in
        var origins: [String] = []
        for item in ValueParsers.list(value) {
            let lower = item.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), !lower.dropFirst(8).contains("/")
            else {
                return "invalid origin '\(item)' (expected scheme://host[:port], e.g. http://localhost:3000)"
            }
            origins.append(lower)
        }
        process.acceptOrigins = origins
        return nil
    }

    package static let caFile = ConfigurationKey(
        "ca_file",
        of: ProcessSettings.self,
        show: { $0.caFile ?? "(system trust store)" }
    ) {
        value,
        process in
        guard !value.isEmpty else { return "expected a path to a PEM CA bundle" }
        process.caFile = ValueParsers.expandingHome(value)
        return nil
    }

    package static let tlsInsecureSkipVerify = ConfigurationKey(
        "tls_insecure_skip_verify",
        of: ProcessSettings.self,
        show: { "\($0.tlsInsecureSkipVerify)" }
    ) { value, process in
        guard let flag = ValueParsers.bool(value) else { return "expected true or false, got '\(value)'" }
        process.tlsInsecureSkipVerify = flag
        return nil
    }

    package static let http2 = switchKey("http2", \ProcessSettings.http2)
    package static let maxConcurrentStreams = countKey("max_concurrent_streams", \ProcessSettings.maxConcurrentStreams)
    package static let upstreamHTTP2 = choiceKey(
        "upstream_http2",
        \SessionSettings.upstreamHTTP2,
        expected: "auto, on or off"
    )
}

/// The shapes of value most keys have, written once for either settings (the key path's root
/// makes the key process-wide or a session's).
extension ConfigurationKey {
    /// What a value should have been, said after the key's place: `invalid duration 'soon' (expected …)`.
    struct Expected: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// A key whose value `parse` reads (or says what it expected) and `show` prints.
    static func valueKey<Settings: KeyedSettings, Value>(
        _ name: String,
        _ path: WritableKeyPath<Settings, Value> & Sendable,
        secret: Bool = false,
        show: @escaping @Sendable (Value) -> String?,
        parse: @escaping @Sendable (String) -> Result<Value, Expected>
    ) -> ConfigurationKey {
        ConfigurationKey(name, of: Settings.self, secret: secret, show: { show($0[keyPath: path]) }) {
            value,
            settings in
            switch parse(value) {
            case .success(let parsed):
                settings[keyPath: path] = parsed
                return nil
            case .failure(let expected):
                return expected.message
            }
        }
    }

    static func textKey<Settings: KeyedSettings>(
        _ name: String,
        _ path: WritableKeyPath<Settings, String?> & Sendable
    ) -> ConfigurationKey {
        valueKey(name, path, show: { $0 }) { value in
            value.isEmpty ? .failure(Expected("expected a value")) : .success(value)
        }
    }

    static func secretKey<Settings: KeyedSettings>(
        _ name: String,
        _ path: WritableKeyPath<Settings, Secret<String>?> & Sendable
    ) -> ConfigurationKey {
        valueKey(name, path, secret: true, show: { $0.map { "\($0)" } }) { value in
            guard !value.isEmpty, !value.contains(where: { $0.isNewline }) else {
                return .failure(Expected("expected a single-line value (the value is not shown)"))
            }
            return .success(Secret(value))
        }
    }

    static func durationKey<Settings: KeyedSettings>(
        _ name: String,
        allowZero: Bool = false,
        _ path: WritableKeyPath<Settings, Duration> & Sendable
    ) -> ConfigurationKey {
        valueKey(name, path, show: ValueParsers.format) { value in
            guard let duration = ValueParsers.duration(value), duration > .zero || (allowZero && duration == .zero)
            else {
                return .failure(Expected("invalid duration '\(value)' (expected e.g. 500ms, 30s, 5m)"))
            }
            return .success(duration)
        }
    }

    static func sizeKey<Settings: KeyedSettings>(
        _ name: String,
        minimum: Int = 0,
        _ path: WritableKeyPath<Settings, Int> & Sendable
    ) -> ConfigurationKey {
        valueKey(name, path, show: { ValueParsers.format(size: $0) }) { value in
            guard let size = ValueParsers.size(value), size >= minimum else {
                let least = minimum > 0 ? ", at least \(minimum) bytes" : ""
                return .failure(Expected("invalid size '\(value)' (expected e.g. 64KiB, 1MiB\(least))"))
            }
            return .success(size)
        }
    }

    /// A positive number.
    static func countKey<Settings: KeyedSettings>(
        _ name: String,
        _ path: WritableKeyPath<Settings, Int> & Sendable
    ) -> ConfigurationKey {
        valueKey(name, path, show: { "\($0)" }) { value in
            guard let count = Int(value), count >= 1 else {
                return .failure(Expected("expected a positive number, got '\(value)'"))
            }
            return .success(count)
        }
    }

    /// A switch: on or off (also true/false, yes/no, 1/0), shown as on or off.
    static func switchKey<Settings: KeyedSettings>(
        _ name: String,
        _ path: WritableKeyPath<Settings, Bool> & Sendable
    ) -> ConfigurationKey {
        valueKey(name, path, show: { $0 ? "on" : "off" }) { value in
            ValueParsers.bool(value).map { .success($0) } ?? .failure(Expected("expected on or off, got '\(value)'"))
        }
    }

    /// One of the values of `Choice`, by their names: `expected` lists them.
    static func choiceKey<Settings: KeyedSettings, Choice: RawRepresentable<String> & Sendable>(
        _ name: String,
        _ path: WritableKeyPath<Settings, Choice> & Sendable,
        expected: String
    ) -> ConfigurationKey {
        valueKey(name, path, show: \.rawValue) { value in
            Choice(rawValue: value).map { .success($0) } ?? .failure(Expected("expected \(expected), got '\(value)'"))
        }
    }

    static func urlKey<Settings: KeyedSettings>(
        _ name: String,
        example: String,
        _ path: WritableKeyPath<Settings, HTTPURL?> & Sendable
    ) -> ConfigurationKey {
        valueKey(name, path, show: { $0?.description }) { value in
            HTTPURL.parse(value).map { $0 }.mapError { error in
                Expected("'\(HTTPURL.quotable(value))' \(error.reason) (expected e.g. \(example))")
            }
        }
    }
}
