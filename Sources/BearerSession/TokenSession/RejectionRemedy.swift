import BearerConfig

/// What makes the token endpoint accept the next call after it refused one, said in the failure's
/// sentence (the 401 body and the warning).
///
/// It depends on what the grant spends and on the error (RFC 6749 §5.2): a refused refresh token
/// needs a new one, which a login or the refresh token file brings; refused client credentials,
/// user credentials or a signing key are fixed in the config, which SIGHUP re-reads. A hint that
/// names a refresh token file to a grant that has none sends a person looking for something that
/// does not exist.
package enum RejectionRemedy: Equatable, Sendable {
    /// A refresh token that no longer works (revoked, expired, rotated by another client): log in
    /// again, or write one to `file` (nil: the refresh token is written in the config).
    case newRefreshToken(file: String?)
    /// client_id, client_secret or the client's key (invalid_client, unauthorized_client).
    case clientCredentials
    /// username and password (the password grant's invalid_grant).
    case userCredentials
    /// The signed assertion's key or claims (jwt_bearer).
    case assertion
    /// The scope, resource or audience asked for (invalid_scope, invalid_target).
    case scope
    /// Nothing more precise is known.
    case credentials

    /// The remedy for `code` refused to `grant`; `refreshTokenFile` is where its refresh token lives.
    init(grant: GrantType, code: String, refreshTokenFile: String?) {
        switch (code, grant) {
        case ("invalid_client", _), ("unauthorized_client", _): self = .clientCredentials
        case ("invalid_scope", _), ("invalid_target", _): self = .scope
        case (_, .refreshToken): self = .newRefreshToken(file: refreshTokenFile)
        case (_, .password): self = .userCredentials
        case (_, .clientCredentials): self = .clientCredentials
        case (_, .jwtBearer): self = .assertion
        }
    }

    /// The second half of the failure's sentence: what to do.
    var sentence: String {
        let reread = "then send SIGHUP (the proxy re-reads its config) or POST /refresh"
        switch self {
        case .newRefreshToken(let file?):
            return "run 'bearer-proxy login', or write a new refresh token to \(file) (a running proxy picks it up)"
        case .newRefreshToken(nil):
            return
                "set a new refresh_token in the config (or refresh_token_file and run 'bearer-proxy login'), \(reread)"
        case .clientCredentials:
            return "fix client_id and client_secret (or the client's key) in the config, \(reread)"
        case .userCredentials:
            return "fix username and password in the config, \(reread)"
        case .assertion:
            return
                "fix the signing key or service account (and assertion_issuer, assertion_subject) in the config, \(reread)"
        case .scope:
            return "fix scope (or resource, audience) in the config, \(reread)"
        case .credentials:
            return "fix the credentials in the config, \(reread)"
        }
    }
}

extension SessionFailure {
    /// The same failure, a refusal naming `remedy` (other failures unchanged).
    func remedied(by remedy: RejectionRemedy) -> SessionFailure {
        guard case .rejected(let code, let description, _) = self else { return self }
        return .rejected(code: code, description: description, remedy: remedy)
    }

    /// The refusal's code, for choosing its remedy.
    var rejectionCode: String? {
        if case .rejected(let code, _, _) = self { return code }
        return nil
    }
}
