import BearerCrypto
import BearerIO

/// A PEM private key file (client_key_file, dpop_key_file, tls_client_key), then the signing key
/// made from it, as the proxy loads one.
enum PEMFuzz {
    static func run(_ input: [UInt8]) {
        guard let key = try? PEMPrivateKey.parse(pem: input) else { return }
        _ = try? SigningKey(key)
    }
}
