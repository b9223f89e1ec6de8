/// The rules of signing keys, service accounts, TLS client certificates and resource indicators
/// (docs/token-sources.md, "Service accounts and locked-down APIs").
extension SessionSettings {
    /// The keys of this room that send something to the token endpoint, and only there.
    static let clientCredentialTokenKeys: [ConfigurationKey] = [
        .clientKeyFile, .clientKeyID, .assertionIssuer, .assertionSubject, .serviceAccountFile, .resource,
    ]

    /// For the start-up line: how the token requests are signed, ` (private_key_jwt ES256)`, or the
    /// service account they act as. Nothing secret.
    package var signingSummary: String {
        var parts: [String] = []
        if let account = self.credentials.found.serviceAccount {
            parts.append("service account \(account.clientEmail)")
        }
        if self.clientAuthentication != .basic && self.clientAuthentication != .post {
            parts.append(
                self.clientAuthentication.rawValue
                    + (self.clientAuthentication == .privateKeyJWT
                        ? (self.credentials.found.key.map { " \($0.algorithm.rawValue)" } ?? "") : "")
            )
        }
        return parts.isEmpty ? "" : " (\(parts.joined(separator: ", ")))"
    }

    func validateClientCredentials(into diagnostics: inout ConfigurationDiagnostics) {
        let credentials = self.credentials
        if credentials.tlsCertificateFile != nil && credentials.tlsKeyFile == nil {
            diagnostics.error(.tlsClientCert, "needs \(Key.tlsClientKey) (the certificate's private key)")
        }
        if credentials.tlsKeyFile != nil && credentials.tlsCertificateFile == nil {
            diagnostics.error(.tlsClientKey, "needs \(Key.tlsClientCert) (the certificate it belongs to)")
        }
        for (name, path) in credentials.found.readableByOthers {
            diagnostics.warning(
                Configuration.key(named: name),
                "\(path) can be read by other users of this machine (chmod 600 \(path))"
            )
        }
        if credentials.serviceAccountFile != nil {
            if let grant = self.grantType, grant != .jwtBearer {
                diagnostics.error(
                    .serviceAccountFile,
                    "implies \(Key.grantType) = \(GrantType.jwtBearer.rawValue); remove \(Key.grantType) = \(grant.rawValue)",
                    alsoAt: [.grantType]
                )
            }
            if credentials.keyFile != nil {
                diagnostics.error(
                    .clientKeyFile,
                    "set either \(Key.clientKeyFile) or \(Key.serviceAccountFile), not both (the service account holds its key)"
                )
            }
        }
        guard self.tokenFormat == .form else {
            self.refuseForJSONBackends(into: &diagnostics)
            return
        }
        guard self.tokenURL != nil else { return }
        self.validateSigning(into: &diagnostics)
        if self.clientAuthentication == .tlsClientAuth {
            let method = self.clientAuthentication.rawValue
            if self.clientID == nil && self.effectiveGrantType != .clientCredentials {
                diagnostics.error(.clientAuth, "\(method) needs \(Key.clientID) (the only thing it sends)")
            }
            if credentials.tlsCertificateFile == nil {
                diagnostics.error(
                    .clientAuth,
                    "\(method) needs \(Key.tlsClientCert) and \(Key.tlsClientKey) (the certificate is the credential)"
                )
            }
        }
        if self.clientSecret != nil, [.privateKeyJWT, .tlsClientAuth].contains(self.clientAuthentication) {
            diagnostics.warning(
                .clientSecret,
                "is not sent with \(Key.clientAuth) = \(self.clientAuthentication.rawValue)",
                alsoAt: [.clientAuth]
            )
        }
    }

    /// private_key_jwt and jwt_bearer: a key to sign with, and whom the assertion names.
    private func validateSigning(into diagnostics: inout ConfigurationDiagnostics) {
        let credentials = self.credentials
        let grant = self.effectiveGrantType
        let signsClientAssertion = self.clientAuthentication == .privateKeyJWT
        let privateKeyJWT = ClientAuthentication.privateKeyJWT.rawValue
        let jwtBearer = GrantType.jwtBearer.rawValue
        if signsClientAssertion {
            if self.clientID == nil && grant != .clientCredentials {
                diagnostics.error(.clientAuth, "\(privateKeyJWT) needs \(Key.clientID) (the assertion's iss and sub)")
            }
            if credentials.keyFile == nil {
                diagnostics.error(
                    .clientAuth,
                    "\(privateKeyJWT) needs \(Key.clientKeyFile) (the key that signs the assertion)"
                )
            }
        }
        if grant == .jwtBearer {
            if credentials.keyFile == nil && credentials.serviceAccountFile == nil {
                diagnostics.error(
                    .grantType,
                    "\(jwtBearer) needs \(Key.clientKeyFile) or \(Key.serviceAccountFile) (the key that signs the grant)",
                    alsoAt: [.tokenURL]
                )
            }
            if credentials.assertionIssuer == nil && self.clientID == nil && credentials.serviceAccountFile == nil {
                diagnostics.error(
                    .grantType,
                    "\(jwtBearer) needs \(Key.assertionIssuer) or \(Key.clientID) (the assertion's iss)",
                    alsoAt: [.tokenURL]
                )
            }
        } else {
            for key in [Key.assertionIssuer, .assertionSubject] where diagnostics.places[key] != nil {
                diagnostics.warning(key, "is not used by \(Key.grantType) = \(grant.rawValue)", alsoAt: [.grantType])
            }
        }
        if credentials.keyFile != nil && !signsClientAssertion && grant != .jwtBearer {
            diagnostics.warning(
                .clientKeyFile,
                "is not used: set \(Key.clientAuth) = \(privateKeyJWT), or \(Key.grantType) = \(jwtBearer)"
            )
        }
        if credentials.serviceAccountFile != nil {
            for (key, why) in [
                (Key.clientKeyID, "the service account's private_key_id is the kid"),
                (Key.assertionIssuer, "the service account's client_email is the issuer"),
            ] where diagnostics.places[key] != nil {
                diagnostics.warning(key, "is not used: \(why)", alsoAt: [.serviceAccountFile])
            }
        } else if credentials.keyID != nil && credentials.keyFile == nil {
            diagnostics.warning(.clientKeyID, "is not used without \(Key.clientKeyFile)")
        }
    }

    /// A JSON backend signs nothing and sends no resource indicators.
    private func refuseForJSONBackends(into diagnostics: inout ConfigurationDiagnostics) {
        let formOnly = "applies to \(Key.tokenFormat) = \(TokenFormat.form.rawValue)"
        for key in Self.clientCredentialTokenKeys where diagnostics.places[key] != nil {
            diagnostics.error(key, formOnly, alsoAt: [.tokenFormat])
        }
        if [.privateKeyJWT, .tlsClientAuth].contains(self.clientAuthentication) {
            diagnostics.error(.clientAuth, "\(self.clientAuthentication.rawValue) \(formOnly)", alsoAt: [.tokenFormat])
        }
        if self.grantType == .jwtBearer {
            diagnostics.error(.grantType, "\(GrantType.jwtBearer.rawValue) \(formOnly)", alsoAt: [.tokenFormat])
        }
    }
}
