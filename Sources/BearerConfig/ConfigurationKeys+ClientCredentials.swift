import BearerCrypto
import BearerIO
import Glibc

extension Configuration {
    /// The keys of service accounts and locked-down APIs: signing keys, JWT bearer claims, a
    /// service-account file, a TLS client certificate, resource indicators.
    static let clientCredentialKeys: [ConfigurationKey] = [
        fileKey("client_key_file", scope: .session, \.credentials.keyFile) { $0.credentials.found.key?.description },
        textKey("client_key_id", scope: .session, \.credentials.keyID),
        textKey("assertion_issuer", scope: .session, \.credentials.assertionIssuer),
        textKey("assertion_subject", scope: .session, \.credentials.assertionSubject),
        fileKey("service_account_file", scope: .session, \.credentials.serviceAccountFile) {
            $0.credentials.found.serviceAccount?.summary
        },
        fileKey("tls_client_cert", scope: .session, \.credentials.tlsCertificateFile) { config in
            config.credentials.found.certificate.map {
                "\($0.subject); \($0.count == 1 ? "1 certificate" : "\($0.count) certificates")"
            }
        },
        fileKey("tls_client_key", scope: .session, \.credentials.tlsKeyFile) { config in
            config.credentials.found.certificate?.keyKind
        },
        ConfigurationKey(
            "resource",
            scope: .session,
            show: { $0.resources.isEmpty ? nil : $0.resources.joined(separator: ", ") }
        ) {
            value,
            config in
            let resources = ValueParsers.list(value)
            guard !resources.isEmpty else { return "expected a comma list of absolute URIs" }
            if let wrong = resources.first(where: { !Self.isResourceIndicator($0) }) {
                return
                    "'\(wrong)' is not an absolute URI without a fragment (RFC 8707 §2), e.g. https://api.example.com/"
            }
            config.resources = resources
            return nil
        },
    ]

    /// A path to a file read at start; `--check` shows the path and, once read, what it holds.
    static func fileKey(
        _ name: String,
        scope: ConfigurationKey.Scope = .process,
        _ path: WritableKeyPath<Configuration, String?> & Sendable,
        holding: @escaping @Sendable (Configuration) -> String?
    ) -> ConfigurationKey {
        ConfigurationKey(
            name,
            scope: scope,
            show: { config in config[keyPath: path].map { path in holding(config).map { "\(path) (\($0))" } ?? path } }
        ) { value, config in
            guard !value.isEmpty else { return "expected a file path" }
            config[keyPath: path] = ValueParsers.expandingHome(value)
            return nil
        }
    }

    /// An absolute URI (`scheme:…`) without a fragment, as RFC 8707 §2 requires of `resource`.
    static func isResourceIndicator(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex, text.index(after: colon) != text.endIndex
        else { return false }
        let scheme = text[..<colon]
        return scheme.first!.isASCII && scheme.first!.isLetter
            && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
            && !text.contains("#") && !text.contains(where: { $0.isWhitespace })
    }

    /// Reads the key files the configuration names, once: client_key_file, service_account_file,
    /// tls_client_cert with tls_client_key (`SessionCredentials.read`), and keeps what it learned of
    /// them, never a key. A file that cannot be used is an error at its key's line naming the file.
    /// The service account's token_uri becomes token_url unless that is set.
    mutating func loadKeyFiles(into diagnostics: inout ConfigurationDiagnostics) {
        let (read, errors) = SessionCredentials.read(self.credentials, places: self.settingPlaces)
        for error in errors { diagnostics.lineError(error) }
        self.credentials.found = read.facts
        if let account = read.serviceAccount, self.tokenURL == nil { self.tokenURL = account.tokenURI }
        let keyFiles = [
            ("client_key_file", read.signingKey.flatMap { _ in self.credentials.keyFile }),
            ("service_account_file", read.serviceAccount.flatMap { _ in self.credentials.serviceAccountFile }),
            ("tls_client_key", read.tlsCertificate.flatMap { _ in self.credentials.tlsKeyFile }),
        ]
        for case let (key, path?) in keyFiles { self.noteIfReadableByOthers(key, path) }
    }

    /// A key file that group or others may read: it works, and `--check` says so.
    private mutating func noteIfReadableByOthers(_ key: String, _ path: String) {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & 0o044 != 0 else { return }
        self.credentials.found.readableByOthers.append((key, path))
    }
}
