import BearerCrypto
import BearerIO
import Glibc

extension ConfigurationKey {
    // The keys of service accounts and locked-down APIs: signing keys, JWT bearer claims, a
    // service-account file, a TLS client certificate, resource indicators.

    package static let clientKeyFile = fileKey("client_key_file", \.credentials.keyFile) {
        $0.credentials.found.key?.description
    }
    package static let clientKeyID = textKey("client_key_id", \SessionSettings.credentials.keyID)
    package static let assertionIssuer = textKey("assertion_issuer", \SessionSettings.credentials.assertionIssuer)
    package static let assertionSubject = textKey("assertion_subject", \SessionSettings.credentials.assertionSubject)
    package static let serviceAccountFile = fileKey("service_account_file", \.credentials.serviceAccountFile) {
        $0.credentials.found.serviceAccount?.summary
    }
    package static let tlsClientCert = fileKey("tls_client_cert", \.credentials.tlsCertificateFile) { session in
        session.credentials.found.certificate.map {
            "\($0.subject); \($0.count == 1 ? "1 certificate" : "\($0.count) certificates")"
        }
    }
    package static let tlsClientKey = fileKey("tls_client_key", \.credentials.tlsKeyFile) { session in
        session.credentials.found.certificate?.keyKind
    }

    package static let resource = ConfigurationKey(
        "resource",
        of: SessionSettings.self,
        show: { $0.resources.isEmpty ? nil : $0.resources.joined(separator: ", ") }
    ) { value, session in
        let resources = ValueParsers.list(value)
        guard !resources.isEmpty else { return "expected a comma list of absolute URIs" }
        if let wrong = resources.first(where: { !Self.isResourceIndicator($0) }) {
            return "'\(wrong)' is not an absolute URI without a fragment (RFC 8707 §2), e.g. https://api.example.com/"
        }
        session.resources = resources
        return nil
    }

    /// A path to a file read once every key is read; `--check` shows the path and, once read, what it holds.
    static func fileKey(
        _ name: String,
        _ path: WritableKeyPath<SessionSettings, String?> & Sendable,
        holding: @escaping @Sendable (SessionSettings) -> String?
    ) -> ConfigurationKey {
        ConfigurationKey(
            name,
            of: SessionSettings.self,
            show: { session in
                session[keyPath: path].map { path in holding(session).map { "\(path) (\($0))" } ?? path }
            }
        ) { value, session in
            guard !value.isEmpty else { return "expected a file path" }
            session[keyPath: path] = ValueParsers.expandingHome(value)
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
}

extension SessionSettings {
    /// Reads the key files the session names, once: client_key_file, service_account_file,
    /// tls_client_cert with tls_client_key (`SessionCredentials.read`), and keeps what it learned of
    /// them, never a key. A file that cannot be used is an error at its key's line naming the file.
    /// The service account's token_uri becomes token_url unless that is set.
    mutating func loadKeyFiles(places: SettingPlaces, into diagnostics: inout ConfigurationDiagnostics) {
        let (read, errors) = SessionCredentials.read(self.credentials, places: places)
        for error in errors { diagnostics.lineError(error) }
        self.credentials.found = read.facts
        if let account = read.serviceAccount, self.tokenURL == nil { self.tokenURL = account.tokenURI }
        let keyFiles = [
            (Key.clientKeyFile, read.signingKey.flatMap { _ in self.credentials.keyFile }),
            (Key.serviceAccountFile, read.serviceAccount.flatMap { _ in self.credentials.serviceAccountFile }),
            (Key.tlsClientKey, read.tlsCertificate.flatMap { _ in self.credentials.tlsKeyFile }),
        ]
        for case let (key, path?) in keyFiles { self.noteIfReadableByOthers(key, path) }
    }

    /// A key file that group or others may read: it works, and `--check` says so.
    private mutating func noteIfReadableByOthers(_ key: ConfigurationKey, _ path: String) {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & 0o044 != 0 else { return }
        self.credentials.found.readableByOthers.append((key.name, path))
    }
}
