import BearerCore
import BearerHTTP
import BearerTestSupport
import Foundation
import Testing

@testable import BearerConfig
@testable import BearerCrypto
@testable import BearerSession

/// The form a token, revocation or device request carries with each way of authenticating the client.
@Suite(.requires(.openssl))
struct TokenRequestBuilderTests {
    /// A builder for `url` of a client authenticating with `method`, its signing key a P-256 one.
    static func builder(_ method: ClientAuthentication, url: String) throws -> TokenRequestBuilder {
        var configuration = Configuration()
        configuration.tokenURL = try HTTPURL.parse("https://auth.internal/oauth2/token").get()
        configuration.clientID = "svc"
        configuration.clientAuthentication = method
        configuration.resources = ["https://api.internal/", "urn:x:y"]
        let keys = try TestKeyMaterial()
        let key = try SigningKey.load(file: try keys.privateKey(.p256, name: "builder.pem"))
        return TokenRequestBuilder(
            settings: configuration.defaultSession,
            credentials: SessionCredentials(signingKey: key),
            url: try HTTPURL.parse(url).get()
        )
    }

    static func form(_ request: EndpointRequest) -> [(String, String)] {
        String(decoding: request.body, as: UTF8.self).split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }

    @Test func aRevocationIsAuthenticatedWithAnAssertionForTheTokenEndpoint() throws {
        let revocationURL = try HTTPURL.parse("https://auth.internal/oauth2/revoke").get()
        let builder = try Self.builder(.privateKeyJWT, url: revocationURL.description)
        let request = builder.revocationRequest(Secret("rt-1"), to: revocationURL)
        #expect(request.url == revocationURL)
        #expect(request.fields.isEmpty, "no Basic header")
        let form = Self.form(request)
        #expect(
            form.map(\.0) == ["token", "token_type_hint", "client_id", "client_assertion_type", "client_assertion"]
        )
        let assertion = try #require(form.last?.1)
        let claims =
            try JSONSerialization.jsonObject(
                with: Data(base64Encoded: Self.padded(assertion.split(separator: ".")[1]))!
            ) as! [String: Any]
        #expect(
            claims["aud"] as? String == "https://auth.internal/oauth2/token",
            "aud: the token endpoint (OIDC Core §9)"
        )
        #expect(!form.contains { $0.0 == "resource" }, "resource indicators are for token requests")
    }

    @Test func tlsClientAuthSendsTheClientIDAloneAndTheResources() throws {
        let builder = try Self.builder(.tlsClientAuth, url: "https://auth.internal/oauth2/token")
        let request = builder.request(refreshToken: nil)
        #expect(request.fields.isEmpty)
        #expect(
            Self.form(request).map { "\($0.0)=\($0.1)" } == [
                "grant_type=client_credentials", "resource=https://api.internal/", "resource=urn:x:y", "client_id=svc",
            ]
        )
    }

    @Test func eachRequestHasItsOwnAssertion() throws {
        let builder = try Self.builder(.privateKeyJWT, url: "https://auth.internal/oauth2/token")
        let assertions = (0..<20).compactMap { _ in Self.form(builder.request(refreshToken: nil)).last?.1 }
        #expect(Set(assertions).count == 20)
    }

    static func padded(_ part: Substring) -> String {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return text
    }
}
