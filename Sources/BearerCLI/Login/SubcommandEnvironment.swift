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
    /// What the session's token requests sign with, and its TLS client certificate.
    let credentials: SessionCredentials
    /// refresh_token_file: where login stores and logout deletes.
    let refreshTokenFile: String
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
        guard let settings = root.session(named: name) else {
            let known = root.sessions.map(\.name).joined(separator: ", ")
            throw .notConfigured("\(path): there is no [session \(name)] (the sessions are \(known))")
        }
        let places = root.places(of: name)
        guard let file = settings.refreshTokenFile else {
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
        self.settings = settings
        self.credentials = credentials
        self.refreshTokenFile = file
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

    func shutdown() {
        self.group.shutdown()
    }
}
