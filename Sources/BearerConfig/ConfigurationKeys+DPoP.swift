import BearerCrypto
import BearerIO

extension ConfigurationKey {
    // The keys of DPoP (RFC 9449): session keys, so each session has its own key.

    package static let dpop = switchKey("dpop", \SessionSettings.dpop.isEnabled)

    package static let dpopKeyFile = ConfigurationKey(
        "dpop_key_file",
        of: SessionSettings.self,
        show: { session in
            guard let path = session.dpop.keyFile else { return nil }
            guard session.dpop.isEnabled else { return path }
            guard let thumbprint = session.dpop.thumbprint else {
                return "\(path) (no key yet: the proxy's start or bearer-proxy login makes it)"
            }
            return "\(path) (EC P-256, ES256, thumbprint \(thumbprint))"
        }
    ) { value, session in
        guard !value.isEmpty else { return "expected a file path" }
        session.dpop.keyFile = ValueParsers.expandingHome(value)
        return nil
    }
}

extension SessionSettings {
    /// DPoP and a fleet's shared session do not mix: the store carries a token, not its type (a
    /// DPoP-bound token adopted by another proxy would go out as a bearer token), and each proxy
    /// would prove with a key of its own that the token is not bound to.
    func validateDPoP(process: ProcessSettings, into diagnostics: inout ConfigurationDiagnostics) {
        guard self.dpop.isEnabled, process.sessionStore.endpoint != nil else { return }
        let store = diagnostics.places[.sessionStore].map { " (\($0))" } ?? ""
        diagnostics.error(
            .dpop,
            "cannot be combined with \(Key.sessionStore)\(store): a fleet's shared session carries neither the"
                + " token's type nor the DPoP key; turn \(Key.dpop) off or use this session without \(Key.sessionStore)",
            alsoAt: [.sessionStore]
        )
    }

    /// With dpop on, checks the session's DPoP key when its file exists and keeps its thumbprint; a
    /// key not made yet is no error (the proxy's start or `login` makes it: loading writes nothing).
    /// An error at the key's line (or the session's) naming the file when it cannot be used.
    mutating func readDPoPKey(
        environment: [String: String],
        places: SettingPlaces,
        into diagnostics: inout ConfigurationDiagnostics
    ) {
        guard self.dpop.isEnabled else { return }
        if self.dpop.keyFile == nil {
            let section = self.name == Configuration.defaultSessionName ? nil : self.name
            self.dpop.keyFile = DPoPKeyFile.defaultPath(session: section, environment: environment)
        }
        let place = DPoPSettings.place(in: places)
        guard let path = self.dpop.keyFile else {
            diagnostics.lineError(
                ConfigurationError(
                    place: place,
                    key: Key.dpopKeyFile.name,
                    message: "no default without HOME or XDG_DATA_HOME; set \(Key.dpopKeyFile)"
                )
            )
            return
        }
        do throws(PEMPrivateKey.LoadError) {
            self.dpop.thumbprint = try DPoPKeyFile.loadIfPresent(path).map(DPoPProver.thumbprint(of:))
        } catch {
            diagnostics.lineError(
                ConfigurationError(place: place, key: Key.dpopKeyFile.name, message: error.description)
            )
        }
    }
}
