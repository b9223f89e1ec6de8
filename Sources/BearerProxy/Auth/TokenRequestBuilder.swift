import BearerCore
import Foundation

/// Builds the form-encoded POST to the token endpoint for the configured grant (RFC 6749 §4.3, §4.4, §6).
struct TokenRequestBuilder: Sendable {
    let url: UpstreamURL
    let grant: GrantType
    let clientID: String?
    let clientSecret: Secret<String>?
    let clientAuthentication: ClientAuthentication
    let scope: String?
    let audience: String?
    let username: String?
    let password: Secret<String>?

    init(configuration: Configuration, url: UpstreamURL) {
        self.url = url
        self.grant = configuration.effectiveGrantType
        self.clientID = configuration.clientID
        self.clientSecret = configuration.clientSecret
        self.clientAuthentication = configuration.clientAuthentication
        self.scope = configuration.scope
        self.audience = configuration.audience
        self.username = configuration.username
        self.password = configuration.password
    }

    /// The grant's form fields, in order (the client's own are added by `formPost`). Secret values
    /// are revealed here, on their way to the endpoint only.
    func formFields(refreshToken: Secret<String>?) -> [(String, String)] {
        var fields: [(String, String)] = [("grant_type", self.grant.rawValue)]
        switch self.grant {
        case .refreshToken:
            if let refreshToken { fields.append(("refresh_token", refreshToken.reveal())) }
        case .password:
            if let username { fields.append(("username", username)) }
            if let password { fields.append(("password", password.reveal())) }
        case .clientCredentials:
            break
        }
        if let scope { fields.append(("scope", scope)) }
        if let audience { fields.append(("audience", audience)) }
        return fields
    }

    /// The client's credentials as form fields: with client_secret_post, or for a public client
    /// (no secret), which names itself in the form; client_secret_basic uses a header instead.
    private func clientAuthenticationFields() -> [(String, String)] {
        guard let clientID else { return [] }
        switch self.clientAuthentication {
        case .post:
            return [("client_id", clientID)] + (self.clientSecret.map { [("client_secret", $0.reveal())] } ?? [])
        case .basic:
            return self.clientSecret == nil ? [("client_id", clientID)] : []
        }
    }

    /// The token request for the configured grant.
    func request(refreshToken: Secret<String>?) -> EndpointRequest {
        self.formPost(self.formFields(refreshToken: refreshToken))
    }

    /// An RFC 7009 revocation request for a refresh token, to `url`.
    func revocationRequest(_ token: Secret<String>, to url: UpstreamURL) -> EndpointRequest {
        let fields = [("token", token.reveal()), ("token_type_hint", "refresh_token")]
        return self.formPost(fields, to: url)
    }

    /// A form POST of `fields` to `url` (the token endpoint by default), authenticated as the
    /// configured client (RFC 6749 §2.3.1).
    func formPost(_ fields: [(String, String)], to url: UpstreamURL? = nil) -> EndpointRequest {
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
func formEncode(_ fields: [(String, String)]) -> String {
    fields.map { "\(formComponent($0.0))=\(formComponent($0.1))" }.joined(separator: "&")
}

func formComponent(_ text: String) -> String {
    var encoded = ""
    for byte in text.utf8 {
        let isUnreserved =
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
        if isUnreserved {
            encoded.unicodeScalars.append(Unicode.Scalar(byte))
        } else {
            encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }
    }
    return encoded
}

extension String {
    func leftPadded(to width: Int) -> String {
        self.count >= width ? self : String(repeating: "0", count: width - self.count) + self
    }
}
