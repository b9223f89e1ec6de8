import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerCrypto

/// JWS signing (BearerCrypto/Signing): signatures checked by the `openssl` command, a verifier that shares
/// no code with the signer; the encodings it writes by hand checked against Foundation's.
@Suite(.requires(.openssl))
struct SigningTests {
    // Made once; a failure (no openssl command under CI) fails each test that needs them.
    private static let made = Result { () throws -> (TestKeyMaterial, String, String) in
        let keys = try TestKeyMaterial()
        return (
            keys, try keys.privateKey(.rsa2048, name: "signing-rsa.pem"),
            try keys.privateKey(.p256, name: "signing-ec.pem")
        )
    }
    static var keys: TestKeyMaterial { get throws { try Self.made.get().0 } }
    static var rsaKey: String { get throws { try Self.made.get().1 } }
    static var ecKey: String { get throws { try Self.made.get().2 } }

    enum Algorithm: String, CaseIterable, Sendable { case rs256, es256 }

    static func keyFile(_ algorithm: Algorithm) throws -> String { try algorithm == .rs256 ? Self.rsaKey : Self.ecKey }

    @Test(arguments: Algorithm.allCases)
    func theOpenSSLCommandVerifiesTheSignature(_ algorithm: Algorithm) throws {
        let key = try SigningKey.load(file: Self.keyFile(algorithm))
        #expect(key.algorithm.rawValue == algorithm.rawValue.uppercased())
        let signer = JWSSigner(key: key, type: "JWT", keyID: "key-1")
        var claims = JSONObjectWriter()
        claims.add("iss", "client-1")
        claims.add("iat", 1_700_000_000)
        let token = String(decoding: try #require(signer.sign(claims)), as: UTF8.self)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        let header = try Self.json(parts[0])
        #expect(header as NSDictionary == ["alg": algorithm.rawValue.uppercased(), "typ": "JWT", "kid": "key-1"])
        #expect(try Self.json(parts[1]) as NSDictionary == ["iss": "client-1", "iat": 1_700_000_000])
        var signature = try #require(Self.base64URLDecode(parts[2]))
        if algorithm == .es256 {
            // RFC 7518 §3.4: r ‖ s, 32 bytes each; the openssl command wants DER, made here by hand.
            #expect(signature.count == 64)
            signature = Self.derECDSASignature(r: Array(signature[0..<32]), s: Array(signature[32..<64]))
        } else {
            #expect(signature.count == 256)
        }
        let signingInput = Array(token.utf8.prefix(parts[0].count + 1 + parts[1].count))
        #expect(try Self.keys.verifies(signature: signature, of: signingInput, publicKeyOf: Self.keyFile(algorithm)))
        // And a changed message does not verify: the check can fail.
        #expect(
            !(try Self.keys.verifies(
                signature: signature,
                of: signingInput + [0x41],
                publicKeyOf: Self.keyFile(algorithm)
            ))
        )
    }

    @Test func tokenIDsAreUnique() {
        let ids = (0..<1000).map { _ in JWSSigner.newTokenID() }
        #expect(Set(ids).count == 1000)
        #expect(ids.allSatisfy { $0.count == 22 && !$0.contains("=") })
    }

    @Test func thePublicJWKIsTheKeysPublicHalf() throws {
        let ec = try SigningKey.load(file: Self.ecKey)
        let jwk = try JSONSerialization.jsonObject(with: Data(ec.publicJWK.encoded)) as! [String: String]
        #expect(Array(jwk.keys).sorted() == ["crv", "kty", "x", "y"])
        #expect(String(decoding: ec.publicJWK.encoded, as: UTF8.self).hasPrefix(#"{"crv":"P-256","kty":"EC","x":""#))
        // The last 65 bytes of a P-256 SubjectPublicKeyInfo are 0x04 ‖ x ‖ y.
        let spki = try Self.keys.publicKeyDER(of: Self.ecKey)
        let point = Array(spki.suffix(65))
        #expect(point[0] == 4)
        #expect(Self.base64URLDecode(Substring(jwk["x"]!)) == Array(point[1..<33]))
        #expect(Self.base64URLDecode(Substring(jwk["y"]!)) == Array(point[33..<65]))

        let rsa = try SigningKey.load(file: Self.rsaKey)
        let rsaJWK = try JSONSerialization.jsonObject(with: Data(rsa.publicJWK.encoded)) as! [String: String]
        #expect(rsaJWK["kty"] == "RSA" && rsaJWK["e"] == "AQAB")
        let modulus = Self.base64URLDecode(Substring(rsaJWK["n"]!))
        #expect(modulus?.count == 256)
        let header = JWSSigner(key: ec, type: "dpop+jwt", embedsPublicKey: true)
        var claims = JSONObjectWriter()
        claims.add("htm", "GET")
        let token = String(decoding: try #require(header.sign(claims)), as: UTF8.self)
        let decoded = try Self.json(token.split(separator: ".")[0])
        #expect(decoded["typ"] as? String == "dpop+jwt")
        #expect((decoded["jwk"] as? [String: String]) == jwk)
    }

    @Test func base64URLMatchesFoundationWithoutPadding() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encodedString(bytes) == expected, "\(length) bytes")
        }
    }

    @Test func aTokenWrittenAfterOtherBytesHasTheHeaderAndClaimsSignMakes() throws {
        let signer = JWSSigner(key: try SigningKey(try #require(PEMPrivateKey.generateP256())), type: "JWT")
        var claims = JSONObjectWriter()
        claims.add("iss", "me")
        var buffer = ByteBuffer()
        buffer.writeStaticString("before.")
        #expect(signer.write(claims, to: &buffer))
        let written = String(decoding: buffer.readableBytesArray, as: UTF8.self)
        let signed = String(decoding: try #require(signer.sign(claims)), as: UTF8.self)
        // ECDSA signatures differ each time; the header and claims are the same bytes.
        let parts = signed.split(separator: ".")
        #expect(written.hasPrefix("before.\(parts[0]).\(parts[1])."))
        #expect(written.split(separator: ".").count == 4)
    }

    @Test func jsonStringsAreEscaped() throws {
        var writer = JSONObjectWriter()
        let tricky = "a\"b\\c\u{01}\n\t é ✓ </script>"
        writer.add("s", tricky)
        writer.add("n", -5)
        var inner = JSONObjectWriter()
        inner.add("k", "v")
        writer.add("o", inner)
        let object = try JSONSerialization.jsonObject(with: Data(writer.encoded)) as! [String: Any]
        #expect(object["s"] as? String == tricky)
        #expect(object["n"] as? Int == -5)
        #expect(object["o"] as? [String: String] == ["k": "v"])
        #expect(JSONObjectWriter().encoded == Array("{}".utf8))
    }

    // MARK: Key files

    struct BadKey: Sendable, CustomTestStringConvertible {
        var name: String
        var make: @Sendable (TestKeyMaterial) throws -> String
        var reason: String
        var testDescription: String { self.name }
    }

    static let badKeys: [BadKey] = [
        BadKey(name: "missing", make: { $0.path("nothing-here.pem") }, reason: "no such file"),
        BadKey(name: "a directory", make: { $0.directory }, reason: "is a directory, not a key file"),
        BadKey(
            name: "under a file",
            make: { keys in try keys.privateKey(.p256, name: "plain.pem") + "/key.pem" },
            reason: "cannot read it: Not a directory"
        ),
        BadKey(
            name: "encrypted PKCS#8",
            make: { try $0.privateKey(.p256, format: .encrypted, name: "enc.pem") },
            reason: "holds an encrypted key (a passphrase protects it)"
        ),
        BadKey(
            name: "encrypted traditional",
            make: { keys in
                let path = try keys.privateKey(.rsa2048, format: .traditional, name: "enc-trad.pem")
                var text = try String(contentsOfFile: path, encoding: .utf8)
                text = text.replacingOccurrences(
                    of: "-----BEGIN RSA PRIVATE KEY-----\n",
                    with: "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00\n\n"
                )
                try text.write(toFile: path, atomically: true, encoding: .utf8)
                return path
            },
            reason: "holds an encrypted key"
        ),
        BadKey(
            name: "EC P-384",
            make: { try $0.privateKey(.p384, name: "p384.pem") },
            reason: "holds an EC P-384 key; JWTs are signed with RSA (RS256) or EC P-256 (ES256) keys"
        ),
        BadKey(
            name: "Ed25519",
            make: { try $0.privateKey(.ed25519, name: "ed.pem") },
            reason: "holds an ED25519 key; JWTs are signed with RSA (RS256) or EC P-256 (ES256) keys"
        ),
        BadKey(
            name: "RSA 1024",
            make: { try $0.privateKey(.rsa1024, name: "rsa1024.pem") },
            reason: "holds an RSA key of 1024 bits: too short for RS256 (2048 bits or more)"
        ),
        BadKey(
            name: "a public key",
            make: { keys in
                let path = keys.path("public.pem")
                try keys.publicKeyPEM(of: SigningTests.ecKey).write(toFile: path, atomically: true, encoding: .utf8)
                return path
            },
            reason: "holds a public key, not a private key"
        ),
        BadKey(
            name: "a certificate",
            make: { keys in
                try keys.selfSignedCertificate(commonName: "c", key: SigningTests.ecKey, name: "cert.pem")
            },
            reason: "holds a certificate but no private key"
        ),
        BadKey(
            name: "not PEM",
            make: { keys in
                let path = keys.path("text.pem")
                try "just some text\n".write(toFile: path, atomically: true, encoding: .utf8)
                return path
            },
            reason: "is not a PEM file"
        ),
        BadKey(
            name: "empty",
            make: { keys in
                let path = keys.path("empty.pem")
                _ = FileManager.default.createFile(atPath: path, contents: Data())
                return path
            },
            reason: "is not a PEM file"
        ),
    ]

    @Test(arguments: SigningTests.badKeys)
    func aKeyFileThatCannotSignIsOneLineNamingIt(_ bad: BadKey) throws {
        let path = try bad.make(Self.keys)
        #expect {
            _ = try SigningKey.load(file: path)
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("\(path): \(bad.reason)") && !text.contains("\n")
        }
    }

    @Test func traditionalPEMKeysAreRead() throws {
        let ec = try Self.keys.privateKey(.p256, format: .traditional, name: "trad-ec.pem")
        let rsa = try Self.keys.privateKey(.rsa2048, format: .traditional, name: "trad-rsa.pem")
        #expect(try String(contentsOfFile: ec, encoding: .utf8).hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
        #expect(try SigningKey.load(file: ec).algorithm == .es256)
        #expect(try SigningKey.load(file: rsa).algorithm == .rs256)
        #expect("\(try SigningKey.load(file: rsa))" == "RSA 2048-bit, RS256")
    }

    // MARK: Helpers

    static func json(_ part: Substring) throws -> [String: Any] {
        let data = try #require(Self.base64URLDecode(part))
        return try JSONSerialization.jsonObject(with: Data(data)) as! [String: Any]
    }

    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }

    /// DER `SEQUENCE { INTEGER r, INTEGER s }`, written by hand (X.690 §8.3: minimal, positive).
    static func derECDSASignature(r: [UInt8], s: [UInt8]) -> [UInt8] {
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }
}
