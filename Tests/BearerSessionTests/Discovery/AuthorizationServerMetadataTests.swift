import BearerCore
import BearerHTTP
import Foundation
import Testing

@testable import BearerConfig
@testable import BearerSession

/// Where an issuer's metadata is looked for, what of it is used, and what makes it unusable.
@Suite struct AuthorizationServerMetadataTests {
    static func issuer(_ text: String) throws -> Issuer {
        try Issuer.parse(text).get()
    }

    @Test(arguments: [
        (
            "https://as.example", "https://as.example/.well-known/oauth-authorization-server",
            "https://as.example/.well-known/openid-configuration"
        ),
        (
            "https://as.example/", "https://as.example/.well-known/oauth-authorization-server",
            "https://as.example/.well-known/openid-configuration"
        ),
        (
            "https://as.example/tenant/v2", "https://as.example/.well-known/oauth-authorization-server/tenant/v2",
            "https://as.example/tenant/v2/.well-known/openid-configuration"
        ),
        (
            "http://127.0.0.1:8443/realms/x/", "http://127.0.0.1:8443/.well-known/oauth-authorization-server/realms/x",
            "http://127.0.0.1:8443/realms/x/.well-known/openid-configuration"
        ),
    ])
    func theWellKnownAddressesInsertThenAppend(issuer: String, rfc8414: String, openID: String) throws {
        let urls = MetadataAddresses.urls(for: try Self.issuer(issuer)).map(\.description)
        #expect(urls == [rfc8414, openID])
    }

    @Test func anIssuerIsHTTPSOrLoopbackHTTPWithoutQuery() {
        #expect(throws: Never.self) { try Issuer.parse("https://as.example/x").get() }
        #expect(throws: Never.self) { try Issuer.parse("http://localhost:9000").get() }
        #expect(throws: URLParseError.self) { try Issuer.parse("http://as.example").get() }
        #expect(throws: URLParseError.self) { try Issuer.parse("https://as.example/?tenant=1").get() }
    }

    static func parse(
        _ object: [String: Any],
        issuer: String = "https://as.example"
    ) throws
        -> Result<AuthorizationServerMetadata, AuthorizationServerMetadata.Problem>
    {
        let body = try JSONSerialization.data(withJSONObject: object)
        return AuthorizationServerMetadata.parse(Array(body), issuer: try Self.issuer(issuer))
    }

    @Test func theEndpointsAndWhatIsSupportedAreRead() throws {
        let metadata = try Self.parse([
            "issuer": "https://as.example",
            "token_endpoint": "https://as.example/token",
            "authorization_endpoint": "https://as.example/authorize",
            "device_authorization_endpoint": "https://as.example/device",
            "revocation_endpoint": "https://as.example/revoke",
            "registration_endpoint": "https://as.example/register",
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid"],
        ]).get()
        #expect(metadata.tokenEndpoint.description == "https://as.example/token")
        #expect(metadata.authorizationEndpoint?.description == "https://as.example/authorize")
        #expect(metadata.deviceAuthorizationEndpoint?.description == "https://as.example/device")
        #expect(metadata.revocationEndpoint?.description == "https://as.example/revoke")
        #expect(metadata.registrationEndpoint?.description == "https://as.example/register")
        #expect(metadata.grantTypes == ["client_credentials"])
        #expect(metadata.tokenEndpointAuthMethods == ["client_secret_post"])
        #expect(metadata.codeChallengeMethods == ["S256"])
    }

    @Test func theIssuerMustBeEqualCharacterForCharacter() throws {
        let token = "https://as.example/token"
        #expect(
            try Self.parse(["issuer": "https://as.example/", "token_endpoint": token])
                == .failure(.issuerMismatch("https://as.example/"))
        )
        #expect(try Self.parse(["token_endpoint": token]) == .failure(.issuerMismatch(nil)))
        #expect(
            try Self.parse(["issuer": "https://as.example/", "token_endpoint": token], issuer: "https://as.example/")
                .map(\.tokenEndpoint.description) == .success(token)
        )
    }

    @Test(
        arguments: [
            ([:], "it has no token_endpoint"),
            (["token_endpoint": 7], "token_endpoint is not a string"),
            (
                ["token_endpoint": "ftp://as.example/t"],
                "token_endpoint 'ftp://as.example/t' must start with http:// or https://"
            ),
            (
                ["token_endpoint": "http://as.example/t"],
                "token_endpoint 'http://as.example/t' is http:// to another machine (only https://, or http:// on a loopback address)"
            ),
            (
                ["token_endpoint": "https://as.example/t", "revocation_endpoint": "http://10.0.0.1/r"],
                "revocation_endpoint 'http://10.0.0.1/r' is http:// to another machine (only https://, or http:// on a loopback address)"
            ),
            (
                ["token_endpoint": "https://as.example/t", "grant_types_supported": "client_credentials"],
                "grant_types_supported is not a list of strings"
            ),
        ] as [([String: any Sendable], String)]
    )
    func anUnusableDocumentSaysWhy(fields: [String: any Sendable], reason: String) throws {
        var object: [String: Any] = ["issuer": "https://as.example"]
        for (key, value) in fields { object[key] = value }
        #expect(try Self.parse(object) == .failure(.unusable(reason)))
    }

    @Test func aDocumentThatIsNotAJSONObjectIsUnusable() throws {
        let issuer = try Self.issuer("https://as.example")
        #expect(
            AuthorizationServerMetadata.parse(Array("[1]".utf8), issuer: issuer)
                == .failure(.unusable("it is not a JSON object"))
        )
        #expect(
            AuthorizationServerMetadata.parse(Array("<html>".utf8), issuer: issuer)
                == .failure(.unusable("it is not a JSON object"))
        )
    }

    @Test func unsetKeysAreFilledAndSetOnesWin() throws {
        let metadata = try Self.parse([
            "issuer": "https://as.example",
            "token_endpoint": "https://as.example/token",
            "authorization_endpoint": "https://as.example/authorize",
            "revocation_endpoint": "https://as.example/revoke",
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
        ]).get()
        var session = SessionSettings.defaultSession
        session.tokenURL = try HTTPURL.parse("https://mine.example/token").get()
        session.clientSecret = Secret("s")
        let places = SettingPlaces(byKey: ["token_url": "proxy.conf:3"])
        try AuthorizationServerDiscovery.apply(metadata, from: "M", to: &session, places: places, place: "p")
        #expect(session.tokenURL?.description == "https://mine.example/token")
        #expect(session.login.authorizationURL?.description == "https://as.example/authorize")
        #expect(session.revocationURL?.description == "https://as.example/revoke")
        #expect(session.clientAuthentication == .post)
        #expect(
            session.discovered
                == DiscoveredKeys(source: "M", keys: ["authorization_url", "revocation_url", "client_auth"])
        )
    }

    @Test func aGrantTheServerDoesNotOfferIsAnErrorUnlessTheFileChoseIt() throws {
        let metadata = try Self.parse([
            "issuer": "https://as.example",
            "token_endpoint": "https://as.example/token",
            "grant_types_supported": ["authorization_code", "refresh_token"],
        ]).get()
        var session = SessionSettings.defaultSession
        #expect(
            throws: DiscoveryError(
                description:
                    "p: the server does not offer the client_credentials grant (it offers authorization_code, refresh_token): set grant_type"
            )
        ) {
            try AuthorizationServerDiscovery.apply(
                metadata,
                from: "M",
                to: &session,
                places: SettingPlaces(),
                place: "p"
            )
        }
        session.grantType = .clientCredentials
        try AuthorizationServerDiscovery.apply(
            metadata,
            from: "M",
            to: &session,
            places: SettingPlaces(byKey: ["grant_type": "f:1"]),
            place: "p"
        )
        #expect(session.tokenURL?.description == "https://as.example/token")
    }
}
