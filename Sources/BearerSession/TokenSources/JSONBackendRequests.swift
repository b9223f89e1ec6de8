import BearerConfig
import BearerCore
import BearerHTTP

/// The requests of a JSON backend: refresh (token_body to token_url), login (login_body to login_url)
/// and logout (token_body's shape to logout_url), each `Content-Type: application/json`.
package struct JSONBackendRequests: Sendable {
    let tokenURL: HTTPURL?
    package let loginURL: HTTPURL?
    let logoutURL: HTTPURL?
    let tokenBody: JSONTemplate
    package let loginBody: JSONTemplate
    package let fields: JSONTokenFields
    /// Configured placeholder values (username, password, client_id, client_secret, scope).
    private let values: [String: Secret<String>]

    package init(settings: SessionSettings) {
        self.tokenURL = settings.tokenURL
        self.loginURL = settings.jsonBackend.loginURL
        self.logoutURL = settings.jsonBackend.logoutURL
        self.tokenBody = settings.jsonBackend.effectiveTokenBody
        self.loginBody = settings.jsonBackend.effectiveLoginBody
        self.fields = settings.jsonBackend.fields
        var values: [String: Secret<String>] = [:]
        for name in JSONTemplate.names where name != "refresh_token" {
            if let value = settings.templateValue(for: name) { values[name] = Secret(value) }
        }
        self.values = values
    }

    /// Whether login_body has every value it names (prompted ones may be passed to `login`).
    func canLogIn(with extra: [String: Secret<String>] = [:]) -> Bool {
        self.loginURL != nil
            && self.loginBody.placeholders.allSatisfy { self.values[$0] != nil || extra[$0] != nil }
    }

    func refresh(_ refreshToken: Secret<String>) -> EndpointRequest? {
        self.tokenURL.map { self.post(self.tokenBody, to: $0, extra: ["refresh_token": refreshToken]) }
    }

    /// `extra`: values asked for on the terminal (`bearer-proxy login`).
    package func login(with extra: [String: Secret<String>] = [:]) -> EndpointRequest? {
        self.loginURL.map { self.post(self.loginBody, to: $0, extra: extra) }
    }

    func logout(_ refreshToken: Secret<String>) -> EndpointRequest? {
        self.logoutURL.map { self.post(self.tokenBody, to: $0, extra: ["refresh_token": refreshToken]) }
    }

    /// An endpoint's words with any secret this backend sends replaced: a server that echoes the
    /// request in its error message must not put a password into the proxy's log.
    package func redacting(_ text: String?, also extra: [Secret<String>] = []) -> String? {
        guard var text else { return nil }
        for secret in Array(self.values.values) + extra {
            let value = secret.reveal()
            if value.count >= 4 { text = text.replacing(value, with: "<redacted>") }
        }
        return text
    }

    private func post(_ template: JSONTemplate, to url: HTTPURL, extra: [String: Secret<String>]) -> EndpointRequest {
        let body = template.render { name in (extra[name] ?? self.values[name])?.reveal() }
        return EndpointRequest(url: url, contentType: "application/json", body: body)
    }
}

extension SessionFailure {
    /// The same failure with the endpoint's description passed through `redact`.
    package func redactingDescription(_ redact: (String?) -> String?) -> SessionFailure {
        switch self {
        case .rejected(let code, let description, let remedy):
            .rejected(code: code, description: redact(description), remedy: remedy)
        case .loginRejected(let code, let description): .loginRejected(code: code, description: redact(description))
        case .unreachable, .timedOut, .rateLimited, .loggedOut, .commandFailed, .noRefreshToken: self
        }
    }
}
