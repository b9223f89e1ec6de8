import BearerCrypto
import BearerIO

extension Configuration {
    /// The keys of DPoP (RFC 9449): session keys, so each session has its own key.
    static let dpopKeys: [ConfigurationKey] = [
        ConfigurationKey("dpop", scope: .session, show: { $0.dpop.isEnabled ? "on" : "off" }) { value, config in
            guard let isEnabled = ValueParsers.bool(value) else { return "expected on or off, got '\(value)'" }
            config.dpop.isEnabled = isEnabled
            return nil
        },
        ConfigurationKey(
            "dpop_key_file",
            scope: .session,
            show: { config in
                guard let path = config.dpop.keyFile else { return nil }
                guard config.dpop.isEnabled else { return path }
                guard let thumbprint = config.dpop.thumbprint else {
                    return "\(path) (no key yet: the proxy's start or bearer-proxy login makes it)"
                }
                return "\(path) (EC P-256, ES256, thumbprint \(thumbprint))"
            }
        ) { value, config in
            guard !value.isEmpty else { return "expected a file path" }
            config.dpop.keyFile = ValueParsers.expandingHome(value)
            return nil
        },
    ]

    /// DPoP and a fleet's shared session do not mix: the store carries a token, not its type (a
    /// DPoP-bound token adopted by another proxy would go out as a bearer token), and each proxy
    /// would prove with a key of its own that the token is not bound to.
    func validateDPoP(into diagnostics: inout ConfigurationDiagnostics) {
        guard self.dpop.isEnabled, self.sessionStore.endpoint != nil else { return }
        let store = diagnostics.places.byKey["session_store"].map { " (\($0))" } ?? ""
        diagnostics.error(
            "dpop",
            "cannot be combined with session_store\(store): a fleet's shared session carries neither the token's"
                + " type nor the DPoP key; turn dpop off or use this session without session_store",
            alsoAt: ["session_store"]
        )
    }

    /// With dpop on, checks the session's DPoP key when its file exists and keeps its thumbprint; a
    /// key not made yet is no error (the proxy's start or `login` makes it: loading writes nothing).
    /// An error at the key's line (or the session's) naming the file when it cannot be used.
    mutating func readDPoPKey(environment: [String: String], into diagnostics: inout ConfigurationDiagnostics) {
        guard self.dpop.isEnabled else { return }
        if self.dpop.keyFile == nil {
            self.dpop.keyFile = DPoPKeyFile.defaultPath(session: self.dpop.sectionName, environment: environment)
        }
        let place = DPoPSettings.place(in: self.settingPlaces)
        guard let path = self.dpop.keyFile else {
            diagnostics.lineError(
                ConfigurationError(
                    place: place,
                    key: "dpop_key_file",
                    message: "no default without HOME or XDG_DATA_HOME; set dpop_key_file"
                )
            )
            return
        }
        do throws(PEMPrivateKey.LoadError) {
            self.dpop.thumbprint = try DPoPKeyFile.loadIfPresent(path).map(DPoPProver.thumbprint(of:))
        } catch {
            diagnostics.lineError(ConfigurationError(place: place, key: "dpop_key_file", message: error.description))
        }
    }
}
