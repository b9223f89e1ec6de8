import BearerConfig
import BearerCore
import BearerHTTP
import BearerIO

/// Revokes a refresh token: at `revocation_url` (RFC 7009, with the same client authentication as
/// the token endpoint), or for a JSON backend at `logout_url` (token_body's shape). Used by admin
/// `POST /logout` and by `bearer-proxy logout`.
package final class TokenRevocation: Sendable {
    private let request: @Sendable (Secret<String>) -> EndpointRequest
    private let endpointName: String
    package let url: HTTPURL
    let client: EndpointCaller

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        /// Whether the endpoint answered at all (then it refused; else it could not be reached).
        package var wasAnswered: Bool
    }

    /// Nil when there is nowhere to revoke at.
    package init?(settings: SessionSettings, credentials: SessionCredentials, client: EndpointCaller) {
        switch settings.tokenFormat {
        case .form:
            guard let url = settings.revocationURL else { return nil }
            let builder = TokenRequestBuilder(settings: settings, credentials: credentials, url: url)
            self.request = { builder.revocationRequest($0, to: url) }
            self.endpointName = "revocation endpoint"
            self.url = url
        case .json:
            let requests = JSONBackendRequests(settings: settings)
            guard let url = requests.logoutURL else { return nil }
            self.request = { requests.logout($0)! }
            self.endpointName = "logout endpoint"
            self.url = url
        }
        self.client = client
    }

    package func revoke(_ token: Secret<String>, _ completion: @escaping @Sendable (Result<Void, Failure>) -> Void) {
        let name = self.endpointName
        let origin = self.url.origin
        self.client.send(self.request(token)) { result in
            switch result {
            case .success(let response) where (200..<300).contains(response.status):
                completion(.success(()))
            case .success(let response):
                completion(.failure(Failure(description: "the \(name) answered \(response.status)", wasAnswered: true)))
            case .failure(let error):
                completion(.failure(Failure(description: "\(name) \(origin): \(error.reason)", wasAnswered: false)))
            }
        }
    }
}
