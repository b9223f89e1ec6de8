import BearerConfig
import BearerCore
import BearerIO
import BearerProxy
import BearerSession
import FoundationEssentials
import Glibc

extension ProxyCommand {
    /// Runs the proxy until SIGTERM or SIGINT; SIGHUP re-reads the config, SIGUSR1 reopens the audit
    /// log (`SignalWatcher`).
    static func serve(_ options: Options) -> Int32 {
        // Before anything is created, so that a signal at any moment finds what it must clean up.
        let signals = SignalWatcher.start(wrapsProgram: false)
        guard var configuration = Self.loadConfiguration(options) else { return 1 }
        var demo: DemoMode?
        if options.isDemo {
            guard let started = Self.startDemo(options) else { return 1 }
            started.apply(to: &configuration, options: options)
            demo = started
        }
        guard let proxy = RunningProxy.start(configuration, signals: signals) else { return 1 }
        let server = proxy.server
        signals.serving(logger: proxy.logger, reopen: { server.reopenAuditLog() }) {
            _ = server.reloadConfiguration(
                file: ConfigurationLoader.configFile(for: options.configurationSource),
                isDemo: options.isDemo
            ) { () throws(ConfigurationErrors) in try ConfigurationLoader.load(options.configurationSource) }
        }
        for address in server.boundAddresses {
            proxy.logger.announce(
                "listening on \(address)",
                ["upstream": configuration.upstream?.description ?? "-", "workers": "\(configuration.workers)"]
            )
        }
        for (name, address) in server.sessionAddresses {
            let upstream = configuration.session(named: name)?.upstream?.description ?? "-"
            proxy.logger.announce("listening on \(address)", ["session": name, "upstream": upstream])
        }
        if let demo {
            writeStandardError(demo.banner(proxy: server.boundAddresses[0], admin: server.adminAddress))
        }
        signals.waitForStopRequest()
        proxy.stop()
        demo?.stop()
        return 0
    }

    /// `--check`: leaves no file behind, so signals keep their default meaning (a killed check is not a pass).
    static func check(_ options: Options) -> Int32 {
        guard var configuration = Self.loadConfiguration(options) else { return 1 }
        if let path = ConfigurationLoader.configFile(for: options.configurationSource) {
            Console.write("# read from \(path)\n", to: STDOUT_FILENO)
        }
        if options.isDemo {
            guard let demo = Self.startDemo(options) else { return 1 }
            defer { demo.stop() }
            demo.apply(to: &configuration, options: options)
            Console.write(
                "# --demo: the mock API and token server listen on free loopback ports, new ones each run\n",
                to: STDOUT_FILENO
            )
        }
        do throws(DiscoveryError) {
            configuration = try AuthorizationServerDiscovery.fill(configuration)
        } catch {
            writeStandardError("Error: \(error)\n")
            return 1
        }
        Console.write(ConfigurationLoader.report(configuration), to: STDOUT_FILENO)
        guard Self.reportCredentialStores(of: configuration) else { return 1 }
        let warnings = configuration.warnings
        if !warnings.isEmpty {
            // After the report, so that a terminal shows them next to the verdict rather than above it.
            writeStandardError(warnings.map { "Warning: \($0)\n" }.joined())
        }
        let count = warnings.isEmpty ? "" : " (\(warnings.count) warning\(warnings.count == 1 ? "" : "s"))"
        Console.write("configuration OK\(count)\n", to: STDOUT_FILENO)
        return 0
    }

    /// `# credential_store [session NAME]: secret-service on unix:path=…: why` for each session that
    /// keeps a refresh token: the store the proxy would choose now (asking the bus, never reading a
    /// secret). False after saying why none can be chosen (secret-service without a bus).
    static func reportCredentialStores(of configuration: Configuration) -> Bool {
        for session in configuration.sessions where session.effectiveGrantType == .refreshToken {
            do throws(RefreshTokenStore.StoreError) {
                let choice = try CredentialStoreChoice.choose(
                    for: session,
                    environment: ProcessInfo.processInfo.environment
                )
                let which = session.name == Configuration.defaultSessionName ? "" : " [session \(session.name)]"
                Console.write("# credential_store\(which): \(choice.summary)\n", to: STDOUT_FILENO)
                Self.reportKeyringClient(of: session, in: choice, which: which)
            } catch {
                writeStandardError("Error: \(error)\n")
                return false
            }
        }
        return true
    }

    /// `# client_id …` for a client login registered and kept in the keyring: the file store's client
    /// shows in the report as its `client_id` line, this one only once the store is chosen. Its
    /// client_id is no credential (a public client), so it is shown.
    private static func reportKeyringClient(
        of session: SessionSettings,
        in choice: CredentialStoreChoice,
        which: String
    ) {
        guard session.clientID == nil, let endpoint = session.registrationURL,
            let item = KeyringRegisteredClient(choice.keyring, of: session),
            let registered = item.stored(for: endpoint.description)
        else { return }
        Console.write(
            "# client_id\(which): \(registered.clientID), registered at \(endpoint) by login, kept in \(item.description)\n",
            to: STDOUT_FILENO
        )
    }

    /// The demo's mock servers (`--demo json`: the JSON backend), or nil after saying on stderr why they
    /// could not start.
    static func startDemo(_ options: Options) -> DemoMode? {
        do throws(IOError) {
            return try DemoMode.start(backend: options.isJSONDemo ? .json : .oauth2)
        } catch {
            writeStandardError("Error: cannot start the demo servers: \(error)\n")
            return nil
        }
    }

    /// The configuration, or nil after saying on stderr everything that is wrong with it, one line each.
    static func loadConfiguration(_ options: Options) -> Configuration? {
        do throws(ConfigurationErrors) {
            return try ConfigurationLoader.load(options.configurationSource)
        } catch {
            writeStandardError(error.errors.map { "Error: \($0)\n" }.joined())
            return nil
        }
    }
}
