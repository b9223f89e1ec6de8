import BearerDemo
import BearerIO
import Foundation

/// What the mock token endpoint checks of signed JWTs and client certificates, as an authorization
/// server does: private_key_jwt client assertions (RFC 7523 §2.2, §3), JWT bearer grants (§2.1),
/// tls_client_auth (RFC 8705 §2). Each JWT's signature is checked with OpenSSL under the public key
/// the test registered (`MockJWTVerifier`), each claim against what the test expects, and every jti
/// must be new.
extension MockTokenServer {
    package static let clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    package static let jwtBearerGrantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// How long a client assertion lives, exactly: what the proxy promises (`exp = iat + 60`).
    static let assertionLifetime: Int64 = 60

    package struct AssertionRules: Sendable {
        /// private_key_jwt: the client's public key. Set, every call must authenticate with a
        /// client assertion signed by it, and send no secret.
        package var clientKey: MockPublicKey?
        /// The `kid` the client assertion's header must carry (nil: none).
        package var clientKeyID: String?
        /// jwt_bearer: the public key the grant's assertion must be signed with.
        package var grantKey: MockPublicKey?
        package var grantKeyID: String?
        package var grantIssuer: String?
        /// The grant's `sub` and `scope` claims (nil: absent).
        package var grantSubject: String?
        package var grantScope: String?
        /// tls_client_auth: the subject of the certificate the client must present; no secret.
        package var clientCertificateSubject: String?
        /// What `aud` must be: the token endpoint's URL.
        package var audience: String?

        package init() {}
    }

    /// Every JWT the server accepted, in order.
    package var acceptedAssertions: [MockJWT] { self.assertionLog.withLock { $0.accepted } }
    /// Why each refused one was refused.
    package var assertionRefusals: [String] { self.assertionLog.withLock { $0.refusals } }

    /// Nil when the call's client authentication and grant pass the rules; else the refusal.
    func checkSignedCredentials(_ request: MockRequest, _ form: [String: String], _ settings: Settings) -> MockResponse?
    {
        let rules = settings.assertions
        let (_, secret) = Self.clientCredentials(request, form)
        if let key = rules.clientKey {
            guard form["client_assertion_type"] == Self.clientAssertionType else {
                return self.refuse(401, "invalid_client", "expected client_assertion_type \(Self.clientAssertionType)")
            }
            guard secret == nil, request.header("authorization") == nil else {
                return self.refuse(401, "invalid_client", "private_key_jwt clients send no secret and no Basic header")
            }
            let expectedID = settings.clientID ?? form["client_id"] ?? ""
            if let failure = self.check(
                form["client_assertion"],
                key: key,
                keyID: rules.clientKeyID,
                claims: ["iss": expectedID, "sub": expectedID, "aud": rules.audience ?? self.url],
                absent: ["scope"]
            ) {
                return self.refuse(401, "invalid_client", failure)
            }
        }
        if let subject = rules.clientCertificateSubject {
            guard request.clientCertificateSubject == subject else {
                return self.refuse(
                    401,
                    "invalid_client",
                    "tls_client_auth: presented \(request.clientCertificateSubject ?? "no certificate")"
                )
            }
            guard secret == nil, form["client_assertion"] == nil, request.header("authorization") == nil else {
                return self.refuse(401, "invalid_client", "tls_client_auth clients send client_id only")
            }
        }
        guard form["grant_type"] == Self.jwtBearerGrantType else { return nil }
        guard let key = rules.grantKey else {
            return self.refuse(400, "unsupported_grant_type", "this server takes no JWT bearer grants")
        }
        var claims = ["aud": rules.audience ?? self.url]
        claims["iss"] = rules.grantIssuer
        claims["sub"] = rules.grantSubject
        claims["scope"] = rules.grantScope
        let absent = ["sub", "scope"].filter { claims[$0] == nil }
        if let failure = self.check(
            form["assertion"],
            key: key,
            keyID: rules.grantKeyID,
            claims: claims,
            absent: absent
        ) {
            return self.refuse(400, "invalid_grant", failure)
        }
        return nil
    }

    /// Nil when `compact` is a JWT signed by `key` with exactly these claims, a new jti, and
    /// `exp = iat + 60` with `iat` now; else what is wrong.
    private func check(
        _ compact: String?,
        key: MockPublicKey,
        keyID: String?,
        claims expected: [String: String],
        absent: [String]
    ) -> String? {
        guard let compact else { return "no assertion" }
        let token: MockJWT
        switch MockJWTVerifier.verify(compact, with: key) {
        case .success(let verified): token = verified
        case .failure(let error): return error.description
        }
        guard token.header["kid"] == keyID else {
            return "kid \(token.header["kid"] ?? "none"), expected \(keyID ?? "none")"
        }
        for (name, value) in expected where token.stringClaims[name] != value {
            return "\(name) is \(token.stringClaims[name] ?? "missing"), expected \(value)"
        }
        if let name = absent.first(where: { token.claimNames.contains($0) }) { return "unexpected claim \(name)" }
        guard let issuedAt = token.numberClaims["iat"], let expiry = token.numberClaims["exp"] else {
            return "iat and exp must be numbers"
        }
        let now = Int64(Date().timeIntervalSince1970)
        guard abs(issuedAt - now) <= 30 else { return "iat \(issuedAt) is not now (\(now))" }
        guard expiry - issuedAt == Self.assertionLifetime else { return "exp - iat is \(expiry - issuedAt), not 60" }
        guard let jti = token.stringClaims["jti"], jti.count >= 16 else { return "no jti of 16 characters or more" }
        let isNew = self.assertionLog.withLock { log in
            guard log.tokenIDs.insert(jti).inserted else { return false }
            log.accepted.append(token)
            return true
        }
        return isNew ? nil : "jti \(jti) was used before"
    }

    private func refuse(_ status: Int, _ error: String, _ description: String) -> MockResponse {
        self.assertionLog.withLock { $0.refusals.append(description) }
        let body = (try? JSONSerialization.data(withJSONObject: ["error": error, "error_description": description]))
        return .json(status, String(decoding: body ?? Data(), as: UTF8.self))
    }
}

/// What the mock remembers of the JWTs it was sent.
struct AssertionLog {
    var accepted: [MockJWT] = []
    var refusals: [String] = []
    var tokenIDs: Set<String> = []
}
