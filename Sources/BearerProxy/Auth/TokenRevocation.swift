import BearerCore
import BearerIO

/// Revokes a refresh token at `revocation_url` (RFC 7009), with the same client authentication as
/// the token endpoint.
final class TokenRevocation: Sendable {
    let url: UpstreamURL
    let builder: TokenRequestBuilder
    let client: EndpointCaller

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(configuration: Configuration, url: UpstreamURL, client: EndpointCaller) {
        self.url = url
        self.builder = TokenRequestBuilder(configuration: configuration, url: url)
        self.client = client
    }

    func revoke(_ token: Secret<String>, _ completion: @escaping @Sendable (Result<Void, Failure>) -> Void) {
        let origin = self.url.origin
        self.client.send(self.builder.revocationRequest(token, to: self.url)) { result in
            switch result {
            case .success(let response) where (200..<300).contains(response.status):
                completion(.success(()))
            case .success(let response):
                completion(.failure(Failure(description: "the revocation endpoint answered \(response.status)")))
            case .failure(let error):
                completion(.failure(Failure(description: "revocation endpoint \(origin): \(error.reason)")))
            }
        }
    }
}
