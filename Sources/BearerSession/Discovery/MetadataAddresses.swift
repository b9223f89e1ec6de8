import BearerConfig
import BearerHTTP

/// Where an issuer's metadata may be, in the order they are asked.
///
/// RFC 8414 §3.1 inserts its well-known path between the host and the issuer's path
/// (`https://as.example/tenant` → `https://as.example/.well-known/oauth-authorization-server/tenant`);
/// OpenID Connect Discovery §4 appends its own to the issuer (`…/tenant/.well-known/openid-configuration`).
/// For an issuer without a path both are at the root. A terminating `/` of the issuer is dropped first,
/// as both say.
package enum MetadataAddresses {
    package static let authorizationServer = "/.well-known/oauth-authorization-server"
    package static let openIDConfiguration = "/.well-known/openid-configuration"

    /// The RFC 8414 address, then the OpenID Connect one.
    package static func urls(for issuer: Issuer) -> [HTTPURL] {
        var rfc8414 = issuer.url
        rfc8414.pathPrefix = Self.authorizationServer + issuer.url.pathPrefix
        var openID = issuer.url
        openID.pathPrefix = issuer.url.pathPrefix + Self.openIDConfiguration
        return [rfc8414, openID]
    }

    package static let protectedResource = "/.well-known/oauth-protected-resource"

    /// Where a protected resource's metadata is (RFC 9728 §3.1): its well-known path inserted between
    /// the host and the resource's path, like RFC 8414's.
    package static func url(forResource resource: HTTPURL) -> HTTPURL {
        var url = resource
        url.pathPrefix = Self.protectedResource + resource.pathPrefix
        return url
    }
}
