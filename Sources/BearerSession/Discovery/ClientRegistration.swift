import BearerCore
import BearerHTTP
import FoundationEssentials

/// Dynamic client registration (RFC 7591) of bearer-proxy as a public client: the request, and what
/// its answer means. The login that needs a client_id sends it (docs/token-sources.md, "Discovery").
package enum ClientRegistration {
    package static let clientName = "bearer-proxy"
    package static let deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

    /// The registration request (RFC 7591 §3.1): a public client (`token_endpoint_auth_method`
    /// none, PKCE instead of a secret, RFC 8252 §8.4) with the redirect URIs and grants it uses.
    package static func request(
        to endpoint: HTTPURL,
        redirectURIs: [String],
        grantTypes: [String],
        scope: String?
    ) -> EndpointRequest {
        var metadata: [String: Any] = [
            "client_name": Self.clientName,
            "token_endpoint_auth_method": "none",
            "grant_types": grantTypes,
            "response_types": grantTypes.contains("authorization_code") ? ["code"] : [],
            "redirect_uris": redirectURIs,
        ]
        if let scope { metadata["scope"] = scope }
        let body = JSONText.text(of: metadata)
        return EndpointRequest(url: endpoint, contentType: "application/json", body: Array(body.utf8))
    }

    /// The registered client (RFC 7591 §3.2.1), or the sentence saying why not (§3.2.2: the server's
    /// `error` and `error_description`), without what to do about it: the caller adds that.
    package static func interpret(
        _ response: EndpointResponse,
        from endpoint: HTTPURL
    ) -> Result<RegisteredClient, DiscoveryError> {
        let what = "client registration at \(endpoint)"
        let object = JSONText.object(response.body)
        guard (200..<300).contains(response.status) else {
            guard let error = object?["error"] as? String else {
                return .failure(DiscoveryError(description: "\(what) answered \(response.status)"))
            }
            let description = (object?["error_description"] as? String).map { " (\(oneLine($0)))" } ?? ""
            return .failure(DiscoveryError(description: "\(what) was refused: \(oneLine(error))\(description)"))
        }
        guard let clientID = object?["client_id"] as? String, !clientID.isEmpty else {
            return .failure(DiscoveryError(description: "\(what) answered \(response.status) without a client_id"))
        }
        return .success(RegisteredClient(clientID: clientID, registrationEndpoint: endpoint.description))
    }
}
