import BearerConfig
import BearerCore
import BearerHTTP
import FoundationEssentials

/// The parts of a protected resource's metadata (RFC 9728 §2) the proxy uses: its `resource`, which
/// must equal the configured resource_url (§3.3, so that one API's document cannot name another's
/// authorization server), and its first authorization server, checked as an issuer is.
package struct ProtectedResourceMetadata: Equatable, Sendable {
    package var resource: String
    package var authorizationServer: Issuer

    /// The metadata in `body`, checked against `resource` (a mismatch is `issuerMismatch` with the
    /// `resource` the document names).
    package static func parse(
        _ body: [UInt8],
        resource: Issuer
    ) -> Result<ProtectedResourceMetadata, AuthorizationServerMetadata.Problem> {
        Self.parse(body, accepting: { $0 == resource.text })
    }

    /// The metadata in `body` when `accepts` its `resource` (else `issuerMismatch` with the value).
    package static func parse(
        _ body: [UInt8],
        accepting accepts: (String) -> Bool
    ) -> Result<ProtectedResourceMetadata, AuthorizationServerMetadata.Problem> {
        guard let object = JSONText.object(body) else {
            return .failure(.unusable("it is not a JSON object"))
        }
        guard let named = object["resource"] as? String, accepts(named) else {
            return .failure(.issuerMismatch(object["resource"] as? String))
        }
        guard let servers = object["authorization_servers"] as? [String], let first = servers.first else {
            return .failure(.unusable("it names no authorization_servers"))
        }
        switch Issuer.parse(first) {
        case .success(let issuer):
            return .success(ProtectedResourceMetadata(resource: named, authorizationServer: issuer))
        case .failure(let error):
            return .failure(.unusable("its authorization server '\(HTTPURL.quotable(first))' \(error.reason)"))
        }
    }
}

extension ProtectedResourceMetadata {
    /// The metadata in `body` (from `source`) when `mismatch` finds nothing wrong with its `resource`;
    /// else one line naming the resource the document has and what `mismatch` said of it.
    static func checked(
        _ body: [UInt8],
        from source: String,
        at place: String,
        mismatch: (String) -> String?
    ) throws(DiscoveryError) -> ProtectedResourceMetadata {
        switch Self.parse(body, accepting: { mismatch($0) == nil }) {
        case .success(let metadata):
            return metadata
        case .failure(.issuerMismatch(let named)):
            let other = named.map { "'\($0)'" } ?? "no resource"
            let why = mismatch(named ?? "") ?? ""
            throw DiscoveryError(description: "\(place): the metadata at \(source) names \(other), \(why)")
        case .failure(.unusable(let reason)):
            throw .unusable(reason, source: source, at: place)
        }
    }
}

extension AuthorizationServerDiscovery {
    /// Reads `resource`'s metadata: its authorization server becomes the session's issuer unless the
    /// file sets one (a key set in the file wins), and the resource is sent as the RFC 8707 `resource`
    /// parameter unless `resource` is set.
    static func applyResource(
        _ resource: Issuer,
        to session: inout SessionSettings,
        caller: EndpointCaller,
        place: String
    ) throws(DiscoveryError) {
        let (body, source) = try Self.firstDocument(
            at: [MetadataAddresses.url(forResource: resource.url)],
            caller: caller,
            what: "protected resource metadata",
            place: place
        )
        let metadata = try ProtectedResourceMetadata.checked(body, from: source, at: place) {
            $0 == resource.text ? nil : "not the configured '\(resource.text)' (they must be equal, RFC 9728 §3.3)"
        }
        var origins: [String: String] = [:]
        if session.issuer == nil {
            session.issuer = metadata.authorizationServer
            origins[ConfigurationKey.issuer.name] = "discovered from \(source)"
        }
        if session.resources.isEmpty {
            session.resources = [metadata.resource]
            origins[ConfigurationKey.resource.name] = "discovered from \(source)"
        }
        session.discovered = DiscoveredKeys(source: source, keys: [], origins: origins)
    }
}
