import BearerConfig
import BearerCore
import BearerIO
import BearerSession
import Foundation

/// What `login` and `logout` set up before they talk to an endpoint: the configuration, the refresh
/// token file it names, and an event loop of their own for the one way out.
struct SubcommandEnvironment {
    let configuration: Configuration
    /// refresh_token_file: where login stores and logout deletes.
    let refreshTokenFile: String
    let client: EndpointCaller
    private let group: EventLoopGroup

    init(_ options: Subcommand.Options, subcommand: Subcommand) throws(LoginError) {
        let source = options.configurationSource()
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
        let name = options.session ?? Configuration.defaultSessionName
        guard let configuration = root.session(named: name) else {
            let known = root.everySession.map(\.name).joined(separator: ", ")
            throw .notConfigured("\(path): there is no [session \(name)] (the sessions are \(known))")
        }
        guard let file = configuration.refreshTokenFile else {
            let whose = options.session.map { " in [session \($0)]" } ?? ""
            throw .notConfigured(
                "\(configuration.settingPlaces.whole): refresh_token_file: \(subcommand.rawValue) needs it\(whose) (where the refresh token is stored)"
            )
        }
        let tls: any TLSConnectionFactory
        do throws(TLSConfigurationError) {
            tls = try configuration.outboundTLS()
        } catch {
            throw .notConfigured(error.description)
        }
        self.configuration = configuration
        self.refreshTokenFile = file
        self.group = EventLoopGroup(count: 1, name: "bearer-\(subcommand.rawValue)")
        self.client = EndpointCaller(
            configuration: configuration,
            loop: self.group.loops[0],
            connector: OutboundConnector(
                tls: tls,
                connectTimeout: configuration.upstreamConnectTimeout
            )
        )
    }

    func shutdown() {
        self.group.shutdown()
    }
}
