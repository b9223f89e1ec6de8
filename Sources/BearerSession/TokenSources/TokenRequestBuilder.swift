import BearerConfig
import BearerCore
import BearerHTTP
import FoundationEssentials

/// Builds the form-encoded POSTs to the token endpoint for the configured grant (RFC 6749 §4.3, §4.4,
/// §6; RFC 7523 §2.1), authenticated as the configured client (RFC 6749 §2.3.1, RFC 7523 §2.2,
/// RFC 8705 §2), with the configured resource indicators (RFC 8707 §2.2).
///
/// Every request is built when it is sent, so each carries freshly signed assertions (a new jti).
package struct TokenRequestBuilder: Sendable {
    static let clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

    let url: HTTPURL
    let grant: GrantType
    let clientID: String?
    let clientSecret: Secret<String>?
    let clientAuthentication: ClientAuthentication
    let scope: String?
    let audience: String?
    let username: String?
    let password: Secret<String>?
    let resources: [String]
    /// private_key_jwt: the client's credential, signed for each request.
    let clientAssertion: JWTAssertion?
    /// jwt_bearer: the grant, signed for each request.
    let grantAssertion: JWTAssertion?
    /// Whether `scope` is also a form field: not for a service account, whose token endpoint
    /// (Google's) takes the scope in the assertion only.
    let sendsScopeField: Bool

    package init(settings: SessionSettings, credentials: SessionCredentials, url: HTTPURL) {
        self.url = url
        self.grant = settings.effectiveGrantType
        self.clientID = settings.clientID
        self.clientSecret = settings.clientSecret
        self.clientAuthentication = settings.clientAuthentication
        self.scope = settings.scope
        self.audience = settings.audience
        self.username = settings.username
        self.password = settings.password
        self.resources = settings.resources
        // The token endpoint is the audience of every assertion, also one sent to the revocation or
        // device authorization endpoint (OIDC Core §9).
        let tokenEndpoint = (settings.tokenURL ?? url).description
        self.clientAssertion = JWTAssertion.clientAssertion(settings, credentials, audience: tokenEndpoint)
        self.grantAssertion = JWTAssertion.grantAssertion(settings, credentials, audience: tokenEndpoint)
        self.sendsScopeField = credentials.serviceAccount == nil
    }

    /// The grant's form fields, in order (the client's own are added by `formPost`). Secret values
    /// are revealed here, on their way to the endpoint only.
    func formFields(refreshToken: Secret<String>?) -> [(String, String)] {
        var fields: [(String, String)] = [("grant_type", self.grant.formValue)]
        switch self.grant {
        case .refreshToken:
            if let refreshToken { fields.append(("refresh_token", refreshToken.reveal())) }
        case .password:
            if let username { fields.append(("username", username)) }
            if let password { fields.append(("password", password.reveal())) }
        case .clientCredentials:
            break
        case .jwtBearer:
            if let grantAssertion { fields.append(("assertion", grantAssertion.make())) }
        }
        if let scope, self.sendsScopeField { fields.append(("scope", scope)) }
        if let audience { fields.append(("audience", audience)) }
        return fields
    }

    /// The client's credentials as form fields: with client_secret_post, for a public client (no
    /// secret), which names itself in the form, with private_key_jwt (client_id is optional there,
    /// RFC 7521 §4.2, but some servers want it) and with tls_client_auth (client_id alone, RFC 8705
    /// §2); client_secret_basic uses a header instead.
    private func clientAuthenticationFields() -> [(String, String)] {
        guard let clientID else { return [] }
        switch self.clientAuthentication {
        case .post:
            return [("client_id", clientID)] + (self.clientSecret.map { [("client_secret", $0.reveal())] } ?? [])
        case .basic:
            return self.clientSecret == nil ? [("client_id", clientID)] : []
        case .privateKeyJWT:
            guard let clientAssertion else { return [("client_id", clientID)] }
            return [
                ("client_id", clientID), ("client_assertion_type", Self.clientAssertionType),
                ("client_assertion", clientAssertion.make()),
            ]
        case .tlsClientAuth:
            return [("client_id", clientID)]
        }
    }

    /// Each resource indicator as a `resource` parameter (RFC 8707 §2).
    package var resourceFields: [(String, String)] { self.resources.map { ("resource", $0) } }

    /// The token request for the configured grant.
    func request(refreshToken: Secret<String>?) -> EndpointRequest {
        self.tokenRequest(self.formFields(refreshToken: refreshToken))
    }

    /// A request to the token endpoint with `grantFields` (any grant: the configured one, an
    /// authorization code, a device code), the resource indicators and the client's credentials.
    package func tokenRequest(_ grantFields: [(String, String)]) -> EndpointRequest {
        var request = self.formPost(grantFields + self.resourceFields)
        request.isTokenRequest = true
        return request
    }

    /// An RFC 7009 revocation request for a refresh token, to `url`.
    func revocationRequest(_ token: Secret<String>, to url: HTTPURL) -> EndpointRequest {
        let fields = [("token", token.reveal()), ("token_type_hint", "refresh_token")]
        return self.formPost(fields, to: url)
    }

    /// A form POST of `fields` to `url` (the token endpoint by default), authenticated as the
    /// configured client (RFC 6749 §2.3.1).
    package func formPost(_ fields: [(String, String)], to url: HTTPURL? = nil) -> EndpointRequest {
        var headers: [(String, String)] = []
        if self.clientAuthentication == .basic, let clientID, let clientSecret {
            let credentials = formComponent(clientID) + ":" + formComponent(clientSecret.reveal())
            headers.append(("Authorization", "Basic \(Data(credentials.utf8).base64EncodedString())"))
        }
        return EndpointRequest(
            url: url ?? self.url,
            contentType: "application/x-www-form-urlencoded",
            body: Array(formEncode(fields + self.clientAuthenticationFields()).utf8),
            fields: headers
        )
    }
}

/// `application/x-www-form-urlencoded`: every byte but unreserved characters percent-encoded.
package func formEncode(_ fields: [(String, String)]) -> String {
    fields.map { "\(formComponent($0.0))=\(formComponent($0.1))" }.joined(separator: "&")
}

func formComponent(_ text: String) -> String {
    PercentEncoding.encode(text)
}
