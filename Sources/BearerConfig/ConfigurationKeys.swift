import BearerCore
import BearerHTTP
import BearerIO
import Glibc

/// Every key the config file accepts: how its value is parsed, what it sets, how `--check` shows it.
///
/// One table, so the parser, `--check` and the unknown-key error cannot disagree about what exists.
struct ConfigurationKey: Sendable {
    let name: String
    let isSecret: Bool
    /// Whether `--check` masks the value in whole or in part (a secret; a URL's password; a JSON
    /// template's literals): the `${VAR}`s expanded into it are kept out of `bearer-proxy run`'s child.
    let carriesSecrets: Bool
    /// The effective value as `--check` prints it (nil: not set). Secrets print as `<redacted>`.
    let show: @Sendable (Configuration) -> String?
    let apply: @Sendable (String, inout Configuration) -> String?
    /// Whether the key configures the process or one session.
    let scope: Scope

    /// Where a key may be set (README, "Several APIs in one proxy").
    ///
    /// A process-wide key configures the one process and is set outside any section. A session key
    /// configures one session: the default session outside any section, a named one under its
    /// `[session NAME]`. A key becomes a session key by giving its entry `scope: .session`; then each
    /// session holds its own value, because each session is a `Configuration` of its own: a named
    /// session's starts from the defaults, takes the file's process-wide lines, then its section's
    /// (`Configuration.build(from:into:)`). Whatever uses a session key at run time must read it from
    /// the session's configuration (`SessionConfiguration.configuration`), not from the root.
    enum Scope: Equatable, Sendable {
        /// Outside any section only: a line of it in a section is an error saying the key is process-wide.
        case process
        /// Anywhere: the default session's outside any section, a named session's in its section.
        case session
        /// In a `[session NAME]` section only (`mount`).
        case namedSession
    }

    /// `apply` returns nil on success, or what was expected.
    init(
        _ name: String,
        scope: Scope = .process,
        secret: Bool = false,
        carriesSecrets: Bool? = nil,
        show: @escaping @Sendable (Configuration) -> String?,
        _ apply: @escaping @Sendable (String, inout Configuration) -> String?
    ) {
        self.name = name
        self.scope = scope
        self.isSecret = secret
        self.carriesSecrets = carriesSecrets ?? secret
        self.show = show
        self.apply = apply
    }
}

extension Configuration {
    /// Every key the config file accepts, in the order `--check` prints them.
    static let keys: [ConfigurationKey] =
        Self.proxyKeys + Self.jsonAndLoginKeys + Self.sessionStoreKeys + Self.interceptKeys
        + Self.clientCredentialKeys + Self.dpopKeys + Self.namedSessionKeys

    static let proxyKeys: [ConfigurationKey] = [
        ConfigurationKey(
            "listen",
            scope: .session,
            show: { $0.listen.isEmpty ? nil : $0.listen.map(\.description).joined(separator: ", ") }
        ) { value, config in
            var addresses: [ListenAddressSpec] = []
            for item in ValueParsers.list(value) {
                do throws(AddressParseError) {
                    addresses.append(try ListenAddressSpec.parse(item))
                } catch {
                    return error.description
                }
            }
            guard !addresses.isEmpty else { return "expected HOST:PORT, [IPv6]:PORT or unix:/path" }
            config.listen = addresses
            return nil
        },
        urlKey("upstream", scope: .session, example: "https://api.example.com/v2", \.upstream),
        ConfigurationKey(
            "inject_hosts",
            scope: .session,
            show: { $0.effectiveInjectHosts.map(\.description).joined(separator: ", ") }
        ) {
            value,
            config in
            var patterns: [HostPattern] = []
            for item in ValueParsers.list(value) {
                guard let pattern = HostPattern.parse(item) else {
                    return "invalid entry '\(item)' (expected host, host:port or *.domain)"
                }
                patterns.append(pattern)
            }
            // Most likely a ${VAR} that expanded to nothing: a session that injects into no host
            // would send every request without its token, and say nothing.
            guard !patterns.isEmpty else {
                return
                    "no host in '\(value)' (expected host, host:port or *.domain; leave the key out for the upstream's host)"
            }
            config.injectHosts = patterns
            return nil
        },
        ConfigurationKey("other_hosts", show: { $0.otherHosts.rawValue }) { value, config in
            guard let policy = OtherHostsPolicy(rawValue: value) else {
                return "expected forward or deny, got '\(value)'"
            }
            config.otherHosts = policy
            return nil
        },
        ConfigurationKey("access_token", scope: .session, secret: true, show: { $0.accessToken.map { "\($0)" } }) {
            value,
            config in
            guard !value.isEmpty, !value.contains(where: { $0.isWhitespace || $0.isNewline }) else {
                return "expected a token without spaces (the value is not shown)"
            }
            config.accessToken = Secret(value)
            return nil
        },
        ConfigurationKey("io", show: { $0.io.rawValue }) { value, config in
            guard let backend = IOBackend(rawValue: value) else {
                return "expected epoll or io_uring, got '\(value)'"
            }
            config.io = backend
            config.ioIsExplicit = true
            return nil
        },
        ConfigurationKey("workers", show: { "\($0.workers)" }) { value, config in
            guard let count = Int(value), (1...256).contains(count) else {
                return "expected a number from 1 to 256, got '\(value)'"
            }
            config.workers = count
            return nil
        },
        sizeKey("max_header_bytes", minimum: 1024, \.maxHeaderBytes),
        ConfigurationKey("max_connections", show: { "\($0.maxConnections)" }) { value, config in
            guard let count = Int(value), count >= 1 else { return "expected a positive number, got '\(value)'" }
            config.maxConnections = count
            return nil
        },
        durationKey("upstream_connect_timeout", \.upstreamConnectTimeout),
        durationKey("upstream_timeout", \.upstreamTimeout),
        durationKey("client_header_timeout", \.clientHeaderTimeout),
        durationKey("client_idle_timeout", \.clientIdleTimeout),
        durationKey("tunnel_idle_timeout", \.tunnelIdleTimeout),
        ConfigurationKey("log_level", show: { $0.logLevel.name }) { value, config in
            guard let level = Logger.Level(name: value) else {
                return "expected error, warn, info or debug, got '\(value)'"
            }
            config.logLevel = level
            return nil
        },
        durationKey("shutdown_timeout", allowZero: true, \.shutdownTimeout),
        ConfigurationKey("admin_listen", show: { $0.adminListen?.description ?? "off" }) { value, config in
            if value == "off" {
                config.adminListen = nil
                return nil
            }
            do throws(AddressParseError) {
                config.adminListen = try ListenAddressSpec.parse(value)
                return nil
            } catch {
                return error.description
            }
        },
        ConfigurationKey("access_log", show: { $0.accessLog.description }) { value, config in
            switch value {
            case "off": config.accessLog = .off
            case "stderr": config.accessLog = .standardError
            case "": return "expected off, stderr or a file path"
            default: config.accessLog = .file(ValueParsers.expandingHome(value))
            }
            return nil
        },
        urlKey("revocation_url", scope: .session, example: "https://auth.example.com/oauth/revoke", \.revocationURL),
        secretKey("refresh_token", scope: .session, \.refreshToken),
        ConfigurationKey("refresh_token_file", scope: .session, show: { $0.refreshTokenFile }) { value, config in
            guard !value.isEmpty else { return "expected a file path" }
            config.refreshTokenFile = ValueParsers.expandingHome(value)
            return nil
        },
        urlKey("token_url", scope: .session, example: "https://auth.example.com/oauth/token", \.tokenURL),
        ConfigurationKey("grant_type", scope: .session, show: { $0.effectiveGrantType.rawValue }) { value, config in
            guard let grant = GrantType(rawValue: value) else {
                return "expected refresh_token, client_credentials, password or jwt_bearer, got '\(value)'"
            }
            config.grantType = grant
            return nil
        },
        textKey("client_id", scope: .session, \.clientID),
        secretKey("client_secret", scope: .session, \.clientSecret),
        textKey("scope", scope: .session, \.scope),
        textKey("audience", scope: .session, \.audience),
        textKey("username", scope: .session, \.username),
        secretKey("password", scope: .session, \.password),
        ConfigurationKey("client_auth", scope: .session, show: { $0.clientAuthentication.rawValue }) { value, config in
            guard let method = ClientAuthentication(rawValue: value) else {
                return "expected basic, post, private_key_jwt or tls_client_auth, got '\(value)'"
            }
            config.clientAuthentication = method
            return nil
        },
        ConfigurationKey("token_command", scope: .session, show: { $0.tokenCommand.map { $0.joined(separator: " ") } })
        {
            value,
            config in
            guard let argv = splitCommandLine(value), !argv.isEmpty else {
                return "expected a command and its arguments (quotes must be closed)"
            }
            config.tokenCommand = argv
            return nil
        },
        ConfigurationKey("refresh_on", scope: .session, show: { $0.refreshOn.map(String.init).joined(separator: ",") })
        {
            value,
            config in
            let statuses = ValueParsers.list(value).map { Int($0) }
            guard !statuses.isEmpty, statuses.allSatisfy({ $0 != nil && (400...599).contains($0!) }) else {
                return "expected a comma list of 4xx/5xx statuses, e.g. 401,403; got '\(value)'"
            }
            config.refreshOn = statuses.map { $0! }
            return nil
        },
        durationKey("refresh_skew", scope: .session, allowZero: true, \.refreshSkew),
        ConfigurationKey("max_refreshes", scope: .session, show: { "\($0.maxRefreshes)" }) { value, config in
            guard let count = Int(value), count >= 1 else { return "expected a positive number, got '\(value)'" }
            config.maxRefreshes = count
            return nil
        },
        durationKey("refresh_window", scope: .session, \.refreshWindow),
        durationKey("refresh_timeout", \.refreshTimeout),
        sizeKey("replay_body_limit", scope: .session, \.replayBodyLimit),
        sizeKey("replay_memory_limit", \.replayMemoryLimit),
        ConfigurationKey(
            "accept_hosts",
            show: { config in
                (["localhost", "127.0.0.1", "[::1]"].map { "\($0):<listen port>" }
                    + config.acceptHosts.map(\.description)).joined(separator: ", ")
            }
        ) { value, config in
            var patterns: [HostPattern] = []
            for item in ValueParsers.list(value) {
                guard let pattern = HostPattern.parse(item) else {
                    return "invalid entry '\(item)' (expected host, host:port or *.domain)"
                }
                patterns.append(pattern)
            }
            config.acceptHosts = patterns
            return nil
        },
        ConfigurationKey(
            "accept_origins",
            show: { $0.acceptOrigins.isEmpty ? "(none)" : $0.acceptOrigins.joined(separator: ", ") }
        ) { value, config in
            var origins: [String] = []
            for item in ValueParsers.list(value) {
                let lower = item.lowercased()
                guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), !lower.dropFirst(8).contains("/")
                else {
                    return "invalid origin '\(item)' (expected scheme://host[:port], e.g. http://localhost:3000)"
                }
                origins.append(lower)
            }
            config.acceptOrigins = origins
            return nil
        },
        ConfigurationKey("ca_file", show: { $0.caFile ?? "(system trust store)" }) { value, config in
            guard !value.isEmpty else { return "expected a path to a PEM CA bundle" }
            config.caFile = ValueParsers.expandingHome(value)
            return nil
        },
        ConfigurationKey("tls_insecure_skip_verify", show: { "\($0.tlsInsecureSkipVerify)" }) { value, config in
            guard let flag = ValueParsers.bool(value) else { return "expected true or false, got '\(value)'" }
            config.tlsInsecureSkipVerify = flag
            return nil
        },
    ]

    static func textKey(
        _ name: String,
        scope: ConfigurationKey.Scope = .process,
        _ path: WritableKeyPath<Configuration, String?> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(name, scope: scope, show: { $0[keyPath: path] }) { value, config in
            guard !value.isEmpty else { return "expected a value" }
            config[keyPath: path] = value
            return nil
        }
    }

    static func secretKey(
        _ name: String,
        scope: ConfigurationKey.Scope = .process,
        _ path: WritableKeyPath<Configuration, Secret<String>?> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(name, scope: scope, secret: true, show: { $0[keyPath: path].map { "\($0)" } }) {
            value,
            config in
            guard !value.isEmpty, !value.contains(where: { $0.isNewline }) else {
                return "expected a single-line value (the value is not shown)"
            }
            config[keyPath: path] = Secret(value)
            return nil
        }
    }

    static func durationKey(
        _ name: String,
        scope: ConfigurationKey.Scope = .process,
        allowZero: Bool = false,
        _ path: WritableKeyPath<Configuration, Duration> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(name, scope: scope, show: { ValueParsers.format($0[keyPath: path]) }) { value, config in
            guard let duration = ValueParsers.duration(value), duration > .zero || (allowZero && duration == .zero)
            else {
                return "invalid duration '\(value)' (expected e.g. 500ms, 30s, 5m)"
            }
            config[keyPath: path] = duration
            return nil
        }
    }

    static func sizeKey(
        _ name: String,
        scope: ConfigurationKey.Scope = .process,
        minimum: Int = 0,
        _ path: WritableKeyPath<Configuration, Int> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(name, scope: scope, show: { ValueParsers.format(size: $0[keyPath: path]) }) { value, config in
            guard let size = ValueParsers.size(value), size >= minimum else {
                return
                    "invalid size '\(value)' (expected e.g. 64KiB, 1MiB\(minimum > 0 ? ", at least \(minimum) bytes" : ""))"
            }
            config[keyPath: path] = size
            return nil
        }
    }

    /// The first error of the rules about settings together, thrown (for callers that stop at one).
    func validateCombinations(place: String) throws(ConfigurationError) {
        var places = self.settingPlaces
        places.file = places.file ?? place
        var diagnostics = ConfigurationDiagnostics(places: places)
        self.validate(into: &diagnostics)
        try diagnostics.throwFirstError()
    }

    /// Every rule about settings together, once every key is read: errors, then warnings (see
    /// `ConfigurationDiagnostics` for how to add one).
    func validate(into diagnostics: inout ConfigurationDiagnostics) {
        self.validateTokenSettings(into: &diagnostics)
        self.validateJSONAndLogin(into: &diagnostics)
        self.validateClientCredentials(into: &diagnostics)
        self.validateDPoP(into: &diagnostics)
        self.warnAboutUnsafeSettings(into: &diagnostics)
        self.warnAboutSettingsWithoutEffect(into: &diagnostics)
    }

    /// What start-up logs at warn and `--check` prints: settings that work, but surely not as meant,
    /// in every session.
    package var warnings: [ConfigurationWarning] {
        var diagnostics = ConfigurationDiagnostics(places: self.settingPlaces)
        var copy = self
        copy.forEverySession(&diagnostics) { session, diagnostics in session.validate(into: &diagnostics) }
        return diagnostics.sortedWarnings
    }

    /// The token source and the grant: what each needs.
    private func validateTokenSettings(into diagnostics: inout ConfigurationDiagnostics) {
        if self.tokenURL != nil && self.tokenCommand != nil {
            diagnostics.error("token_command", "set either token_url or token_command, not both")
        }
        if self.refreshToken != nil && self.refreshTokenFile != nil {
            diagnostics.error("refresh_token_file", "set either refresh_token or refresh_token_file, not both")
        }
        guard self.tokenURL != nil, self.tokenFormat == .form else { return }
        switch self.effectiveGrantType {
        case .refreshToken:
            if self.refreshToken == nil && self.refreshTokenFile == nil {
                diagnostics.error(
                    "grant_type",
                    "refresh_token needs refresh_token or refresh_token_file",
                    alsoAt: ["token_url"]
                )
            }
        case .clientCredentials:
            if self.clientID == nil {
                diagnostics.error(
                    "grant_type",
                    "client_credentials needs client_id (and usually client_secret)",
                    alsoAt: ["token_url"]
                )
            }
        case .password:
            if self.username == nil || self.password == nil {
                diagnostics.error("grant_type", "password needs username and password", alsoAt: ["token_url"])
            }
        case .jwtBearer:
            break  // validateClientCredentials: a key and an issuer
        }
    }

    /// Applies settings in order (file first, then flags), so later ones win; throws the first mistake.
    package static func build(from entries: [ConfigEntry]) throws(ConfigurationError) -> Configuration {
        var diagnostics = ConfigurationDiagnostics()
        let config = Self.build(from: entries, into: &diagnostics)
        try diagnostics.throwFirstError()
        return config
    }

    /// Applies settings in order (file first, then flags), so later ones win. A line with an unknown
    /// key, a bad value or a key that does not belong where it is is recorded and leaves its setting
    /// at the default.
    ///
    /// The lines outside any section make this configuration, the default session's. Each `[session
    /// NAME]` makes one of `sessions`: the defaults of a named session, then the file's process-wide
    /// lines (so that it holds the same process-wide values; their mistakes are reported once, for
    /// the default session), then its own section's lines.
    package static func build(
        from entries: [ConfigEntry],
        into diagnostics: inout ConfigurationDiagnostics
    ) -> Configuration {
        let topLevel = entries.filter { $0.section == nil }
        var config = Self.applying(topLevel, to: Configuration(), into: &diagnostics)
        let processWide = topLevel.filter { Self.isProcessWide($0.key) }
        var sections: [ConfigSection] = []
        for case let section? in entries.map(\.section) where !sections.contains(section) {
            sections.append(section)
        }
        for section in sections {
            var reportedForTheDefaultSession = ConfigurationDiagnostics()
            let start = Self.applying(
                processWide,
                to: Self.namedSessionDefaults(section.name),
                into: &reportedForTheDefaultSession
            )
            let session = Self.applying(
                entries.filter { $0.section == section },
                to: start,
                section: section,
                into: &diagnostics
            )
            config.sessions.append(
                SessionConfiguration(name: section.name, place: section.place, configuration: session)
            )
            config.secretVariables.formUnion(session.secretVariables)
        }
        return config
    }

    /// `start` with `entries` applied, each of them in `section` (nil: outside any).
    private static func applying(
        _ entries: [ConfigEntry],
        to start: Configuration,
        section: ConfigSection? = nil,
        into diagnostics: inout ConfigurationDiagnostics
    ) -> Configuration {
        var config = start
        for entry in entries {
            guard let key = Self.keys.first(where: { $0.name == entry.key }) else {
                let meant = closestName(to: entry.key, among: Self.keys.map(\.name))
                let suggestion = meant.map { " (did you mean '\($0)'?)" } ?? ""
                diagnostics.lineError(
                    ConfigurationError(place: entry.place, key: entry.key, message: "unknown key\(suggestion)"),
                    meant: meant,
                    section: section?.name
                )
                continue
            }
            let misplaced = Self.misplacement(of: key, in: section)
            guard let expected = misplaced ?? key.apply(entry.value, &config) else {
                config.settingPlaces.byKey[entry.key] = entry.place
                if key.carriesSecrets { config.secretVariables.formUnion(entry.variables) }
                continue
            }
            // A value holding an unset `${VAR}` is not the value meant, so whatever its key refuses in it
            // is no error: the key stays unset (`ConfigurationLoader.SecretUse.unused`).
            if misplaced == nil && !entry.unsetVariables.isEmpty { continue }
            diagnostics.lineError(
                ConfigurationError(place: entry.place, key: entry.key, message: expected),
                section: section?.name
            )
        }
        return config
    }
}
