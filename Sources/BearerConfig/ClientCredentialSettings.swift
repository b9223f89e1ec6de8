import BearerCrypto
import BearerIO

/// What proves who the proxy is without a client secret (README, "Service accounts and locked-down
/// APIs"): a key that signs JWTs (private_key_jwt, jwt_bearer), a service-account file, a TLS client
/// certificate.
///
/// The config file gives paths; the keys are read once every key is read (`loadKeyFiles`), at start
/// and for `--check`, so that a file that cannot be used stops the proxy before it serves.
package struct ClientCredentialSettings: Sendable {
    /// client_key_file, and the key read from it.
    package var keyFile: String?
    package var key: SigningKey?
    /// client_key_id: the signed JWT's `kid`.
    package var keyID: String?
    /// jwt_bearer's `iss` (default client_id) and `sub`.
    package var assertionIssuer: String?
    package var assertionSubject: String?
    /// service_account_file, and what it holds.
    package var serviceAccountFile: String?
    package var serviceAccount: ServiceAccountKey?
    /// tls_client_cert and tls_client_key, and the certificate read from them.
    package var tlsCertificateFile: String?
    package var tlsKeyFile: String?
    package var tlsCertificate: TLSClientCertificate?
    /// Key files other users may read (a warning).
    package var filesReadableByOthers: [(key: String, path: String)] = []

    package init() {}
}
