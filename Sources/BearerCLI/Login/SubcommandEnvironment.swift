import BearerConfig
import BearerCore
import BearerCrypto
import BearerIO
import BearerSession
import FoundationEssentials

/// What `login` and `logout` set up before they talk to an endpoint: the session's settings (with
/// what its `issuer`'s metadata fills), the keys its files hold, the refresh token file it names, and an event loop of their own for the one
/// way out.
struct SubcommandEnvironment {
    /// The session `--session` names (the default one without).
    let settings: SessionSettings
    /// Under the Secret Service store, the keyring item that keeps a client login registered.
    let keyringClient: KeyringRegisteredClient?
    /// What the session's token requests sign with, and its TLS client certificate.
    let credentials: SessionCredentials
    /// refresh_token_file: where login stores and logout deletes (under the keyring: what the lock
    /// file sits beside, and a registered client's file).
    let refreshTokenFile: String
    /// Where the refresh token is kept (credential_store), chosen as the proxy chooses it.
    let credentialStore: CredentialStoreChoice
    let client: EndpointCaller
    private let group: EventLoopGroup

    /// `command` (`login`, `logout`) for `session` (nil: the default one) of the config `source` names.
    init(_ source: ConfigurationSource, session: String?, command: String) throws(LoginError) {
        guard let path = ConfigurationLoader.configFile(for: source) else {
            throw .notConfigured(
                "no config file: pass --config <file> (or create ~/.config/bearer-proxy/proxy.conf)"
            )
        }
        let root: Configuration
        do throws(ConfigurationErrors) {
            root = try ConfigurationLoader.load(source)
        } catch {
            // One line per error, each an `Error: …` line as the console prints the first.
            throw .notConfigured(error.errors.map(\.description).joined(separator: "\nError: "))
        }
        try self.init(root, path: path, session: session, command: command)
    }

    /// The same for a configuration already read from `path` (`login URL`'s, with the section it adds).
    init(_ loaded: Configuration, path: String, session: String?, command: String) throws(LoginError) {
        var root = loaded
        let name = session ?? Configuration.defaultSessionName
        do throws(DiscoveryError) {
            root = try AuthorizationServerDiscovery.fill(root, only: name)
        } catch {
            throw .notConfigured(error.description)
        }
        guard var settings = root.session(named: name) else {
            let known = root.sessions.map(\.name).joined(separator: ", ")
            throw .notConfigured("\(path): there is no [session \(name)] (the sessions are \(known))")
        }
        let places = root.places(of: name)
        // Chosen for a session that keeps a refresh token, which logging in gives it.
        var keeping = settings
        keeping.grantType = .refreshToken
        let credentialStore: CredentialStoreChoice
        do throws(RefreshTokenStore.StoreError) {
            credentialStore = try CredentialStoreChoice.choose(
                for: keeping,
                environment: ProcessInfo.processInfo.environment
            )
        } catch {
            throw .notConfigured(error.description)
        }
        guard let file = settings.refreshTokenFile ?? (credentialStore.keyring == nil ? nil : credentialStore.file)
        else {
            let whose = session.map { " in [session \($0)]" } ?? ""
            throw .notConfigured(
                "\(places.whole): \(ConfigurationKey.refreshTokenFile): \(command) needs it\(whose) (where the refresh token is stored)"
            )
        }
        // Read here, not by loading: `login` with dpop on makes the session's key when there is none
        // yet (its token requests carry proofs); `logout` revokes without one.
        let credentials: SessionCredentials
        let dpop: DPoPProver?
        do throws(ConfigurationError) {
            credentials = try SessionCredentials(reading: settings, places: places)
            dpop = command == "login" ? try settings.dpop.makeProver(places: places) : nil
        } catch {
            throw .notConfigured(error.description)
        }
        let tls: any TLSConnectionFactory
        do throws(TLSConfigurationError) {
            tls = try root.process.outboundTLS(for: settings, presenting: credentials.tlsCertificate)
        } catch {
            throw .notConfigured(error.description)
        }
        // A client an earlier login registered and kept in the keyring.
        self.keyringClient = KeyringRegisteredClient(credentialStore.keyring, of: settings)
        self.keyringClient?.fill(&settings)
        self.settings = settings
        self.credentials = credentials
        self.refreshTokenFile = file
        self.credentialStore = credentialStore
        self.group = EventLoopGroup(count: 1, name: "bearer-\(command)")
        self.client = EndpointCaller(
            timeout: root.process.refreshTimeout,
            dpop: dpop,
            loop: self.group.loops[0],
            connector: OutboundConnector(
                tls: tls,
                connectTimeout: root.process.upstreamConnectTimeout
            )
        )
    }

    /// The refresh token's store, read now: the keyring item, or the file.
    func openStore() throws(RefreshTokenStore.StoreError) -> RefreshTokenStore {
        guard self.credentialStore.keyring != nil else {
            return try RefreshTokenStore(token: nil, path: self.refreshTokenFile)
        }
        return try self.credentialStore.open(for: self.settings)
    }

    /// Where the token goes, for what login and logout say: the file, or the keyring item.
    var storePlace: String {
        guard self.credentialStore.keyring != nil else { return self.refreshTokenFile }
        return
            "the Secret Service (\(ConfigurationKey.credentialStore) = secret-service; secret-tool lookup application bearer-proxy session \(self.settings.sessionName) kind refresh_token)"
    }

    func shutdown() {
        self.group.shutdown()
    }
}
