import BearerCore
import BearerDemo
import BearerIO

/// What the tests add to the demo's token endpoint (`MockTokenServerAdditions`): the login endpoints
/// (`MockTokenServer+Login`) and the checks of signed credentials (`MockTokenServer+Assertions`), with
/// what they remember of the calls.
final class MockTestEndpoints: MockTokenServerAdditions {
    /// Authorization codes and device codes handed out.
    let loginGrants = Locked(MockTokenServer.LoginGrants())
    /// Signed JWTs accepted and refused.
    let assertionLog = Locked(AssertionLog())

    func answer(_ request: MockRequest, server: MockTokenServer) -> MockResponse? {
        switch request.path {
        case MockTokenServer.authorizePath: server.authorize(request)
        case MockTokenServer.devicePath: server.startDeviceAuthorization(request)
        case MockTokenServer.revokeAllPath: server.revokeEverything()
        default: nil
        }
    }

    func refusal(
        of request: MockRequest,
        form: [String: String],
        settings: MockTokenServer.Settings,
        server: MockTokenServer
    ) -> MockResponse? {
        server.checkSignedCredentials(request, form, settings)
    }

    func answer(
        grant: String,
        form: [String: String],
        settings: MockTokenServer.Settings,
        thumbprint: String?,
        server: MockTokenServer
    ) -> MockResponse? {
        switch grant {
        case MockTokenServer.jwtBearerGrantType:
            server.oauth2TokenResponse(settings, refreshToken: nil, boundTo: thumbprint)
        case "authorization_code": server.redeemAuthorizationCode(form, settings)
        case MockTokenServer.deviceGrantType: server.pollDeviceAuthorization(form, settings)
        default: nil
        }
    }
}

extension MockTokenServer {
    /// `POST` here revokes every token issued so far: the upstream refuses them all from then on.
    package static let revokeAllPath = "/test/revoke-all"

    /// An expiry storm on demand, for a test's own client (the admin page's browser test).
    func revokeEverything() -> MockResponse {
        self.authority.revokeAll()
        return .text(200, "revoked\n")
    }

    /// A token endpoint with the tests' login endpoints and checks of signed credentials.
    package convenience init(
        group: EventLoopGroup,
        authority: MockTokenAuthority = MockTokenAuthority(),
        settings: Settings = Settings(),
        tls: TLSContext? = nil,
        network: any StreamNetwork = SocketNetwork()
    ) {
        self.init(
            group: group,
            authority: authority,
            settings: settings,
            tls: tls,
            network: network,
            additions: MockTestEndpoints()
        )
    }

    private var testEndpoints: MockTestEndpoints {
        guard let endpoints = self.additions as? MockTestEndpoints else {
            preconditionFailure("this token server was made without the tests' endpoints (additions: nil)")
        }
        return endpoints
    }

    var loginGrants: Locked<LoginGrants> { self.testEndpoints.loginGrants }
    var assertionLog: Locked<AssertionLog> { self.testEndpoints.assertionLog }
}

extension MockTokenServer.Settings {
    /// How the authorization and device endpoints behave.
    package var login: MockTokenServer.LoginSettings {
        get { self.additionSettings[MockTokenServer.LoginSettings.self] ?? MockTokenServer.LoginSettings() }
        set { self.additionSettings[MockTokenServer.LoginSettings.self] = newValue }
    }

    /// What signed client assertions, JWT bearer grants and client certificates must be.
    package var assertions: MockTokenServer.AssertionRules {
        get { self.additionSettings[MockTokenServer.AssertionRules.self] ?? MockTokenServer.AssertionRules() }
        set { self.additionSettings[MockTokenServer.AssertionRules.self] = newValue }
    }
}

extension MockUpstream {
    /// The rules its DPoP proofs are checked with, when it checks them.
    package var dpop: MockDPoPRules? { self.dpopCheck as? MockDPoPRules }
}
