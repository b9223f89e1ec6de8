import BearerConfig
import BearerCore
import BearerIO
import BearerSession
import FoundationEssentials

/// `bearer-proxy login`: obtains a first refresh token the way the configuration says, stores it in
/// refresh_token_file (atomically, mode 0600, under the same lock as the proxy's refreshes), and
/// prints what it got: expiry and scope, never a token.
enum LoginCommand: Command {
    static func run(_ options: Options) -> Int32 {
        Self.run(options, console: .standard)
    }

    static func run(_ options: Options, console: Console) -> Int32 {
        if let url = options.url { return LoginAtURL(text: url, options: options, console: console).run() }
        if options.scope != nil || options.printsSection {
            console.fail(.notConfigured("--scope and --print go with the API's address: bearer-proxy login <url> …"))
            return 1
        }
        let environment: SubcommandEnvironment
        do throws(LoginError) {
            environment = try SubcommandEnvironment(
                options.configurationSource(),
                session: options.session,
                command: "login"
            )
        } catch {
            console.fail(error)
            return 1
        }
        defer { environment.shutdown() }
        let result = Self.obtain(in: environment, usesDevice: options.usesDevice, options: options, console: console)
            .flatMap { token in
                Self.store(token, in: environment).map { token }
            }
        switch result {
        case .success(let token):
            console.say(
                Self.summary(token, file: environment.storePlace, inKeyring: environment.credentialStore.keyring != nil)
            )
            return 0
        case .failure(let error):
            console.fail(error)
            return 1
        }
    }

    /// Logs the session of `environment` in, the way its settings say (`flow`): the token, not stored yet.
    static func obtain(
        in environment: SubcommandEnvironment,
        usesDevice: Bool,
        options: Options,
        console: Console
    ) -> Result<FetchedToken, LoginError> {
        let settings = environment.settings
        let context = LoginContext(
            settings: settings,
            credentials: environment.credentials,
            client: environment.client,
            console: console,
            deadline: Instant.now() + settings.login.timeout,
            opensBrowser: options.opensBrowser
        )
        return Self.flow(
            for: settings,
            usesDevice: usesDevice,
            context: context,
            refreshTokenFile: environment.refreshTokenFile,
            keyringClient: environment.keyringClient
        )
        .flatMap { $0() }
    }

    /// Which way to log in: JSON login, browser (authorization code + PKCE), or device code.
    static func flow(
        for settings: SessionSettings,
        usesDevice: Bool,
        context: LoginContext,
        refreshTokenFile: String,
        keyringClient: KeyringRegisteredClient?
    ) -> Result<() -> Result<FetchedToken, LoginError>, LoginError> {
        switch settings.tokenFormat {
        case .json:
            if usesDevice { return .failure(.notConfigured("--device applies to OAuth2 (token_format = form)")) }
            let requests = JSONBackendRequests(settings: settings)
            guard requests.loginURL != nil else {
                return .failure(.notConfigured("nothing to log in with: set login_url (token_format = json)"))
            }
            return .success { JSONLogin(context: context, requests: requests).run() }
        case .form:
            let login = settings.login
            guard let tokenURL = settings.tokenURL else {
                return .failure(.notConfigured("logging in needs token_url and client_id"))
            }
            var registration: LoginRegistration?
            if settings.clientID == nil {
                guard let endpoint = settings.registrationURL else {
                    return .failure(.notConfigured(Self.unregistered(settings)))
                }
                registration = LoginRegistration(
                    endpoint: endpoint,
                    refreshTokenFile: refreshTokenFile,
                    keyring: keyringClient
                )
            }
            if let deviceURL = login.deviceAuthorizationURL, usesDevice || login.authorizationURL == nil {
                return .success {
                    let registered =
                        registration?.register(context, redirectURIs: [], browser: false) ?? .success(context)
                    return registered.flatMap {
                        DeviceLogin(context: $0, deviceAuthorizationURL: deviceURL, tokenURL: tokenURL).run()
                    }
                }
            }
            if usesDevice { return .failure(.notConfigured("--device needs device_authorization_url")) }
            guard let authorizationURL = login.authorizationURL else {
                return .failure(
                    .notConfigured(
                        "nothing to log in with: set authorization_url (browser) or device_authorization_url (--device)"
                    )
                )
            }
            return .success {
                BrowserLogin(
                    context: context,
                    authorizationURL: authorizationURL,
                    tokenURL: tokenURL,
                    registration: registration
                ).run()
            }
        }
    }

    /// No client_id and no registration endpoint: where a client is registered by hand.
    static func unregistered(_ settings: SessionSettings) -> String {
        guard let issuer = settings.issuer else { return "logging in needs token_url and client_id" }
        return
            "the authorization server \(issuer.text) offers no client registration (its metadata has no registration_endpoint): register a client at \(issuer.text) and set client_id"
    }

    /// Writes the refresh token the way a rotation does: under the store's lock, in the keyring item or
    /// the file (atomically, mode 0600).
    static func store(_ token: FetchedToken, in environment: SubcommandEnvironment) -> Result<Void, LoginError> {
        let path = environment.refreshTokenFile
        guard let refreshToken = token.refreshToken else {
            return .failure(
                .noRefreshToken(
                    "ask for offline access in scope (e.g. offline_access), or set refresh_token_field for a JSON backend"
                )
            )
        }
        let directory = AtomicFile.folder(of: path)
        do throws(AtomicFile.WriteError) {
            try AtomicFile.createFolders(directory)
        } catch {
            return .failure(.cannotStore("\(error.path): cannot create the directory: \(error.reason)"))
        }
        do throws(RefreshTokenStore.StoreError) {
            let store = try environment.openStore()
            try store.endRefresh(store.beginRefresh(), rotated: refreshToken)
            return .success(())
        } catch {
            return .failure(.cannotStore(error.description))
        }
    }

    /// What the person learns: where the token went and how long the access token lives. Never a token.
    static func summary(
        _ token: FetchedToken,
        file: String,
        inKeyring: Bool = false,
        now: Double = wallClockSeconds()
    ) -> String {
        var lifetime = token.expiresIn?.seconds
        if lifetime == nil, let exp = JWTExpiry.expiry(of: token.accessToken.reveal()) { lifetime = exp - now }
        let expiry = lifetime.map { seconds in
            let at = Date(timeIntervalSince1970: now + seconds).ISO8601Format()
            return "The access token expires in \(humanDuration(seconds)) (\(at))"
        }
        return
            "Logged in. The refresh token is stored in \(file)\(inKeyring ? "; a running bearer-proxy reads it at its next refresh" : " (mode 0600); a running bearer-proxy uses it within a second").\n"
            + (expiry ?? "The access token's expiry is unknown") + "; scope: \(token.scope ?? "(not stated)")."
    }
}

/// `1h 5m`, `30m`, `45s`: a lifetime a person reads at a glance.
func humanDuration(_ seconds: Double) -> String {
    let total = max(Int(seconds.rounded()), 0)
    let (hours, minutes, rest) = (total / 3600, total % 3600 / 60, total % 60)
    let parts = [(hours, "h"), (minutes, "m"), (rest, "s")].filter { $0.0 > 0 }.prefix(2)
    return parts.isEmpty ? "0s" : parts.map { "\($0.0)\($0.1)" }.joined(separator: " ")
}
