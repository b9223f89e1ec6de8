import BearerHTTP
import Testing

@testable import BearerSession

/// What `login URL` reads from an API's 401 and which resource metadata it accepts for the API.
@Suite struct ResourceProbeTests {
    @Test(arguments: [
        (
            #"Bearer resource_metadata="https://api.example/.well-known/oauth-protected-resource""#,
            "https://api.example/.well-known/oauth-protected-resource"
        ),
        (#"Bearer realm="api", error="invalid_token", resource_metadata="https://m.example/x""#, "https://m.example/x"),
        (#"Basic realm="x", Bearer resource_metadata="https://m.example/a\"b""#, #"https://m.example/a"b"#),
        (#"Bearer RESOURCE_METADATA = "https://m.example/x""#, "https://m.example/x"),
        (#"Bearer realm="a, resource_metadata=x", resource_metadata="https://m.example/y""#, "https://m.example/y"),
    ])
    func readsResourceMetadataFromABearerChallenge(value: String, expected: String) {
        #expect(AuthenticateChallenge.resourceMetadata(in: [value]) == expected)
    }

    @Test(arguments: [
        #"Basic realm="x", resource_metadata="https://m.example/x""#,
        #"DPoP resource_metadata="https://m.example/x""#,
        #"Bearer realm="x""#,
        "Bearer",
        "",
        "Negotiate abc123==, Bearer",
    ])
    func findsNoneOutsideABearerChallenge(value: String) {
        #expect(AuthenticateChallenge.resourceMetadata(in: [value]) == nil)
    }

    @Test(arguments: [
        ("https://api.example/v1", "https://api.example/v1", true),
        ("https://api.example/", "https://api.example", true),
        ("https://api.example/v1/items", "https://api.example/v1", true),
        ("https://api.example/v1/items", "https://api.example", true),
        ("https://api.example/v10", "https://api.example/v1", false),
        ("https://api.example/v1", "https://api.example/v1/items", false),
        ("https://api.example/v1", "https://other.example/v1", false),
        ("https://api.example/v1", "http://api.example:443/v1", false),
        ("https://api.example:8443/v1", "https://api.example/v1", false),
    ])
    func acceptsTheAPIsAddressOrAPrefixOnItsOrigin(api: String, resource: String, accepted: Bool) throws {
        #expect(ResourceProbe.names(try HTTPURL.parse(api).get(), resource: resource) == accepted)
    }
}
