import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerCrypto

/// DPoP proofs (BearerCrypto/DPoP): their shape, their signature checked by OpenSSL's verifier through the
/// mocks (which share nothing with the signer), and the key file: made 0600 on first need, read
/// again unchanged, refused when it is not a P-256 key the owner alone can read.
@Suite struct DPoPProofTests {
    static func temporaryFolder() throws -> String {
        try ScratchSpace.newDirectory("dpop")
    }

    static func prover() throws -> DPoPProver {
        let path = try Self.temporaryFolder() + "/key.pem"
        return DPoPProver(key: try DPoPKeyFile.loadOrCreate(path), keyFile: path)
    }

    @Test func aProofHasTheHeaderAndClaimsOfRFC9449AndOpenSSLVerifiesIt() throws {
        let prover = try Self.prover()
        let token = "access-token-1"
        let proof = prover.proof(
            method: Array("GET".utf8),
            targetURI: Array("https://api.example.com:8443/v1/items".utf8),
            accessTokenHash: DPoPProver.accessTokenHash(of: Array(token.utf8)),
            nonce: "n-1",
            now: 1_700_000_000
        )
        let verified = try MockDPoPVerifier.verify(String(decoding: proof, as: UTF8.self)).get()
        #expect(verified.jwt.header["typ"] == "dpop+jwt")
        #expect(verified.jwt.header["alg"] == "ES256")
        #expect(Set(verified.jwk.keys) == ["kty", "crv", "x", "y"])
        #expect(verified.htm == "GET")
        #expect(verified.htu == "https://api.example.com:8443/v1/items")
        #expect(verified.iat == 1_700_000_000)
        #expect(verified.ath == MockDPoPVerifier.accessTokenHash(token))
        #expect(verified.nonce == "n-1")
        #expect(verified.jwt.claimNames == ["jti", "htm", "htu", "iat", "ath", "nonce"])
        #expect(verified.thumbprint == prover.thumbprint)
        // A changed byte of the claims does not verify: the check can fail.
        var tampered = String(decoding: proof, as: UTF8.self).split(separator: ".").map(String.init)
        tampered[1] = String(tampered[1].dropLast()) + (tampered[1].last == "A" ? "B" : "A")
        #expect(throws: MockJWTError.self) { try MockDPoPVerifier.verify(tampered.joined(separator: ".")).get() }
    }

    @Test func aTokenRequestProofHasNoAthAndEveryProofHasItsOwnJTI() throws {
        let prover = try Self.prover()
        let proofs = try (0..<50).map { _ in
            try MockDPoPVerifier.verify(
                String(
                    decoding: prover.proof(
                        method: Array("POST".utf8),
                        targetURI: Array("https://auth.example.com/token".utf8),
                        accessTokenHash: nil,
                        nonce: nil
                    ),
                    as: UTF8.self
                )
            ).get()
        }
        #expect(proofs.allSatisfy { $0.jwt.claimNames == ["jti", "htm", "htu", "iat"] })
        #expect(Set(proofs.compactMap(\.jti)).count == 50)
        #expect(prover.proofsMade.load(ordering: .relaxed) == 50)
    }

    @Test func aJTIIs160BitsOfWhichTheFirst96AreEachProversOwn() throws {
        let path = try Self.temporaryFolder() + "/key.pem"
        func jtis(_ prover: DPoPProver, _ count: Int) throws -> [String] {
            try (0..<count).map { _ in
                let proof = prover.proof(
                    method: Array("GET".utf8),
                    targetURI: Array("https://api.example.com/".utf8),
                    accessTokenHash: nil,
                    nonce: nil
                )
                return try #require(try MockDPoPVerifier.verify(String(decoding: proof, as: UTF8.self)).get().jti)
            }
        }
        // The same key read again, as after a restart: a new prover, a new prefix.
        let first = try jtis(DPoPProver(key: try DPoPKeyFile.loadOrCreate(path), keyFile: path), 1000)
        let second = try jtis(DPoPProver(key: try DPoPKeyFile.loadOrCreate(path), keyFile: path), 1000)
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        #expect((first + second).allSatisfy { $0.count == 27 && $0.allSatisfy(alphabet.contains) })
        #expect(Set(first + second).count == 2000)
        #expect(Set(first.map { $0.prefix(16) }).count == 1)
        #expect(first[0].prefix(16) != second[0].prefix(16))
    }

    @Test func aProofWrittenIntoABufferWithBytesBeforeItVerifies() throws {
        let prover = try Self.prover()
        var buffer = ByteBuffer()
        buffer.writeStaticString("consumed|GET /v1 HTTP/1.1\r\nDPoP: ")
        buffer.moveReaderIndex(forwardBy: 9)
        prover.writeProof(
            method: Array("GET".utf8),
            targetURI: Array("https://api.example.com/v1".utf8),
            accessTokenHash: nil,
            nonce: "n",
            to: &buffer
        )
        let text = String(decoding: buffer.readableBytesArray, as: UTF8.self)
        #expect(text.hasPrefix("GET /v1 HTTP/1.1\r\nDPoP: "))
        let verified = try MockDPoPVerifier.verify(String(text.dropFirst("GET /v1 HTTP/1.1\r\nDPoP: ".count))).get()
        #expect(verified.htu == "https://api.example.com/v1")
        #expect(verified.nonce == "n")
    }

    /// The bench's API answers before it checks (its check must not be what the p99 measures): a
    /// bad proof is still found and counted, a good one accepted.
    @Test func theBenchAPIsChecksAfterAnsweringStillFindABadProof() throws {
        let prover = try Self.prover()
        let rules = MockDPoPRules(checksOneIn: 1, checksInBackground: true)
        let good = prover.proof(
            method: Array("GET".utf8),
            targetURI: Array("https://api.example.com/v1".utf8),
            accessTokenHash: DPoPProver.accessTokenHash(of: Array("t".utf8)),
            nonce: nil
        )
        for (field, uri) in [
            (String(decoding: good, as: UTF8.self), "https://api.example.com/v1"),
            (String(decoding: good, as: UTF8.self), "https://api.example.com/v2"),
            ("not.a.proof", "https://api.example.com/v1"),
        ] {
            let verdict = rules.check(
                field,
                method: "GET",
                targetURI: uri,
                accessToken: "t",
                boundTo: prover.thumbprint
            )
            guard case .accepted(nil) = verdict else {
                Issue.record("a sampled proof was not answered at once")
                continue
            }
        }
        rules.finishChecks()
        #expect(rules.proofsChecked.load(ordering: .relaxed) == 3)
        #expect(rules.proofs.count == 1)
        #expect(rules.failures.count == 2, "\(rules.failures)")
    }

    @Test(arguments: [
        ("https://api.example.com/v1/x?q=1#f", "https://api.example.com/v1/x"),
        ("https://api.example.com/v1/x#frag", "https://api.example.com/v1/x"),
        ("http://127.0.0.1:8080/token", "http://127.0.0.1:8080/token"),
    ])
    func theTargetURIHasNeitherQueryNorFragment(_ url: String, _ htu: String) {
        #expect(DPoPProver.targetURI(url) == htu)
    }

    @Test func theKeyFileIsMade0600AndReadAgainWithTheSameThumbprint() throws {
        let folder = try Self.temporaryFolder()
        let path = folder + "/deeper/dpop-key.pem"
        let first = DPoPProver(key: try DPoPKeyFile.loadOrCreate(path), keyFile: path)
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        #expect(stat(folder + "/deeper", &status) == 0 && status.st_mode & 0o777 == 0o700)
        let again = DPoPProver(key: try DPoPKeyFile.loadOrCreate(path), keyFile: path)
        #expect(again.thumbprint == first.thumbprint)
        #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        // RFC 7638: 43 characters of base64url (a SHA-256).
        #expect(first.thumbprint.count == 43)
    }

    @Test func aKeyFileOthersCanReadIsRefusedAndNotReplaced() throws {
        let path = try Self.temporaryFolder() + "/dpop-key.pem"
        _ = try DPoPKeyFile.loadOrCreate(path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        #expect(throws: PEMPrivateKey.LoadError.self) { try DPoPKeyFile.loadOrCreate(path) }
        do {
            _ = try DPoPKeyFile.loadOrCreate(path)
        } catch {
            #expect(
                error.description
                    == "\(path): mode 644 is wider than 0600: the DPoP key must be the owner's alone (chmod 600 it)"
            )
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aFileThatIsNotAP256KeyIsAnErrorNamingIt() throws {
        let path = try Self.temporaryFolder() + "/dpop-key.pem"
        try "not a key\n".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        do {
            _ = try DPoPKeyFile.loadOrCreate(path)
            Issue.record("a file without a key was accepted")
        } catch {
            #expect(error.description.hasPrefix("\(path): is not a PEM file"))
        }
    }

    @Test func theNonceStoreKeepsTheNewestPerOriginAndRefusesWhatCannotGoInAProof() {
        let store = DPoPNonceStore()
        let api = Origin(isHTTPS: true, host: "api.example.com", port: 443)
        let auth = Origin(isHTTPS: true, host: "auth.example.com", port: 443)
        #expect(store.remember("a1", for: api))
        #expect(!store.remember("a1", for: api))
        #expect(store.remember("a2", for: api))
        #expect(store.remember("t1", for: auth))
        #expect(!store.remember("bad\"nonce", for: api))
        #expect(store.nonce(for: api) == "a2")
        #expect(store.nonce(for: auth) == "t1")
    }
}

@Suite(.requires(.openssl))
struct DPoPKeyKindTests {
    @Test(arguments: [TestKeyMaterial.KeyKind.rsa2048, .p384])
    func aKeyOfAnotherKindIsRefused(_ kind: TestKeyMaterial.KeyKind) throws {
        let keys = try TestKeyMaterial()
        let path = try keys.privateKey(kind, name: "dpop-\(kind).pem")
        chmod(path, 0o600)
        do {
            _ = try DPoPKeyFile.loadOrCreate(path)
            Issue.record("a \(kind) key was accepted")
        } catch {
            #expect(error.description.hasPrefix(path + ": holds a"))
        }
    }

    @Test func anEncryptedKeyIsRefused() throws {
        let keys = try TestKeyMaterial()
        let path = try keys.privateKey(.p256, format: .encrypted, name: "dpop-encrypted.pem")
        chmod(path, 0o600)
        do {
            _ = try DPoPKeyFile.loadOrCreate(path)
            Issue.record("an encrypted key was accepted")
        } catch {
            #expect(error.description.contains("encrypted"))
        }
    }
}
