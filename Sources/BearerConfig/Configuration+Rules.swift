/// The rules about settings together, run once every key is read, for each session with the
/// process's settings (see `ConfigurationDiagnostics` for how to add one).
extension Configuration {
    /// Runs `body` on each session in turn, the default one first, with `diagnostics` placing
    /// findings at that session's lines.
    mutating func forEverySession(
        _ diagnostics: inout ConfigurationDiagnostics,
        _ body: (inout SessionSettings, ProcessSettings, inout ConfigurationDiagnostics) -> Void
    ) {
        for index in self.sessions.indices {
            let name = self.sessions[index].name
            diagnostics.enter(section: index == 0 ? nil : name, places: self.places(of: name))
            body(&self.sessions[index], self.process, &diagnostics)
        }
        diagnostics.enter(section: nil, places: self.places(of: Self.defaultSessionName))
    }

    /// What start-up logs at warn and `--check` prints: settings that work, but surely not as meant,
    /// in every session.
    package var warnings: [ConfigurationWarning] {
        var diagnostics = ConfigurationDiagnostics()
        var copy = self
        let isUnusedDefault = self.isUnusedDefault
        copy.forEverySession(&diagnostics) { session, process, diagnostics in
            session.validate(process: process, isUnusedDefault: isUnusedDefault, into: &diagnostics)
        }
        return diagnostics.sortedWarnings
    }

    /// The first error of the rules about the default session's settings together, thrown (for
    /// callers that stop at one).
    func validateCombinations(place: String) throws(ConfigurationError) {
        var places = self.places(of: Self.defaultSessionName)
        places.file = places.file ?? place
        var diagnostics = ConfigurationDiagnostics(places: places)
        self.defaultSession.validate(process: self.process, isUnusedDefault: self.isUnusedDefault, into: &diagnostics)
        try diagnostics.throwFirstError()
    }

    /// A default session left empty beside named ones: no mistake, it takes no requests.
    var isUnusedDefault: Bool { !self.hasDefaultSession && !self.namedSessions.isEmpty }
}

extension SessionSettings {
    /// Every rule about this session's settings together (`isUnusedDefault`: it is the default
    /// session, left empty beside named ones): errors, then warnings.
    func validate(
        process: ProcessSettings,
        isUnusedDefault: Bool,
        into diagnostics: inout ConfigurationDiagnostics
    ) {
        self.validateTokenSettings(into: &diagnostics)
        self.validateJSONAndLogin(into: &diagnostics)
        self.validateClientCredentials(into: &diagnostics)
        self.validateDPoP(process: process, into: &diagnostics)
        self.warnAboutUnsafeSettings(process: process, into: &diagnostics)
        self.warnAboutSettingsWithoutEffect(process: process, isUnusedDefault: isUnusedDefault, into: &diagnostics)
    }

    /// The token source and the grant: what each needs.
    private func validateTokenSettings(into diagnostics: inout ConfigurationDiagnostics) {
        if self.tokenURL != nil && self.tokenCommand != nil {
            diagnostics.error(.tokenCommand, "set either \(Key.tokenURL) or \(Key.tokenCommand), not both")
        }
        if self.refreshToken != nil && self.refreshTokenFile != nil {
            diagnostics.error(
                .refreshTokenFile,
                "set either \(Key.refreshToken) or \(Key.refreshTokenFile), not both"
            )
        }
        guard self.tokenURL != nil, self.tokenFormat == .form else { return }
        let grant = self.effectiveGrantType
        switch grant {
        case .refreshToken:
            // Without either, `auto` and `secret-service` keep it in the keyring or the state folder's file.
            if self.refreshToken == nil && self.refreshTokenFile == nil && self.credentialStore == .file {
                diagnostics.error(
                    .grantType,
                    "\(grant.rawValue) needs \(Key.refreshToken) or \(Key.refreshTokenFile)",
                    alsoAt: [.tokenURL]
                )
            }
        case .clientCredentials:
            if self.clientID == nil {
                diagnostics.error(
                    .grantType,
                    "\(grant.rawValue) needs \(Key.clientID) (and usually \(Key.clientSecret))",
                    alsoAt: [.tokenURL]
                )
            }
        case .password:
            if self.username == nil || self.password == nil {
                diagnostics.error(
                    .grantType,
                    "\(grant.rawValue) needs \(Key.username) and \(Key.password)",
                    alsoAt: [.tokenURL]
                )
            }
        case .jwtBearer:
            break  // validateClientCredentials: a key and an issuer
        }
    }
}
