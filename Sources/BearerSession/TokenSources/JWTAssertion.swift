import BearerConfig
import BearerCore
import BearerCrypto

/// An RFC 7523 assertion: a JWT the proxy signs afresh for each token request, as the client's
/// credential (private_key_jwt, §2.2) or as the grant itself (jwt_bearer, §2.1).
///
/// Each one has its own `jti` and lives 60 seconds (`exp = iat + 60`): long enough for a slow token
/// endpoint, short enough that a copy is soon worthless, and a server that remembers the jti for that
/// long refuses a replay.
struct JWTAssertion: Sendable {
    static let lifetime: Int64 = 60

    let signer: JWSSigner
    let issuer: String
    let subject: String?
    /// The authorization server: its token endpoint's URL (RFC 7523 §3, OIDC Core §9).
    let audience: String
    /// jwt_bearer: the scope as a claim (Google's service accounts take it so).
    let scope: String?

    /// The signed JWT, `iat` from `now` (seconds since 1970).
    func make(now: Double = wallClockSeconds()) -> String {
        let issuedAt = Int64(now)
        var claims = JSONObjectWriter()
        claims.add("iss", self.issuer)
        if let subject { claims.add("sub", subject) }
        claims.add("aud", self.audience)
        claims.add("iat", issuedAt)
        claims.add("exp", issuedAt + Self.lifetime)
        claims.add("jti", JWSSigner.newTokenID())
        if let scope { claims.add("scope", scope) }
        // Signing with a key OpenSSL loaded fails only when it cannot allocate.
        guard let token = self.signer.sign(claims) else { preconditionFailure("OpenSSL could not sign a JWT") }
        return String(decoding: token, as: UTF8.self)
    }

    /// private_key_jwt's client assertion: iss = sub = client_id (RFC 7523 §3 item 2.B).
    static func clientAssertion(
        _ settings: SessionSettings,
        _ credentials: SessionCredentials,
        audience: String
    ) -> JWTAssertion? {
        guard settings.clientAuthentication == .privateKeyJWT, let key = credentials.signingKey,
            let clientID = settings.clientID
        else { return nil }
        return JWTAssertion(
            signer: JWSSigner(key: key, type: "JWT", keyID: settings.credentials.keyID),
            issuer: clientID,
            subject: clientID,
            audience: audience,
            scope: nil
        )
    }

    /// jwt_bearer's grant: a service account's (iss = client_email, kid = private_key_id), else
    /// client_key_file's (iss = assertion_issuer or client_id, kid = client_key_id); sub =
    /// assertion_subject when set.
    static func grantAssertion(
        _ settings: SessionSettings,
        _ keys: SessionCredentials,
        audience: String
    ) -> JWTAssertion? {
        guard settings.effectiveGrantType == .jwtBearer else { return nil }
        let credentials = settings.credentials
        if let account = keys.serviceAccount {
            return JWTAssertion(
                signer: JWSSigner(key: account.key, type: "JWT", keyID: account.privateKeyID),
                issuer: account.clientEmail,
                subject: credentials.assertionSubject,
                audience: audience,
                scope: settings.scope
            )
        }
        guard let key = keys.signingKey, let issuer = credentials.assertionIssuer ?? settings.clientID else {
            return nil
        }
        return JWTAssertion(
            signer: JWSSigner(key: key, type: "JWT", keyID: credentials.keyID),
            issuer: issuer,
            subject: credentials.assertionSubject,
            audience: audience,
            scope: settings.scope
        )
    }
}
