import COpenSSL
import Glibc

/// The system's CA certificates, found where OpenSSL looks for them: `$SSL_CERT_FILE` (the variable
/// `X509_get_default_cert_file_env()` names), else `X509_get_default_cert_file()` (on Debian
/// /usr/lib/ssl/cert.pem, a link to /etc/ssl/certs/ca-certificates.crt), else the bundles other
/// distributions keep (Go's list).
package struct SystemTrustStore {
    var environment: [String: String]

    package init(environment: [String: String]) {
        self.environment = environment
    }

    static let distributionBundles = [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/ca-bundle.pem",
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
        "/etc/ssl/cert.pem",
    ]

    /// Where to look, in order.
    var candidates: [String] {
        let variable = String(cString: X509_get_default_cert_file_env())
        let fromEnvironment = self.environment[variable].map { [$0] } ?? []
        return fromEnvironment + [String(cString: X509_get_default_cert_file())] + Self.distributionBundles
    }

    /// The first candidate's bytes that holds a certificate and is not one of `ownFiles`: after
    /// `export SSL_CERT_FILE=…/bundle.pem`, a new bundle must not be made of the old one.
    func certificates(excluding ownFiles: [String]) throws(LocalCAError) -> [UInt8] {
        let own = Set(ownFiles.compactMap(resolvedPath))
        for candidate in self.candidates {
            guard let path = resolvedPath(candidate), !own.contains(path) else { continue }
            guard let bytes = try? CAFiles.contents(of: path, limit: 16 << 20),
                bytes.firstRange(of: Array("-----BEGIN CERTIFICATE-----".utf8)) != nil
            else { continue }
            return bytes
        }
        throw .noSystemTrustStore(looked: self.candidates)
    }
}

/// The path with every link resolved; nil when it does not exist.
private func resolvedPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}
