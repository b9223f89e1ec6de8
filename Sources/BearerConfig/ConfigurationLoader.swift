import FoundationEssentials

/// Reads the config file, applies flags over it, and checks what must be set.
package enum ConfigurationLoader {
    /// Whether the command loading the configuration uses its secrets, which decides what an unset
    /// `${VAR}` in a key that holds one (a key `--check` masks) is.
    package enum SecretUse: Sendable {
        /// The proxy, `--check`, `run`, `login`, `logout`: an error, as in any other key.
        case used
        /// `ca` and `env`, which read the listen addresses, inject hosts, CA folder and upstream, and
        /// send nothing: no error. The `${VAR}` is left as written, and a value its key refuses so is
        /// left unset, so that nothing else fails for want of it either. Nothing may be sent with a
        /// configuration loaded so.
        case unused
    }

    /// The configuration, or every error found in it (each line's own, then the rules about settings
    /// together), so that one run names them all. Its warnings are `Configuration.warnings`.
    package static func load(
        _ source: ConfigurationSource,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        secrets: SecretUse = .used
    ) throws(ConfigurationErrors) -> Configuration {
        let path = Self.configFile(for: source, environment: environment)
        var text: String?
        if let path {
            do throws(ConfigurationError) {
                text = try ConfigFileReader.read(path)
            } catch {
                throw ConfigurationErrors([error])
            }
        }
        let (config, found) = Self.read(
            text,
            fileName: path,
            overrides: source.overrides,
            environment: environment,
            secrets: secrets
        )
        var diagnostics = found
        if !source.isDemo && config.defaultSession.upstream == nil && config.namedSessions.isEmpty {
            let defaultFile = DefaultConfigFile.path(environment: environment) ?? "~/.config/bearer-proxy/proxy.conf"
            let noFile = "required: no config file was given (--config FILE) and \(defaultFile) does not exist"
            let example = "set '\(Key.upstream) = https://api.example.com'"
            let message =
                switch (path == nil, source.takesProxyFlags) {
                case (true, true): "\(noFile); pass --\(Key.upstream) URL, or try --demo"
                case (true, false): "\(noFile); pass --config FILE"
                case (false, true): "required (\(example) or pass --\(Key.upstream) URL; --demo needs none)"
                case (false, false): "required (\(example) in the config file)"
                }
            diagnostics.error(.upstream, message)
        }
        guard diagnostics.errors.isEmpty else { throw ConfigurationErrors(diagnostics.sortedErrors) }
        return config
    }

    /// The configuration a file's `text` and the flags' `overrides` make, and everything found in it:
    /// each line's own errors, then the rules about settings together (errors and warnings).
    package static func read(
        _ text: String?,
        fileName: String?,
        overrides: [ConfigEntry] = [],
        environment: [String: String] = [:],
        secrets: SecretUse = .used
    ) -> (Configuration, ConfigurationDiagnostics) {
        var diagnostics = ConfigurationDiagnostics()
        var entries: [ConfigEntry] = []
        if let text, let fileName {
            entries += ConfigFileParser.parse(
                text,
                fileName: fileName,
                environment: environment,
                unsetAllowedIn: secrets == .used ? [] : Set(Configuration.keys.filter(\.carriesSecrets).map(\.name)),
                into: &diagnostics
            )
        }
        entries += overrides
        var config = Configuration.build(from: entries, into: &diagnostics)
        if config.process.intercept.caDirectory == nil {
            config.process.intercept.caDirectory = InterceptSettings.defaultCADirectory(environment: environment)
        }
        // A finding about the default session as a whole is placed at the file (a named session's at
        // its [session NAME] line).
        config.provenance.file = fileName
        let isUnusedDefault = config.isUnusedDefault
        config.forEverySession(&diagnostics) { session, process, diagnostics in
            session.loadKeyFiles(places: diagnostics.places, into: &diagnostics)
            session.readDPoPKey(environment: environment, places: diagnostics.places, into: &diagnostics)
            session.validate(process: process, isUnusedDefault: isUnusedDefault, into: &diagnostics)
        }
        config.validateSessions(into: &diagnostics)
        config.validateNoSelfLoop(into: &diagnostics)
        return (config, diagnostics)
    }

    /// The file settings come from: `--config`, else the default file when it exists (not with --demo).
    package static func configFile(
        for source: ConfigurationSource,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        if let path = source.configPath { return path }
        return source.isDemo ? nil : DefaultConfigFile.existingPath(environment: environment)
    }

    /// The effective configuration as `key = value` lines, secrets masked (`--check`): every key of
    /// the default session and the process, then each named session's keys under its `[session NAME]`.
    package static func report(_ config: Configuration) -> String {
        var lines = Self.lines(
            of: config.process,
            config.defaultSession,
            keys: Configuration.keys.filter { $0.scope != .namedSession }
        )
        for session in config.namedSessions {
            lines.append("")
            lines.append("[session \(session.name)]")
            lines += Self.lines(of: config.process, session, keys: Configuration.keys.filter { $0.scope != .process })
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func lines(
        of process: ProcessSettings,
        _ session: SessionSettings,
        keys: [ConfigurationKey]
    ) -> [String] {
        keys.map { key in
            let value = key.show(process, session)
            if key.isSecret { return "\(key.name) = \(value == nil ? "(not set)" : "<redacted>")" }
            if let note = session.discovered?.note(for: key.name) {
                return "\(key.name) = \(value ?? "(not set)")  # \(note)"
            }
            return "\(key.name) = \(value ?? "(not set)")"
        }
    }
}
