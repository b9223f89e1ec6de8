import BearerTestSupport
import Foundation
import Testing

@testable import BearerCrypto
@testable import BearerSession

/// The signed JWTs the proxy sends as client assertions and JWT bearer grants (RFC 7523).
@Suite(.requires(.openssl))
struct JWTAssertionTests {
    // Made once; a failure (no openssl command under CI) fails each test that needs them.
    private static let made = Result { () throws -> (TestKeyMaterial, String, String) in
        let keys = try TestKeyMaterial()
        return (
            keys, try keys.privateKey(.rsa2048, name: "assertion-rsa.pem"),
            try keys.privateKey(.p256, name: "assertion-ec.pem")
        )
    }

    @Test(arguments: [true, false])
    func eachAssertionIsFreshAndLivesAMinute(isRSA: Bool) throws {
        let (_, rsaKey, ecKey) = try Self.made.get()
        let signer = JWSSigner(key: try SigningKey.load(file: isRSA ? rsaKey : ecKey))
        let assertion = JWTAssertion(signer: signer, issuer: "i", subject: nil, audience: "https://a/token", scope: nil)
        let first = assertion.make(now: 1_700_000_000)
        let second = assertion.make(now: 1_700_000_000)
        #expect(first != second, "same second, new jti")
        let claims = try #require(
            MockJWTVerifier.base64URLDecode(first.split(separator: ".")[1]).flatMap {
                try JSONSerialization.jsonObject(with: $0) as? [String: Any]
            }
        )
        #expect(claims["iat"] as? Int == 1_700_000_000)
        #expect(claims["exp"] as? Int == 1_700_000_060)
        #expect(claims["sub"] == nil)
    }
}
