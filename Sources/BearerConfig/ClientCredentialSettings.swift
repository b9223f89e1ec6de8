import BearerCrypto
import BearerIO

/// What proves who the proxy is without a client secret (docs/token-sources.md, "Service accounts and locked-down
/// APIs"): a key that signs JWTs (private_key_jwt, jwt_bearer), a service-account file, a TLS client
/// certificate.
///
/// The config file gives paths. Loading reads the files once every key is read (`loadKeyFiles`),
/// so that a file that cannot be used stops the proxy before it serves and `--check` names it, and
/// keeps only what it learned of them (`found`); the keys themselves are read again by the start-up
/// that signs with them (`SessionCredentials`).
package struct ClientCredentialSettings: Sendable {
    /// client_key_file.
    package var keyFile: String?
    /// client_key_id: the signed JWT's `kid`.
    package var keyID: String?
    /// jwt_bearer's `iss` (default client_id) and `sub`.
    package var assertionIssuer: String?
    package var assertionSubject: String?
    /// service_account_file.
    package var serviceAccountFile: String?
    /// tls_client_cert and tls_client_key.
    package var tlsCertificateFile: String?
    package var tlsKeyFile: String?
    /// What loading read in those files.
    package var found = KeyFileFacts()

    package init() {}
}

/// What loading learned of a session's key files: what `--check`, the rules about settings together
/// and the start-up line show. Nothing secret, and never a key.
package struct KeyFileFacts: Sendable {
    /// client_key_file's key: `EC P-256, ES256`, and its algorithm.
    package var key: (description: String, algorithm: JWSAlgorithm)?
    /// service_account_file: whom it names, and `client_email=…, private_key_id=…; EC P-256, ES256`.
    package var serviceAccount: (clientEmail: String, summary: String)?
    /// tls_client_cert with tls_client_key: the leaf's subject, how many certificates, the key's kind.
    package var certificate: (subject: String, count: Int, keyKind: String)?
    /// Key files other users may read (a warning).
    package var readableByOthers: [(key: String, path: String)] = []

    package init() {}
}
