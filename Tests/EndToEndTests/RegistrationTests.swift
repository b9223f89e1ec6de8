import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `login` without client_id registers bearer-proxy at the server's RFC 7591 endpoint (Authlib's
/// `ClientRegistrationEndpoint`) as a public client, keeps it beside the refresh token and reuses it;
/// a refusal, and a server without registration, are one line saying to set client_id.
@Suite(.requires(.pythonAuthlib)) struct RegistrationTests {
    /// `issuer` and `refresh_token_file`, and no client: what `login URL` will write.
    static func config(issuer: String, upstream: String, tokenFile: String) -> String {
        temporaryFile("upstream = \(upstream)\nissuer = \(issuer)\nrefresh_token_file = \(tokenFile)\n")
    }

    @Test func loginRegistersAPublicClientKeepsItAndReusesIt() throws {
        let server = try AuthlibServer(mode: .rfc8414, registration: .open)
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let tokenFile = temporaryDirectory() + "/refresh-token"
        let config = Self.config(issuer: server.issuer, upstream: upstream.baseURL, tokenFile: tokenFile)

        let url = try DiscoveryTests.login(config: config, server: server)
        let clients = try server.registeredClients()
        #expect(clients.count == 1)
        let client = try #require(clients.first)
        #expect(client["client_name"] as? String == "bearer-proxy")
        #expect(client["token_endpoint_auth_method"] as? String == "none")
        #expect(client["grant_types"] as? [String] == ["authorization_code", "refresh_token"])
        let redirects = try #require(client["redirect_uris"] as? [String])
        #expect(redirects.count == 1 && redirects[0].hasPrefix("http://127.0.0.1:"), "\(redirects)")
        let kept = tokenFile + ".client.json"
        var status = stat()
        #expect(stat(kept, &status) == 0 && status.st_mode & 0o777 == 0o600)
        let keptText = try String(contentsOfFile: kept, encoding: .utf8)
        let clientID = try #require(
            (try JSONSerialization.jsonObject(with: Data(keptText.utf8)) as? [String: String])?["client_id"]
        )
        #expect(url.contains("client_id=\(clientID)&"), "\(url)")
        // --check says where the client_id came from.
        let check = try ProxyProcess.run(["--check", "--config", config])
        #expect(
            check.stdout.contains(
                "\nclient_id = \(clientID)  # registered at http://127.0.0.1:\(server.port)/register by login, kept in \(kept)\n"
            ),
            "\(check.stdout)"
        )

        // The proxy authenticates as that client (none: client_id only) when it refreshes.
        try DiscoveryTests.expectServes(config: config, upstream: upstream, server: server, tokensIssued: 2)
        // A second login reuses the kept client: no second registration.
        let again = try DiscoveryTests.login(config: config, server: server)
        #expect(again.contains("client_id=\(clientID)&"))
        #expect(try server.registeredClients().count == 1)

        // Logout deletes what login created: the token file and the client beside it.
        let logout = try ProxyProcess.run(["logout", "--config", config])
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(logout.stdout.contains("Deleted \(kept).\n"), "\(logout.stdout)")
        #expect(!FileManager.default.fileExists(atPath: tokenFile))
        #expect(!FileManager.default.fileExists(atPath: kept))
    }

    @Test func aRefusedRegistrationIsOneLineWithTheServersError() throws {
        let server = try AuthlibServer(mode: .rfc8414, registration: .refusing)
        let tokenFile = temporaryDirectory() + "/refresh-token"
        let config = Self.config(issuer: server.issuer, upstream: "http://127.0.0.1:9", tokenFile: tokenFile)
        let result = try ProxyProcess.run(["login", "--config", config, "--no-browser"])
        #expect(result.status == 1)
        #expect(
            result.stderr.hasPrefix(
                "Error: client registration at http://127.0.0.1:\(server.port)/register was refused: invalid_client_metadata ("
            ),
            "\(result.stderr)"
        )
        #expect(result.stderr.hasSuffix("; register a client and set client_id\n"), "\(result.stderr)")
        #expect(result.stderr.filter { $0 == "\n" }.count == 1, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: tokenFile + ".client.json"))
    }

    @Test func noRegistrationEndpointAndNoClientIDSaysWhereToRegister() throws {
        let server = try AuthlibServer(mode: .rfc8414)
        let tokenFile = temporaryDirectory() + "/refresh-token"
        let config = Self.config(issuer: server.issuer, upstream: "http://127.0.0.1:9", tokenFile: tokenFile)
        let result = try ProxyProcess.run(["login", "--config", config, "--no-browser"])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: the authorization server \(server.issuer) offers no client registration (its metadata has no registration_endpoint): register a client at \(server.issuer) and set client_id\n"
        )
    }

    /// Under credential_store = secret-service the registered client is a keyring item of its own,
    /// which secret-tool finds, and no `.client` file is written; the proxy refreshes as that client,
    /// and the next login reuses it.
    @Test(.requires(.dbusDaemon), .requires(.gnomeKeyring), .requires(.secretTool))
    func underTheSecretServiceTheClientIsAKeyringItem() throws {
        let bus = try SessionBus()
        try bus.startKeyring()
        let server = try AuthlibServer(mode: .rfc8414, registration: .open)
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let stateFolder = temporaryDirectory()
        let environment = bus.environment.merging(["XDG_STATE_HOME": stateFolder]) { $1 }
        let config = temporaryFile(
            "upstream = \(upstream.baseURL)\nissuer = \(server.issuer)\ncredential_store = secret-service\n"
        )

        let url = try DiscoveryTests.login(config: config, server: server, environment: environment)
        let item = try bus.secretTool(["lookup", "application", "bearer-proxy", "session", "default", "kind", "client"])
        #expect(item.status == 0, "\(item.standardError)")
        let kept = try #require(
            try JSONSerialization.jsonObject(with: Data(item.standardOutput.utf8)) as? [String: String]
        )
        let clientID = try #require(kept["client_id"])
        #expect(kept["registration_endpoint"] == "http://127.0.0.1:\(server.port)/register")
        #expect(url.contains("client_id=\(clientID)&"), "\(url)")
        let files = try FileManager.default.subpathsOfDirectory(atPath: stateFolder)
        #expect(!files.contains { $0.hasSuffix(".client.json") }, "\(files)")
        // --check names the client and where it is kept.
        let check = try ProxyProcess.run(["--check", "--config", config], environment: environment)
        #expect(
            check.stdout.contains(
                "\n# client_id: \(clientID), registered at http://127.0.0.1:\(server.port)/register by login, kept in the Secret Service item application=bearer-proxy session=default kind=client"
            ),
            "\(check.stdout)"
        )

        try DiscoveryTests.expectServes(
            config: config,
            upstream: upstream,
            server: server,
            tokensIssued: 2,
            environment: environment
        )

        let again = try DiscoveryTests.login(config: config, server: server, environment: environment)
        #expect(again.contains("client_id=\(clientID)&"), "\(again)")
        #expect(try server.registeredClients().count == 1)

        // Logout deletes both items (the contract's "logout deletes the items").
        let logout = try ProxyProcess.run(["logout", "--config", config], environment: environment)
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(logout.stdout.contains("Deleted the registered client from "), "\(logout.stdout)")
        for kind in ["refresh_token", "client"] {
            let gone = try bus.secretTool(["lookup", "application", "bearer-proxy", "session", "default", "kind", kind])
            #expect(gone.status != 0, "\(kind): \(gone.standardOutput)")
        }
    }
}
