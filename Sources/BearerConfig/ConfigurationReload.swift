/// What SIGHUP's re-read of the config changes in a running proxy: the running configuration with
/// every key that can change without dropping a connection taken from the new file, and the names of
/// the keys whose change waits for a restart (docs/operations.md, "Signals").
///
/// What applies live is where a new value takes effect on the next use: the token source and every
/// key and secret it is made of (files re-read, `${VAR}`s re-expanded), scopes, the proactive
/// refresh and the storm guard, revocation and logout, the login keys, `log_level` and `access_log`.
/// The rest is bound into something built once: listeners, loops, routes, TLS contexts, the local CA,
/// the fleet's store, DPoP keys, and the limits every open connection already holds (refresh_on,
/// refresh_timeout, replay_body_limit, the timeouts); those keep their running values.
package struct ConfigurationReload: Sendable {
    /// The configuration in force after the reload.
    package var applied: Configuration
    /// The keys (and sessions) the new file changes that take a restart, in `--check`'s order:
    /// `listen`, `[session github] upstream`, `[session new] (a new session)`.
    package var needsRestart: [String]

    /// `new` (a file read and checked like at start) applied over `running` as far as it can be.
    package init(running: Configuration, new: Configuration) {
        var applied = running
        applied.process.logLevel = new.process.logLevel
        applied.process.accessLog = new.process.accessLog
        applied.provenance = new.provenance
        var needsRestart: [String] = []
        for index in applied.sessions.indices {
            let name = applied.sessions[index].name
            guard let newSession = new.session(named: name) else {
                needsRestart.append("[session \(name)] (removed)")
                applied.provenance.sessions[name] = running.provenance.sessions[name]
                continue
            }
            applied.sessions[index].takeLiveSettings(from: newSession)
            needsRestart += Self.differences(
                (applied.process, applied.sessions[index]),
                (new.process, newSession),
                // The default section's keys are the process's and the default session's.
                keys: Configuration.keys.filter { $0.scope != (index == 0 ? .namedSession : .process) },
                prefix: index == 0 ? "" : "[session \(name)] "
            )
        }
        for session in new.namedSessions where running.session(named: session.name) == nil {
            needsRestart.append("[session \(session.name)] (a new session)")
        }
        self.applied = applied
        self.needsRestart = needsRestart
    }

    /// The keys whose values, as `--check` shows them, differ.
    private static func differences(
        _ applied: (ProcessSettings, SessionSettings),
        _ new: (ProcessSettings, SessionSettings),
        keys: [ConfigurationKey],
        prefix: String
    ) -> [String] {
        keys.filter { $0.show(applied.0, applied.1) != $0.show(new.0, new.1) }.map { prefix + $0.name }
    }
}

extension SessionSettings {
    /// Takes from `new` every session key that applies without a restart (see `ConfigurationReload`).
    /// Every secret key is among them, so that no change hides behind `--check`'s `<redacted>`.
    mutating func takeLiveSettings(from new: SessionSettings) {
        self.accessToken = new.accessToken
        self.refreshToken = new.refreshToken
        self.refreshTokenFile = new.refreshTokenFile
        self.credentialStore = new.credentialStore
        self.tokenURL = new.tokenURL
        self.grantType = new.grantType
        self.clientID = new.clientID
        self.clientSecret = new.clientSecret
        self.scope = new.scope
        self.audience = new.audience
        self.username = new.username
        self.password = new.password
        self.clientAuthentication = new.clientAuthentication
        self.resources = new.resources
        self.tokenCommand = new.tokenCommand
        self.tokenFormat = new.tokenFormat
        self.jsonBackend = new.jsonBackend
        self.login = new.login
        self.revocationURL = new.revocationURL
        self.refreshSkew = new.refreshSkew
        self.maxRefreshes = new.maxRefreshes
        self.refreshWindow = new.refreshWindow
        // The signing credentials (their files are read again when the session's supply is made); the
        // TLS client certificate is bound into the connectors' TLS contexts and waits for a restart.
        self.credentials.keyFile = new.credentials.keyFile
        self.credentials.found.key = new.credentials.found.key
        self.credentials.keyID = new.credentials.keyID
        self.credentials.assertionIssuer = new.credentials.assertionIssuer
        self.credentials.assertionSubject = new.credentials.assertionSubject
        self.credentials.serviceAccountFile = new.credentials.serviceAccountFile
        self.credentials.found.serviceAccount = new.credentials.found.serviceAccount
    }
}
