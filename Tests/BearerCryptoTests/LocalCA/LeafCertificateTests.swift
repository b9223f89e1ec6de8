import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import COpenSSL
import Foundation
import Glibc
import Testing

@testable import BearerCrypto

/// A CA made for the tests' hosts, with its files.
struct TestCA {
    let ca: LocalCA
    let files: CAFiles
    let now = wallClockEpochSeconds()
    var root: CertificateInspection.Certificate { CertificateInspection.Certificate(file: self.files.root)! }
    var intermediate: CertificateInspection.Certificate {
        CertificateInspection.Certificate(file: self.files.intermediate)!
    }

    init(_ hosts: String = "api.test, 127.0.0.1, *.corp.test") throws {
        self.files = CAFiles(directory: temporaryCADirectory())
        self.ca = try LocalCA.open(self.files, permitting: patterns(hosts), now: self.now).ca
    }

    func leaf(for host: String) throws -> (X509Certificate, PEMPrivateKey) {
        let key = try #require(PEMPrivateKey.generateP256())
        return (try self.ca.issueLeaf(for: try #require(LeafHost(host)), key: key, now: self.now), key)
    }

    /// A leaf the CA would never issue, signed by the test with the intermediate's key.
    func forgedLeaf(
        subject: [(field: String, value: String)],
        subjectAltName: String
    ) throws -> (X509Certificate, PEMPrivateKey) {
        let key = try #require(PEMPrivateKey.generateP256())
        let request = CertificateRequest(
            subject: subject,
            notBefore: self.now - 3_600,
            notAfter: self.now + 86_400,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_alt_name, subjectAltName),
            ]
        )
        let leaf = try request.sign(subjectKey: key, issuer: self.ca.intermediate, issuerKey: self.ca.intermediateKey)
        return (leaf, key)
    }

    /// What OpenSSL's verifier says of `leaf` for `host`, trusting ca.pem only: nil when it verifies.
    func verify(_ leaf: X509Certificate, host: String) -> String? {
        let parsed = CertificateInspection.Certificate(pem: String(decoding: leaf.pem, as: UTF8.self))!
        return CertificateInspection.verify(parsed, intermediates: [self.intermediate], root: self.root, host: host)
    }

    /// An HTTPS mock API presenting `leaf` and the intermediate.
    func server(_ leaf: X509Certificate, key: PEMPrivateKey) throws -> MockUpstream {
        let tls = try TLSContext.server(
            certificate: leaf.pointer,
            chain: [self.ca.intermediate.pointer],
            privateKey: key.pointer
        )
        let upstream = MockUpstream(group: mockGroup, tls: tls)
        try upstream.start()
        return upstream
    }
}

@Suite struct LeafCertificateTests {
    @Test func aDNSHostsLeafCarriesWhatTheContractSays() throws {
        let authority = try TestCA()
        let (leaf, key) = try authority.leaf(for: "API.test")
        let parsed = try #require(CertificateInspection.Certificate(pem: String(decoding: leaf.pem, as: UTF8.self)))
        let extensions = parsed.extensions
        #expect(
            Set(extensions.keys) == [
                "basicConstraints", "keyUsage", "extendedKeyUsage", "subjectAltName", "subjectKeyIdentifier",
                "authorityKeyIdentifier",
            ]
        )
        #expect(extensions["subjectAltName"] == .init(isCritical: false, lines: ["DNS:api.test"]))
        #expect(extensions["basicConstraints"] == .init(isCritical: true, lines: ["CA:FALSE"]))
        #expect(extensions["keyUsage"] == .init(isCritical: true, lines: ["Digital Signature"]))
        #expect(extensions["extendedKeyUsage"] == .init(isCritical: false, lines: ["TLS Web Server Authentication"]))
        #expect(
            extensions["authorityKeyIdentifier"]?.lines
                == authority.intermediate.extensions["subjectKeyIdentifier"]?.lines
        )
        #expect(parsed.subject == "O=bearer-proxy, CN=api.test")
        #expect(parsed.issuer == authority.intermediate.subject)
        #expect(parsed.isECP256)
        #expect(parsed.signatureAlgorithm == "ecdsa-with-SHA256")
        #expect(parsed.notBefore == authority.now - 3_600)
        #expect(parsed.notAfter == authority.now + 30 * 86_400)
        #expect(parsed.isCertified(byKeyPEM: String(decoding: key.pem, as: UTF8.self)))
        #expect(authority.verify(leaf, host: "api.test") == nil)
    }

    @Test func anIPHostsLeafNamesTheAddressAndHasNoCommonName() throws {
        let authority = try TestCA()
        let (leaf, _) = try authority.leaf(for: "127.0.0.1")
        let parsed = try #require(CertificateInspection.Certificate(pem: String(decoding: leaf.pem, as: UTF8.self)))
        #expect(parsed.extensions["subjectAltName"] == .init(isCritical: false, lines: ["IP Address:127.0.0.1"]))
        #expect(parsed.subject == "O=bearer-proxy")
        #expect(authority.verify(leaf, host: "127.0.0.1") == nil)
        // Why: with a host-like CN, OpenSSL checks it against the DNS constraints (here `invalid`).
        let (withCommonName, _) = try authority.forgedLeaf(
            subject: [("CN", "127.0.0.1")],
            subjectAltName: "IP:127.0.0.1"
        )
        #expect(authority.verify(withCommonName, host: "127.0.0.1") == "permitted subtree violation")
    }

    @Test func aLeafForASubdomainOfAWildcardPatternVerifies() throws {
        let authority = try TestCA()
        let (leaf, _) = try authority.leaf(for: "eu.corp.test")
        #expect(authority.verify(leaf, host: "eu.corp.test") == nil)
    }

    /// The CA's key cannot vouch for another site, not even in the hands of whoever holds it.
    @Test(arguments: ["evil.example.org", "corp.test.evil.org", "127.0.0.2", "::1"])
    func aLeafOutsideTheConstraintsMadeWithTheIntermediatesKeyIsRefusedByOpenSSL(host: String) throws {
        let authority = try TestCA()
        let isIP = parseIPAddress(host) != nil
        let (forged, _) = try authority.forgedLeaf(
            subject: isIP ? [("O", "forged")] : [("CN", host)],
            subjectAltName: isIP ? "IP:\(host)" : "DNS:\(host)"
        )
        #expect(authority.verify(forged, host: host) == "permitted subtree violation")
    }

    @Test(.requires(.curl))
    func curlTrustingCaPemRefusesALeafOutsideTheConstraints() throws {
        let authority = try TestCA()
        for host in ["evil.example.org", "127.0.0.2"] {
            let isIP = parseIPAddress(host) != nil
            let (forged, key) = try authority.forgedLeaf(
                subject: isIP ? [("O", "forged")] : [("CN", host)],
                subjectAltName: isIP ? "IP:\(host)" : "DNS:\(host)"
            )
            let upstream = try authority.server(forged, key: key)
            defer { upstream.stop() }
            let outcome = try ExternalTools.curl(trusting: authority.files.root, host: host, port: upstream.port)
            #expect(outcome.status == 60, "\(host): \(outcome.standardError)")
            #expect(outcome.standardError.contains("permitted subtree violation"), "\(outcome.standardError)")
            #expect(upstream.requests.isEmpty)
        }
    }

}
