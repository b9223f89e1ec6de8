/// The rules of signing keys, service accounts, TLS client certificates and resource indicators
/// (README, "Service accounts and locked-down APIs").
extension Configuration {
    /// The keys of this room that send something to the token endpoint, and only there.
    static let clientCredentialTokenKeys = [
        "client_key_file", "client_key_id", "assertion_issuer", "assertion_subject", "service_account_file", "resource",
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
            diagnostics.error("tls_client_cert", "needs tls_client_key (the certificate's private key)")
        }
        if credentials.tlsKeyFile != nil && credentials.tlsCertificateFile == nil {
            diagnostics.error("tls_client_key", "needs tls_client_cert (the certificate it belongs to)")
        }
        for (key, path) in credentials.found.readableByOthers {
            diagnostics.warning(key, "\(path) can be read by other users of this machine (chmod 600 \(path))")
        }
        if credentials.serviceAccountFile != nil {
            if let grant = self.grantType, grant != .jwtBearer {
                diagnostics.error(
                    "service_account_file",
                    "implies grant_type = jwt_bearer; remove grant_type = \(grant.rawValue)",
                    alsoAt: ["grant_type"]
                )
            }
            if credentials.keyFile != nil {
                diagnostics.error(
                    "client_key_file",
                    "set either client_key_file or service_account_file, not both (the service account holds its key)"
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
            if self.clientID == nil && self.effectiveGrantType != .clientCredentials {
                diagnostics.error("client_auth", "tls_client_auth needs client_id (the only thing it sends)")
            }
            if credentials.tlsCertificateFile == nil {
                diagnostics.error(
                    "client_auth",
                    "tls_client_auth needs tls_client_cert and tls_client_key (the certificate is the credential)"
                )
            }
        }
        if self.clientSecret != nil, [.privateKeyJWT, .tlsClientAuth].contains(self.clientAuthentication) {
            diagnostics.warning(
                "client_secret",
                "is not sent with client_auth = \(self.clientAuthentication.rawValue)",
                alsoAt: ["client_auth"]
            )
        }
    }

    /// private_key_jwt and jwt_bearer: a key to sign with, and whom the assertion names.
    private func validateSigning(into diagnostics: inout ConfigurationDiagnostics) {
        let credentials = self.credentials
        let grant = self.effectiveGrantType
        let signsClientAssertion = self.clientAuthentication == .privateKeyJWT
        if signsClientAssertion {
            if self.clientID == nil && grant != .clientCredentials {
                diagnostics.error("client_auth", "private_key_jwt needs client_id (the assertion's iss and sub)")
            }
            if credentials.keyFile == nil {
                diagnostics.error(
                    "client_auth",
                    "private_key_jwt needs client_key_file (the key that signs the assertion)"
                )
            }
        }
        if grant == .jwtBearer {
            if credentials.keyFile == nil && credentials.serviceAccountFile == nil {
                diagnostics.error(
                    "grant_type",
                    "jwt_bearer needs client_key_file or service_account_file (the key that signs the grant)",
                    alsoAt: ["token_url"]
                )
            }
            if credentials.assertionIssuer == nil && self.clientID == nil && credentials.serviceAccountFile == nil {
                diagnostics.error(
                    "grant_type",
                    "jwt_bearer needs assertion_issuer or client_id (the assertion's iss)",
                    alsoAt: ["token_url"]
                )
            }
        } else {
            for key in ["assertion_issuer", "assertion_subject"] where self.settingPlaces.byKey[key] != nil {
                diagnostics.warning(key, "is not used by grant_type = \(grant.rawValue)", alsoAt: ["grant_type"])
            }
        }
        if credentials.keyFile != nil && !signsClientAssertion && grant != .jwtBearer {
            diagnostics.warning(
                "client_key_file",
                "is not used: set client_auth = private_key_jwt, or grant_type = jwt_bearer"
            )
        }
        if credentials.serviceAccountFile != nil {
            for (key, why) in [
                ("client_key_id", "the service account's private_key_id is the kid"),
                ("assertion_issuer", "the service account's client_email is the issuer"),
            ] where self.settingPlaces.byKey[key] != nil {
                diagnostics.warning(key, "is not used: \(why)", alsoAt: ["service_account_file"])
            }
        } else if credentials.keyID != nil && credentials.keyFile == nil {
            diagnostics.warning("client_key_id", "is not used without client_key_file")
        }
    }

    /// A JSON backend signs nothing and sends no resource indicators.
    private func refuseForJSONBackends(into diagnostics: inout ConfigurationDiagnostics) {
        for key in Self.clientCredentialTokenKeys where self.settingPlaces.byKey[key] != nil {
            diagnostics.error(key, "applies to token_format = form", alsoAt: ["token_format"])
        }
        if [.privateKeyJWT, .tlsClientAuth].contains(self.clientAuthentication) {
            diagnostics.error(
                "client_auth",
                "\(self.clientAuthentication.rawValue) applies to token_format = form",
                alsoAt: ["token_format"]
            )
        }
        if self.grantType == .jwtBearer {
            diagnostics.error("grant_type", "jwt_bearer applies to token_format = form", alsoAt: ["token_format"])
        }
    }
}
