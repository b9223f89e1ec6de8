import BearerConfig
import BearerCore
import BearerHTTP
import BearerIO

/// `bearer-proxy login URL`'s first step: from nothing but the API's address to its authorization
/// server. An unauthenticated `GET URL`; the 401's `WWW-Authenticate: Bearer resource_metadata="…"`
/// names the protected resource metadata (RFC 9728 §5.1), else it is at the URL's well-known address
/// (§3.1); the document names the resource and its authorization server.
package struct ResourceProbe {
    let caller: EndpointCaller

    package init(caller: EndpointCaller) {
        self.caller = caller
    }

    /// What the API's metadata said, and where it was.
    package struct Found: Equatable, Sendable {
        /// The metadata's `resource`, exactly as written: the RFC 8707 resource, and resource_url.
        package var resource: String
        package var authorizationServer: Issuer
        /// The document's address.
        package var source: String
        /// The document is at `resource`'s well-known address, where `resource_url` looks for it at
        /// start; else the session names the issuer and the resource instead.
        package var isAtWellKnownAddress: Bool
    }

    /// The API's resource metadata, or one line naming the step that failed.
    package func discover(_ api: HTTPURL) throws(DiscoveryError) -> Found {
        let place = "login \(api)"
        var probe = EndpointResponse(status: 0, headers: [], body: [])
        switch self.caller.sendAndWait(Self.get(api)) {
        case .success(let response): probe = response
        case .failure(.responseTooLarge): break  // an answer, and no 401: the well-known address
        case .failure(let error):
            throw DiscoveryError(description: "\(place): the API did not answer: \(error.reason)")
        }
        let challenges = probe.headers.filter { $0.name.lowercased() == "www-authenticate" }.map(\.value)
        var metadataURL = MetadataAddresses.url(forResource: api)
        var named = ""
        if probe.status == 401, let text = AuthenticateChallenge.resourceMetadata(in: challenges) {
            switch Issuer.parse(text) {
            case .success(let url): metadataURL = url.url
            case .failure(let error):
                throw DiscoveryError(
                    description:
                        "\(place): the API's 401 names resource_metadata '\(HTTPURL.quotable(text))', which \(error.reason)"
                )
            }
            named = " (named by the API's 401)"
        }
        let (body, source) = try AuthorizationServerDiscovery.firstDocument(
            at: [metadataURL],
            caller: self.caller,
            what: "protected resource metadata\(named)",
            place: place
        )
        let metadata = try ProtectedResourceMetadata.checked(body, from: source, at: place) {
            Self.names(api, resource: $0) ? nil : "which is not \(api) nor a prefix of it (RFC 9728 §3.3)"
        }
        let wellKnown = HTTPURL.parse(metadata.resource).map { MetadataAddresses.url(forResource: $0).description }
        return Found(
            resource: metadata.resource,
            authorizationServer: metadata.authorizationServer,
            source: source,
            isAtWellKnownAddress: (try? wellKnown.get()) == source
        )
    }

    /// Whether the metadata's `resource` describes the API at `api`: the same address (a trailing
    /// `/` aside), or the same origin with a path that `api`'s starts with, segment-wise
    /// (`https://api.example/v1` for `https://api.example/v1/items`). RFC 9728 §3.3 asks for the
    /// address the metadata was found by; a person types an address inside the API as often as its
    /// root, and another origin is never accepted.
    static func names(_ api: HTTPURL, resource text: String) -> Bool {
        guard case .success(let resource) = HTTPURL.parse(text), resource.origin == api.origin,
            resource.isHTTPS == api.isHTTPS
        else { return false }
        return api.pathPrefix == resource.pathPrefix || api.pathPrefix.hasPrefix(resource.pathPrefix + "/")
    }

    /// The API's answer to a GET with `token`, as the proxy would send it.
    package func answer(of api: HTTPURL, token: Secret<String>) -> Result<EndpointResponse, EndpointError> {
        var request = Self.get(api)
        request.fields = [("Authorization", "Bearer \(token.reveal())")]
        return self.caller.sendAndWait(request)
    }

    private static func get(_ url: HTTPURL) -> EndpointRequest {
        EndpointRequest(
            url: url,
            contentType: "",
            body: [],
            method: "GET",
            maximumResponseBytes: AuthorizationServerDiscovery.maximumDocumentBytes
        )
    }
}
