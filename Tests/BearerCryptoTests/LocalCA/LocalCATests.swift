import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import COpenSSL
import Foundation
import Glibc
import Testing

@testable import BearerCrypto

/// The CA's files, read back by OpenSSL.
struct WrittenCA {
    let files: CAFiles
    var root: CertificateInspection.Certificate { CertificateInspection.Certificate(file: self.files.root)! }
    var intermediate: CertificateInspection.Certificate {
        CertificateInspection.Certificate(file: self.files.intermediate)!
    }
    var keyPEM: String { fileText(self.files.key) }

    init(_ directory: String) {
        self.files = CAFiles(directory: directory)
    }
}

@Suite struct LocalCATests {
    let now = wallClockEpochSeconds()

    @discardableResult
    func open(_ directory: String, _ hosts: String) throws(LocalCAError) -> (ca: LocalCA, wasCreated: Bool) {
        try LocalCA.open(CAFiles(directory: directory), permitting: patterns(hosts), now: self.now)
    }

    @Test func theRootAndTheIntermediateCarryWhatTheContractSays() throws {
        let directory = temporaryCADirectory()
        try self.open(directory, "api.example.com, 127.0.0.1:8443, *.corp.test, [::1]")
        let written = WrittenCA(directory)
        let permitted = [
            "Permitted:", "DNS:api.example.com", "DNS:corp.test", "IP:127.0.0.1/255.255.255.255",
            "IP:0:0:0:0:0:0:0:1/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF",
        ]
        let root = written.root
        let rootExtensions = root.extensions
        #expect(
            Set(rootExtensions.keys) == ["basicConstraints", "keyUsage", "subjectKeyIdentifier", "nameConstraints"]
        )
        #expect(rootExtensions["basicConstraints"] == .init(isCritical: true, lines: ["CA:TRUE, pathlen:1"]))
        #expect(rootExtensions["keyUsage"] == .init(isCritical: true, lines: ["Certificate Sign, CRL Sign"]))
        #expect(rootExtensions["nameConstraints"] == .init(isCritical: true, lines: permitted))
        #expect(root.isECP256)
        #expect(root.signatureAlgorithm == "ecdsa-with-SHA256")
        #expect(root.issuer == root.subject)
        #expect(root.subject.hasPrefix("O=bearer-proxy, CN=bearer-proxy root CA "))

        let intermediate = written.intermediate
        let intermediateExtensions = intermediate.extensions
        #expect(
            Set(intermediateExtensions.keys) == [
                "basicConstraints", "keyUsage", "subjectKeyIdentifier", "authorityKeyIdentifier", "nameConstraints",
            ]
        )
        #expect(intermediateExtensions["basicConstraints"] == .init(isCritical: true, lines: ["CA:TRUE, pathlen:0"]))
        #expect(intermediateExtensions["keyUsage"] == .init(isCritical: true, lines: ["Certificate Sign, CRL Sign"]))
        #expect(intermediateExtensions["nameConstraints"] == .init(isCritical: true, lines: permitted))
        #expect(
            intermediateExtensions["authorityKeyIdentifier"]?.lines == rootExtensions["subjectKeyIdentifier"]?.lines
        )
        #expect(intermediate.isECP256)
        #expect(intermediate.issuer == root.subject)
        #expect(intermediate.isCertified(byKeyPEM: written.keyPEM))
        #expect(intermediate.notBefore <= self.now - 3_600 && intermediate.notAfter >= self.now + 9 * 365 * 86_400)
    }

    @Test(arguments: [
        (
            "127.0.0.1",
            [
                "Permitted:", "DNS:invalid", "IP:127.0.0.1/255.255.255.255",
                "IP:0:0:0:0:0:0:0:0/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF",
            ]
        ),
        (
            "api.example.com",
            [
                "Permitted:", "DNS:api.example.com", "IP:0.0.0.0/255.255.255.255",
                "IP:0:0:0:0:0:0:0:0/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF",
            ]
        ),
        (
            "*.example.com, api.example.com, [::1]:9000",
            [
                "Permitted:", "DNS:example.com", "IP:0:0:0:0:0:0:0:1/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF",
                "IP:0.0.0.0/255.255.255.255",
            ]
        ),
    ])
    func bothNameTypesAreAlwaysConstrained(hosts: String, expected: [String]) throws {
        let directory = temporaryCADirectory()
        try self.open(directory, hosts)
        let written = WrittenCA(directory)
        #expect(written.root.extensions["nameConstraints"]?.lines == expected)
        #expect(written.intermediate.extensions["nameConstraints"]?.lines == expected)
    }

    @Test func theFilesAndTheFolderHaveTheirModes() throws {
        let directory = temporaryCADirectory()
        try self.open(directory, "api.example.com")
        let files = CAFiles(directory: directory)
        #expect(permissions(directory) == 0o700)
        #expect(permissions(files.root) == 0o644)
        #expect(permissions(files.intermediate) == 0o644)
        #expect(permissions(files.key) == 0o600)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(names == ["ca.pem", "intermediate-key.pem", "intermediate.pem"])
    }

    @Test func theOnlyPrivateKeyOnDiskIsTheIntermediates() throws {
        let directory = temporaryCADirectory()
        try self.open(directory, "api.example.com")
        let written = WrittenCA(directory)
        let inFolder = CertificateInspection.privateKeyFiles(under: directory)
        #expect(inFolder.map(\.path) == [written.files.key])
        #expect(written.intermediate.isCertified(byKeyPEM: written.keyPEM))
        for (path, key) in inFolder + CertificateInspection.privateKeyFiles(under: NSTemporaryDirectory(), depth: 3) {
            #expect(!written.root.isCertified(byKeyPEM: key), "the root's key is in \(path)")
        }
    }

    @Test func anExistingCAIsLoadedAsItIsAndNeverReplaced() throws {
        let directory = temporaryCADirectory()
        #expect(try self.open(directory, "api.example.com").wasCreated)
        let before = fileText(CAFiles(directory: directory).root)
        #expect(try !self.open(directory, "api.example.com").wasCreated)
        #expect(try !self.open(directory, "api.example.com:8443").wasCreated)
        #expect(fileText(CAFiles(directory: directory).root) == before)
    }

    @Test func anInjectHostOutsideTheConstraintsIsAnErrorNamingItAndRenew() throws {
        let directory = temporaryCADirectory()
        try self.open(directory, "api.example.com, 127.0.0.1")
        let root = CAFiles(directory: directory).root
        for host in ["other.example.com", "example.com", "*.example.com", "127.0.0.2", "[::1]"] {
            do throws(LocalCAError) {
                try self.open(directory, "api.example.com, \(host)")
                Issue.record("\(host) was accepted")
            } catch {
                #expect(
                    error.description
                        == "inject host \(host) is outside the local CA's name constraints (\(root) permits DNS:api.example.com, IP:127.0.0.1/32, IP:::/128): the CA in that folder was made for other inject hosts (another config using it?): give this config a ca_dir of its own, or run `bearer-proxy ca --renew` to replace it with one for the current inject_hosts, then trust the new ca.pem"
                )
            }
        }
        // Within the subtree: a subdomain of a DNS host, or the same host on another port.
        try self.open(directory, "v2.api.example.com, 127.0.0.1:9000")
    }

    @Test func renewMakesANewRootAndIntermediateAndRewritesTheBundle() throws {
        let directory = temporaryCADirectory()
        let first = try self.open(directory, "api.example.com").ca
        let files = CAFiles(directory: directory)
        let systemStore = self.fakeSystemStore()
        let trustStore = SystemTrustStore(environment: ["SSL_CERT_FILE": systemStore])
        try first.writeBundle(to: files, trustStore: trustStore)
        let oldRoot = fileText(files.root)
        let renewed = try LocalCA.renew(
            files,
            permitting: patterns("api.example.com, *.corp.test"),
            now: self.now,
            trustStore: trustStore
        )
        let written = WrittenCA(directory)
        #expect(fileText(files.root) != oldRoot)
        #expect(!written.root.isCertified(byKeyPEM: written.keyPEM))
        #expect(written.intermediate.isCertified(byKeyPEM: written.keyPEM))
        #expect(written.root.extensions["nameConstraints"]?.lines.contains("DNS:corp.test") == true)
        #expect(fileText(files.bundle) == fileText(systemStore) + fileText(files.root))
        #expect(renewed.root.pem == Array(fileText(files.root).utf8))
        #expect(try !self.open(directory, "*.corp.test").wasCreated)
    }

    @Test func theBundleIsTheSystemStoreThenTheRootAndNeverItself() throws {
        let directory = temporaryCADirectory()
        let ca = try self.open(directory, "api.example.com").ca
        let files = CAFiles(directory: directory)
        let systemStore = self.fakeSystemStore()
        try ca.writeBundle(to: files, trustStore: SystemTrustStore(environment: ["SSL_CERT_FILE": systemStore]))
        let expected = fileText(systemStore) + fileText(files.root)
        #expect(fileText(files.bundle) == expected)
        #expect(permissions(files.bundle) == 0o644)
        // After `export SSL_CERT_FILE=…/bundle.pem`, a new bundle is made from OpenSSL's default file.
        try ca.writeBundle(to: files, trustStore: SystemTrustStore(environment: ["SSL_CERT_FILE": files.bundle]))
        let rebuilt = fileText(files.bundle)
        #expect(rebuilt.hasSuffix(fileText(files.root)))
        #expect(rebuilt.components(separatedBy: fileText(files.root)).count == 2)
    }

    @Test func theSystemStoreIsWhereOpenSSLLooks() {
        let store = SystemTrustStore(environment: [:])
        #expect(store.candidates.first == "/usr/lib/ssl/cert.pem")
        #expect(store.candidates.contains("/etc/ssl/certs/ca-certificates.crt"))
        #expect(SystemTrustStore(environment: ["SSL_CERT_FILE": "/x.pem"]).candidates.first == "/x.pem")
    }

    /// A crash after the commit marker: whoever opens the folder next finishes the write.
    @Test func aCommittedWriteInterruptedByACrashIsFinished() throws {
        let directory = temporaryCADirectory()
        try self.open(directory, "api.example.com")
        let files = CAFiles(directory: directory)
        let next = try LocalCA.make(permitting: patterns("api.example.com"), now: self.now)
        try Data(next.intermediateKey.pem).write(to: URL(fileURLWithPath: files.key + ".new"))
        chmod(files.key + ".new", 0o600)
        try Data(next.intermediate.pem).write(to: URL(fileURLWithPath: files.intermediate + ".new"))
        try Data(next.root.pem).write(to: URL(fileURLWithPath: files.root + ".new"))
        _ = FileManager.default.createFile(atPath: directory + "/.commit", contents: nil)
        // The crash came after the first rename.
        #expect(rename(files.key + ".new", files.key) == 0)
        let (reopened, wasCreated) = try self.open(directory, "api.example.com")
        #expect(!wasCreated)
        #expect(reopened.root.pem == next.root.pem)
        #expect(fileText(files.root) == String(decoding: next.root.pem, as: UTF8.self))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == [
                "ca.pem", "intermediate-key.pem", "intermediate.pem",
            ]
        )
    }

    /// A crash before the commit marker: the half-written new files go, the CA stays as it was.
    @Test func anUncommittedWriteInterruptedByACrashIsUndone() throws {
        let directory = temporaryCADirectory()
        try self.open(directory, "api.example.com")
        let files = CAFiles(directory: directory)
        let before = fileText(files.root)
        let next = try LocalCA.make(permitting: patterns("api.example.com"), now: self.now)
        try Data(next.intermediateKey.pem).write(to: URL(fileURLWithPath: files.key + ".new"))
        try Data(next.intermediate.pem.prefix(100)).write(to: URL(fileURLWithPath: files.intermediate + ".new"))
        let (reopened, wasCreated) = try self.open(directory, "api.example.com")
        #expect(!wasCreated)
        #expect(fileText(files.root) == before)
        #expect(reopened.root.pem == Array(before.utf8))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == [
                "ca.pem", "intermediate-key.pem", "intermediate.pem",
            ]
        )
    }

    /// A write that fails part way (here the second file cannot be created: a folder holds its name;
    /// a full disk fails the same way) leaves none of its new files behind: the first was the new
    /// intermediate's private key, which nothing would ever use.
    @Test func aWriteThatFailsLeavesNoNewFileBehind() throws {
        let directory = temporaryCADirectory()
        let files = CAFiles(directory: directory)
        try FileManager.default.createDirectory(atPath: files.intermediate + ".new", withIntermediateDirectories: true)
        #expect {
            try self.open(directory, "api.example.com")
        } throws: { error in
            "\(error)".hasPrefix("\(files.intermediate).new: cannot write the local CA: ")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(left == ["intermediate.pem.new"])
    }

    @Test func aBrokenCAIsAnErrorNamingTheFileAndRenew() throws {
        let directory = temporaryCADirectory()
        try self.open(directory, "api.example.com")
        let files = CAFiles(directory: directory)
        let hint = "`bearer-proxy ca --renew` makes a new CA (clients must then trust the new ca.pem)"

        chmod(files.key, 0o640)
        #expect(
            self.failure(directory)
                == "\(files.key): mode 640 lets other users read the CA's key; chmod 600 it (or \(hint))"
        )
        chmod(files.key, 0o600)

        let stranger = try LocalCA.make(permitting: patterns("api.example.com"), now: self.now)
        let ownIntermediate = fileText(files.intermediate)
        try Data(stranger.intermediate.pem).write(to: URL(fileURLWithPath: files.intermediate))
        #expect(
            self.failure(directory)
                == "\(files.intermediate): not a usable local CA: it is not signed by ca.pem; \(hint)"
        )
        try ownIntermediate.write(toFile: files.intermediate, atomically: false, encoding: .utf8)

        try Data(stranger.intermediateKey.pem).write(to: URL(fileURLWithPath: files.key))
        #expect(
            self.failure(directory)
                == "\(files.key): not a usable local CA: it is not the EC P-256 key of intermediate.pem; \(hint)"
        )

        // An encrypted key is refused, never a pass phrase asked for on the terminal.
        let encrypted = encryptedPEM(of: stranger.intermediateKey)
        #expect(encrypted.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
        try encrypted.write(toFile: files.key, atomically: false, encoding: .utf8)
        #expect(
            self.failure(directory)
                == "\(files.key): not a usable local CA: no unencrypted PEM private key in it; \(hint)"
        )

        unlink(files.root)
        #expect(self.failure(directory) == "\(directory): the local CA is incomplete (ca.pem is missing); \(hint)")
    }

    @Test func anExpiredCAIsAnErrorNamingRenew() throws {
        let directory = temporaryCADirectory()
        let elevenYearsAgo = self.now - 11 * 365 * 86_400
        _ = try LocalCA.open(
            CAFiles(directory: directory),
            permitting: patterns("api.example.com"),
            now: elevenYearsAgo
        )
        let message = self.failure(directory)
        #expect(message.hasPrefix("\(directory)/ca.pem: the local CA expired on "))
        #expect(
            message.hasSuffix("; `bearer-proxy ca --renew` makes a new CA (clients must then trust the new ca.pem)")
        )
    }

    @Test func aFolderThatCannotBeMadeIsOneLine() {
        do throws(LocalCAError) {
            _ = try LocalCA.open(CAFiles(directory: "/proc/bearer-ca"), permitting: patterns("a.test"), now: self.now)
            Issue.record("expected an error")
        } catch {
            #expect(error.description.hasPrefix("/proc/bearer-ca: cannot create the local CA's folder: "))
        }
    }

    func failure(_ directory: String) -> String {
        do throws(LocalCAError) {
            try self.open(directory, "api.example.com")
            return "no error"
        } catch {
            return error.description
        }
    }

    /// A PEM file standing in for the system's CA certificates.
    func fakeSystemStore() -> String {
        let path = temporaryCADirectory() + "-system.pem"
        let other = try! LocalCA.make(permitting: patterns("other.test"), now: self.now)
        _ = FileManager.default.createFile(atPath: path, contents: Data(other.root.pem))
        return path
    }
}

/// `key` as PKCS#8 PEM encrypted with AES-256 under a pass phrase.
func encryptedPEM(of key: PEMPrivateKey) -> String {
    let bytes = writingToMemoryBIO { bio in
        PEM_write_bio_PKCS8PrivateKey(bio, key.pointer, EVP_aes_256_cbc(), "pass phrase", 11, nil, nil) == 1
    }
    return String(decoding: bytes, as: UTF8.self)
}
