import BearerConfig
import BearerCore
import BearerIO
import BearerSession
import Dispatch
import FoundationEssentials
import Glibc

/// SIGHUP: the config file is read again and what can change is applied while the proxy serves, as
/// `nginx -s reload` and systemd's `ExecReload` lead people to expect (docs/operations.md, "Signals").
extension ProxyServer {
    /// How a re-read ended.
    package enum ReloadOutcome: Equatable, Sendable {
        /// Applied; these keys (`ConfigurationReload.needsRestart`) wait for a restart.
        case applied(needsRestart: [String])
        /// The file has mistakes, one line each (`file:line: key: …`): nothing changed.
        case invalid([String])
        /// Something the new config needs could not be made (a refresh token file's folder, the access
        /// log's file, a key file changed since it was read): nothing changed.
        case refused(String)
        /// Nothing to read again: `--demo`, flags alone, or a config that came from a pipe (it cannot be
        /// read twice). The sessions are refreshed all the same.
        case notReread(String)
    }

    /// SIGHUP: reads the config again (`load`), applies it when it is valid, logs how that went, then
    /// refreshes every session that can refresh (a permanent failure or a logout ends with it), with
    /// the credentials it applied. A file that cannot be applied changes nothing, no token either.
    package func reloadConfiguration(
        file: String?,
        isDemo: Bool,
        load: () throws(ConfigurationErrors) -> Configuration
    ) -> ReloadOutcome {
        let logger = self.runtime.logger
        let outcome: ReloadOutcome
        if let reason = Self.whyNotReread(file: file, isDemo: isDemo) {
            outcome = .notReread(reason)
            logger.info("SIGHUP: refreshing the sessions; the config is not read again", ["reason": reason])
        } else {
            do throws(ConfigurationErrors) {
                outcome = self.reload(to: try load())
            } catch {
                outcome = .invalid(error.errors.map(\.description))
            }
            Self.log(outcome, file: file ?? "", logger: logger)
        }
        switch outcome {
        case .applied, .notReread:
            for session in self.runtime.sessions where session.tokens.source != nil {
                session.tokens.forceRefresh(trigger: "SIGHUP")
            }
        case .invalid, .refused:
            break
        }
        return outcome
    }

    /// Applies `loaded` (checked like at start, each `issuer`'s metadata read again) as far as it can change while the proxy serves: every
    /// session's token supply, `log_level`, `access_log`. Everything it needs is made first, so that a
    /// failure changes nothing.
    package func reload(to loaded: Configuration) -> ReloadOutcome {
        let new: Configuration
        do throws(DiscoveryError) {
            new = try AuthorizationServerDiscovery.fill(loaded)
        } catch {
            return .refused(error.description)
        }
        let running = self.configurationInForce.withLock { $0 }
        let reload = ConfigurationReload(running: running, new: new)
        var supplies: [(TokenSession, TokenSupply)] = []
        let accessLog: LogSink?
        do throws(StartError) {
            for session in self.runtime.sessions {
                guard let maker = session.supplies,
                    let settings = reload.applied.session(named: session.name),
                    let before = running.session(named: session.name)
                else { continue }
                let store = try Self.store(settings, replacing: session.tokens.store, configuredAs: before)
                let credentials: SessionCredentials
                do throws(ConfigurationError) {
                    credentials = try SessionCredentials(
                        reading: settings,
                        places: reload.applied.places(of: settings.name)
                    )
                } catch {
                    throw StartError(description: error.description)
                }
                supplies.append((session.tokens, maker.supply(settings, credentials: credentials, store: store)))
            }
            accessLog =
                reload.applied.process.accessLog == running.process.accessLog
                ? self.runtime.accessLog : try ProxyBuilder.openAccessLog(reload.applied.process.accessLog)
        } catch {
            return .refused(error.description)
        }
        self.runtime.logger.changeLevel(to: reload.applied.process.logLevel)
        if reload.applied.process.accessLog != running.process.accessLog { self.changeAccessLog(to: accessLog) }
        for (tokens, supply) in supplies { tokens.reconfigure(supply) }
        self.configurationInForce.withLock { $0 = reload.applied }
        return .applied(needsRestart: reload.needsRestart)
    }

    /// The refresh token store for `settings`: the running one when its refresh token settings did
    /// not change (its file read again; an inline token it rotated is kept), else a new one.
    private static func store(
        _ settings: SessionSettings,
        replacing current: RefreshTokenStore?,
        configuredAs before: SessionSettings
    ) throws(StartError) -> RefreshTokenStore? {
        do throws(RefreshTokenStore.StoreError) {
            if let current, settings.refreshTokenFile == before.refreshTokenFile,
                settings.refreshToken == before.refreshToken, settings.credentialStore == before.credentialStore
            {
                _ = try current.reload()
                return current
            }
            return try CredentialStoreChoice.choose(for: settings, environment: ProcessInfo.processInfo.environment)
                .open(for: settings)
        } catch {
            throw StartError(description: error.description)
        }
    }

    /// SIGUSR1: opens the audit log's file again, by its path (logrotate moved the old one away, or a
    /// file that could not be opened may be openable now). Lines already gathered go to the old file;
    /// every later one to the new: none is lost, none written twice.
    package func reopenAuditLog() {
        let destination = self.configurationInForce.withLock { $0 }.process.auditLog
        guard case .file = destination else { return }
        let sink = AuditLogFile.open(destination, logger: self.runtime.logger)
        _ = self.runtime.replaceAuditLog(with: sink)
        self.onEveryLoop { context in
            context.auditLog?.flush()
            context.auditLog = sink.map {
                AuditLogBuffer(sink: $0, loop: context.loop, recent: context.runtime.recentExchanges)
            }
        }
        self.runtime.logger.info(
            "SIGUSR1: the audit log was opened again",
            ["\(ConfigurationKey.auditLog)": "\(destination)"]
        )
    }

    /// Moves every loop's access log buffer to `sink` (nil: off), each on its loop after writing out
    /// what it holds; returns once every loop has.
    private func changeAccessLog(to sink: LogSink?) {
        _ = self.runtime.replaceAccessLog(with: sink)
        self.onEveryLoop { context in
            context.accessLog?.flush()
            context.accessLog = sink.map {
                AccessLogBuffer(sink: $0, loop: context.loop, namesSessions: context.runtime.namesSessions)
            }
        }
    }

    /// Runs `change` on each loop, with that loop's context; returns once every loop has.
    private func onEveryLoop(_ change: @escaping @Sendable (LoopContext) -> Void) {
        let done = DispatchSemaphore(value: 0)
        let contexts = self.contexts.withLock { $0 }
        for context in contexts {
            context.value.loop.execute {
                change(context.value)
                done.signal()
            }
        }
        for _ in contexts { done.wait() }
    }

    /// Why the config is not read again, or nil when it is.
    private static func whyNotReread(file: String?, isDemo: Bool) -> String? {
        if isDemo { return "--demo: the demo's settings are made at start" }
        guard let file else { return "no config file: the settings came from flags" }
        var info = stat()
        guard stat(file, &info) == 0 else { return nil }  // the load names what is wrong with it
        guard info.st_mode & S_IFMT == S_IFREG else {
            return "\(file) is not a regular file (a pipe cannot be read twice): restart to apply a new config"
        }
        return nil
    }

    private static func log(_ outcome: ReloadOutcome, file: String, logger: Logger) {
        switch outcome {
        case .applied(let needsRestart):
            logger.info("SIGHUP: configuration re-read and applied", ["file": file])
            if !needsRestart.isEmpty {
                logger.warn(
                    "SIGHUP: restart to apply these changes; they keep their running values until then",
                    ["keys": needsRestart.joined(separator: ", ")]
                )
            }
        case .invalid(let errors):
            var metadata: KeyValuePairs<String, String> = ["error": errors.first ?? ""]
            if errors.count > 1 {
                metadata = ["error": errors[0], "more": "\(errors.count - 1) (bearer-proxy --check --config \(file))"]
            }
            logger.error("SIGHUP: the config file has errors; the running configuration stays", metadata)
        case .refused(let reason):
            logger.error("SIGHUP: the new configuration cannot be applied; the running one stays", ["error": reason])
        case .notReread:
            break
        }
    }
}
