import BearerConfig
import BearerCore
import BearerHTTP
import BearerIO
import BearerSession
import FoundationEssentials
import Glibc

/// `bearer-proxy login URL`: from the API's address alone to a config that serves it. The API's 401
/// names its metadata (`ResourceProbe`), the section the login adds is read together with the file
/// (so a mistake in either is found before anyone logs in), discovery and registration run as for
/// any session with `resource_url` or `issuer`, and only a login that stored its refresh token
/// adds the section (or prints it, `--print`). A file that already has a session for the API gets
/// that session logged in again instead of a second one.
struct LoginAtURL {
    let text: String
    let options: LoginCommand.Options
    let console: Console
    var environment: [String: String] = ProcessInfo.processInfo.environment

    func run() -> Int32 {
        switch self.login() {
        case .success(let lines):
            lines.forEach(self.console.say)
            return 0
        case .failure(let error):
            self.console.fail(error)
            return 1
        }
    }

    /// What to tell the person once it worked, or why it did not.
    private func login() -> Result<[String], LoginError> {
        let api: HTTPURL
        switch Issuer.parse(self.text) {
        case .success(let issuer): api = issuer.url
        case .failure(let error):
            return .failure(.notConfigured("login: '\(HTTPURL.quotable(self.text))' \(error.reason)"))
        }
        guard let path = self.options.configPath ?? DefaultConfigFile.path(environment: self.environment) else {
            return .failure(.notConfigured("login \(api): no config file: pass --config <file> (or set HOME)"))
        }
        let existing: String?
        do throws(ConfigurationError) {
            existing = access(path, F_OK) == 0 ? try ConfigFileReader.read(path) : nil
        } catch {
            return .failure(.notConfigured(error.description))
        }
        return self.read(existing, path: path).flatMap { current in
            if let session = current.sessions.first(where: { $0.upstream == api }) {
                return self.again(session.name, for: api, of: current, path: path)
            }
            return self.probe(api, with: current).flatMap { found in
                self.add(found, for: api, to: path, existing: existing, current: current)
            }
        }
    }

    /// The configuration `text` makes at `path`, every error in it one line each.
    private func read(_ text: String?, path: String) -> Result<Configuration, LoginError> {
        let (configuration, diagnostics) = ConfigurationLoader.read(
            text,
            fileName: path,
            environment: self.environment
        )
        guard diagnostics.errors.isEmpty else {
            return .failure(.notConfigured(diagnostics.sortedErrors.map(\.description).joined(separator: "\nError: ")))
        }
        return .success(configuration)
    }

    /// The API's resource metadata, asked through the file's process-wide TLS settings (ca_file).
    private func probe(_ api: HTTPURL, with configuration: Configuration) -> Result<ResourceProbe.Found, LoginError> {
        let process = configuration.process
        let tls: any TLSConnectionFactory
        do throws(TLSConfigurationError) {
            tls = try process.outboundTLS(for: configuration.defaultSession, presenting: nil)
        } catch {
            return .failure(.notConfigured(error.description))
        }
        let group = EventLoopGroup(count: 1, name: "bearer-login")
        defer { group.shutdown() }
        let caller = EndpointCaller(
            timeout: process.refreshTimeout,
            dpop: nil,
            loop: group.loops[0],
            connector: OutboundConnector(tls: tls, connectTimeout: process.upstreamConnectTimeout)
        )
        do throws(DiscoveryError) {
            return .success(try ResourceProbe(caller: caller).discover(api))
        } catch {
            return .failure(.notConfigured(error.description))
        }
    }

    /// Logs in a new session for `api`, then adds its section to the file (or prints it).
    private func add(
        _ found: ResourceProbe.Found,
        for api: HTTPURL,
        to path: String,
        existing: String?,
        current: Configuration
    ) -> Result<[String], LoginError> {
        let name = self.options.session ?? SessionSection.defaultName(for: api)
        if current.session(named: name) != nil {
            return .failure(
                .notConfigured(
                    "\(path) already has a [session \(name)] (for another upstream): pass --session <name> with another name"
                )
            )
        }
        guard let tokenFile = CredentialStoreChoice.stateFile(session: name, environment: self.environment) else {
            return .failure(.notConfigured("login \(api): no place for the refresh token: set HOME or XDG_STATE_HOME"))
        }
        let section = SessionSection(
            name: name,
            upstream: api,
            found: found,
            refreshTokenFile: tokenFile,
            scope: self.options.scope
        )
        let after = self.read((existing ?? "") + section.addition(after: existing), path: path)
        return after.flatMap { configuration in
            self.logIn(name, for: api, of: configuration, path: path).flatMap { summary in
                if self.options.printsSection {
                    return .success(
                        [summary, "Add this to \(path) (or another config file):", "", section.text]
                    )
                }
                return section.add(to: path, after: existing).map {
                    [summary, "Added [session \(name)] to \(path). Next: \(self.next(path))"]
                }
            }
        }
    }

    /// The command that starts the proxy with `path`: without `--config` for the default file.
    private func next(_ path: String) -> String {
        self.options.configPath == nil ? "bearer-proxy" : "bearer-proxy --config \(path)"
    }

    /// A file that has a session for the API already: that one is logged in again.
    private func again(
        _ name: String,
        for api: HTTPURL,
        of configuration: Configuration,
        path: String
    ) -> Result<[String], LoginError> {
        let shown = name == Configuration.defaultSessionName ? "the keys outside any section" : "[session \(name)]"
        return self.logIn(name, for: api, of: configuration, path: path).map {
            [$0, "\(path) already has \(shown) for this API: logged it in again. Next: \(self.next(path))"]
        }
    }

    /// The login itself, as `bearer-proxy login --session NAME` does it, and the refresh token stored.
    private func logIn(
        _ name: String,
        for api: HTTPURL,
        of configuration: Configuration,
        path: String
    ) -> Result<String, LoginError> {
        let environment: SubcommandEnvironment
        do throws(LoginError) {
            let session = name == Configuration.defaultSessionName ? nil : name
            environment = try SubcommandEnvironment(configuration, path: path, session: session, command: "login")
        } catch {
            return .failure(error)
        }
        defer { environment.shutdown() }
        // No browser to open: the device code, when the server has it.
        let noBrowser = self.options.opensBrowser && BrowserOpener.findOpener(environment: self.environment) == nil
        let usesDevice =
            self.options.usesDevice || (noBrowser && environment.settings.login.deviceAuthorizationURL != nil)
        let check = APITokenCheck(api: api, settings: environment.settings, client: environment.client)
        return LoginCommand.obtain(
            in: environment,
            usesDevice: usesDevice,
            options: self.options,
            console: self.console
        )
        .flatMap { token in check.verify(token).map { token } }
        .flatMap { token in
            LoginCommand.store(token, in: environment).map {
                LoginCommand.summary(
                    token,
                    file: environment.storePlace,
                    inKeyring: environment.credentialStore.keyring != nil
                )
            }
        }
    }
}
