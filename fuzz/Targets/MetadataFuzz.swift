import BearerConfig
import BearerSession

/// Discovery documents: RFC 8414 authorization server metadata and RFC 9728 protected resource
/// metadata, as served by a server the proxy was pointed at.
enum MetadataFuzz {
    static let issuer = try! Issuer.parse("https://as.example.com/tenant").get()
    static let resource = try! Issuer.parse("https://api.example.com/v1").get()

    static func run(_ input: [UInt8]) {
        _ = AuthorizationServerMetadata.parse(input, issuer: Self.issuer)
        _ = ProtectedResourceMetadata.parse(input, resource: Self.resource)
    }
}
