import BearerCore
import Foundation
import Glibc

/// Keys and certificates for tests, made with Debian's `openssl` command: a maker (and, for
/// signatures, a checker) that shares no code with the proxy. Each set lives in a folder of its own
/// in the scratch space; key files are written mode 0600.
package final class TestKeyMaterial: Sendable {
    package struct ToolError: Error, CustomStringConvertible {
        package var description: String
    }

    /// `openssl` on PATH (or in /usr/bin); nil when Debian's openssl package is not installed.
    package static var executable: String? {
        ExternalTool.openssl.isInstalled ? ExternalTool.openssl.program : nil
    }

    package let directory: String

    package init() throws {
        self.directory = try ScratchSpace.newDirectory("keys")
    }

    /// Kinds of private keys.
    package enum KeyKind: String, Sendable, CaseIterable {
        case rsa2048, rsa1024, p256, p384, ed25519

        var generateArguments: [String] {
            switch self {
            case .rsa2048: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
            case .rsa1024: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"]
            case .p256: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
            case .p384: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]
            case .ed25519: ["-algorithm", "ED25519"]
            }
        }
    }

    /// How a key file is written.
    package enum KeyFormat: String, Sendable {
        /// `-----BEGIN PRIVATE KEY-----`
        case pkcs8
        /// `-----BEGIN RSA PRIVATE KEY-----` / `-----BEGIN EC PRIVATE KEY-----`
        case traditional
        /// `-----BEGIN ENCRYPTED PRIVATE KEY-----` (passphrase `test-passphrase`)
        case encrypted
    }

    /// A new private key in `name` (under the folder), mode 0600; returns its path.
    @discardableResult
    package func privateKey(_ kind: KeyKind, format: KeyFormat = .pkcs8, name: String) throws -> String {
        let path = self.path(name)
        let generated = format == .pkcs8 ? path : path + ".pkcs8"
        try self.openssl(["genpkey"] + kind.generateArguments + ["-out", generated])
        switch format {
        case .pkcs8: break
        case .traditional: try self.openssl(["pkey", "-in", generated, "-out", path, "-traditional"])
        case .encrypted:
            try self.openssl(["pkey", "-in", generated, "-out", path, "-aes256", "-passout", "pass:test-passphrase"])
        }
        chmod(path, 0o600)
        return path
    }

    /// The public key of a private key file, `-----BEGIN PUBLIC KEY-----`.
    package func publicKeyPEM(of keyPath: String) throws -> String {
        try self.openssl(["pkey", "-in", keyPath, "-pubout"])
    }

    /// The DER SubjectPublicKeyInfo of a private key file.
    package func publicKeyDER(of keyPath: String) throws -> [UInt8] {
        let out = self.path(UUID().uuidString + ".der")
        try self.openssl(["pkey", "-in", keyPath, "-pubout", "-outform", "DER", "-out", out])
        return Array(FileManager.default.contents(atPath: out) ?? Data())
    }

    /// Whether `openssl dgst -sha256 -verify` accepts `signature` (DER for ECDSA) of `message`.
    package func verifies(signature: [UInt8], of message: [UInt8], publicKeyOf keyPath: String) throws -> Bool {
        let name = UUID().uuidString
        let (publicKey, messageFile, signatureFile) = (
            self.path(name + ".pub"), self.path(name), self.path(name + ".sig")
        )
        try self.publicKeyPEM(of: keyPath).write(toFile: publicKey, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: messageFile, contents: Data(message))
        _ = FileManager.default.createFile(atPath: signatureFile, contents: Data(signature))
        let outcome = try Self.run(
            ["dgst", "-sha256", "-verify", publicKey, "-signature", signatureFile, messageFile],
            in: self.directory
        )
        return outcome.status == 0 && outcome.standardOutput.contains("Verified OK")
    }

    /// A CA of its own: a root and an intermediate it signed (EC P-256). Returns the paths.
    package func certificateAuthority(
        name: String
    ) throws -> (root: String, intermediate: String, intermediateKey: String) {
        let root = self.path("\(name)-root.pem")
        let rootKey = self.path("\(name)-root.key")
        try self.openssl([
            "req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", rootKey, "-out", root, "-subj", "/CN=\(name) root", "-days", "2",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        let intermediateKey = try self.privateKey(.p256, name: "\(name)-intermediate.key")
        let intermediate = try self.sign(
            key: intermediateKey,
            subject: "/CN=\(name) intermediate",
            issuer: (root, rootKey),
            extensions: "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n",
            out: "\(name)-intermediate.pem"
        )
        return (root, intermediate, intermediateKey)
    }

    /// A client certificate for `commonName` issued by `issuer` (a certificate and its key), with
    /// extendedKeyUsage clientAuth; returns the certificate's path.
    package func clientCertificate(
        commonName: String,
        key: String,
        issuer: (certificate: String, key: String),
        name: String
    ) throws -> String {
        try self.sign(
            key: key,
            subject: "/CN=\(commonName)",
            issuer: issuer,
            extensions: "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                + "extendedKeyUsage=clientAuth\n",
            out: name
        )
    }

    /// A self-signed client certificate no CA vouches for.
    package func selfSignedCertificate(commonName: String, key: String, name: String) throws -> String {
        let path = self.path(name)
        try self.openssl([
            "req", "-x509", "-new", "-key", key, "-out", path, "-subj", "/CN=\(commonName)", "-days", "2",
        ])
        return path
    }

    /// `files` joined into one (a certificate followed by its chain).
    package func concatenate(_ files: [String], name: String) throws -> String {
        let text = try files.map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
        let path = self.path(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    package func path(_ name: String) -> String { "\(self.directory)/\(name)" }

    private func sign(
        key: String,
        subject: String,
        issuer: (certificate: String, key: String),
        extensions: String,
        out: String
    ) throws -> String {
        let request = self.path(out + ".csr")
        let extensionFile = self.path(out + ".ext")
        try extensions.write(toFile: extensionFile, atomically: true, encoding: .utf8)
        try self.openssl(["req", "-new", "-key", key, "-subj", subject, "-out", request])
        let path = self.path(out)
        try self.openssl([
            "x509", "-req", "-in", request, "-CA", issuer.certificate, "-CAkey", issuer.key,
            "-set_serial", "\(UInt32.random(in: 1...UInt32.max))", "-days", "2", "-extfile", extensionFile, "-out",
            path,
        ])
        return path
    }

    /// Runs openssl; its stdout, or an error with its stderr.
    @discardableResult
    private func openssl(_ arguments: [String]) throws -> String {
        let outcome = try Self.run(arguments, in: self.directory)
        guard outcome.status == 0 else {
            throw ToolError(description: "openssl \(arguments.joined(separator: " ")): \(outcome.standardError)")
        }
        return outcome.standardOutput
    }

    private static func run(_ arguments: [String], in directory: String) throws -> ProgramOutcome {
        guard let executable = Self.executable else {
            throw ToolError(description: ExternalTool.openssl.skipReason)
        }
        return try runProgram([executable] + arguments, in: directory, timeout: .seconds(60))
    }
}
