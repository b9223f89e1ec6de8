import BearerHTTP
import BearerIO
import Glibc

extension LocalCA {
    /// The CA in `files`, made there for `patterns` when there is none; checked against `patterns`.
    /// Never replaces a CA that is there: one that does not fit is an error naming `--renew`.
    package static func open(
        _ files: CAFiles,
        permitting patterns: [HostPattern],
        now: Int64
    ) throws(LocalCAError) -> (ca: LocalCA, wasCreated: Bool) {
        try files.withLock { () throws(LocalCAError) -> (ca: LocalCA, wasCreated: Bool) in
            if let existing = try Self.read(files, now: now) {
                try existing.check(permits: patterns, rootFile: files.root)
                return (existing, false)
            }
            let made = try Self.make(permitting: patterns, now: now)
            try made.write(to: files)
            return (made, true)
        }
    }

    /// A new root and intermediate for `patterns` in place of whatever `files` holds; bundle.pem, when
    /// there is one, is rewritten with the new root.
    package static func renew(
        _ files: CAFiles,
        permitting patterns: [HostPattern],
        now: Int64,
        trustStore: SystemTrustStore
    ) throws(LocalCAError) -> LocalCA {
        try files.withLock { () throws(LocalCAError) -> LocalCA in
            let made = try Self.make(permitting: patterns, now: now)
            try made.write(to: files)
            if access(files.bundle, F_OK) == 0 { try made.writeBundle(to: files, trustStore: trustStore) }
            return made
        }
    }

    /// bundle.pem: the system's CA certificates followed by ca.pem, for clients that take one file
    /// (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE): pointing them at ca.pem alone would make
    /// every other host untrusted.
    package func writeBundle(to files: CAFiles, trustStore: SystemTrustStore) throws(LocalCAError) {
        var bytes = try trustStore.certificates(excluding: [files.bundle, files.root])
        if let last = bytes.last, last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
        bytes += self.root.pem
        try files.replace(files.bundle, with: bytes, mode: 0o644)
    }

    /// The CA in `files`, verified; nil when the folder holds none.
    private static func read(_ files: CAFiles, now: Int64) throws(LocalCAError) -> LocalCA? {
        guard var contents = try files.read() else { return nil }
        defer { clear(&contents.key) }
        guard let root = X509Certificate.parse(pem: contents.root) else {
            throw .invalid(path: files.root, reason: "no PEM certificate in it")
        }
        guard let intermediate = X509Certificate.parse(pem: contents.intermediate) else {
            throw .invalid(path: files.intermediate, reason: "no PEM certificate in it")
        }
        guard let key = try? PEMPrivateKey.parse(pem: contents.key) else {
            throw .invalid(path: files.key, reason: "no unencrypted PEM private key in it")
        }
        return try Self.verified(
            root: root,
            intermediate: intermediate,
            intermediateKey: key,
            files: files,
            now: now
        )
    }

    private func write(to files: CAFiles) throws(LocalCAError) {
        var key = self.intermediateKey.pem
        defer { clear(&key) }
        let root = self.root.pem
        let intermediate = self.intermediate.pem
        guard !key.isEmpty, !root.isEmpty, !intermediate.isEmpty else {
            throw .openSSL("cannot encode the CA as PEM: \(lastOpenSSLError())")
        }
        try files.write(root: root, intermediate: intermediate, key: key)
    }
}

/// Overwrites key bytes before their memory is released (best effort: Swift may have copied them).
private func clear(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        guard let base = raw.baseAddress else { return }
        memset(base, 0, raw.count)
    }
}
