import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `bearer-proxy login URL` against Authlib and the API it protects (`/api`, which answers 401 with
/// `resource_metadata` without a token): the API's metadata, the issuer's, registration, the browser
/// login (the test approves), the refresh token stored, the session added to the config; then the
/// proxy started with that config alone serves the API and refreshes an expired token.
@Suite(.requires(.pythonAuthlib)) struct LoginURLTests {
    let directory = temporaryDirectory()
    var state: String { self.directory + "/state" }
    var config: String { self.directory + "/config/proxy.conf" }

    /// `login URL` with `arguments`, the browser step played by the test: its exit status and stdout.
    func login(
        _ url: String,
        _ arguments: [String] = [],
        server: AuthlibServer,
        configArguments: [String]? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let login = try ProxyProcess(
            ["login", url, "--no-browser"] + (configArguments ?? ["--config", self.config]) + arguments,
            environment: ["XDG_STATE_HOME": self.state, "XDG_CONFIG_HOME": self.directory + "/xdg"]
        )
        let authorize = "http://127.0.0.1:\(server.port)/authorize?"
        if waitUntil({ login.standardOutput.contains(authorize) || !login.process.isRunning }),
            let url = word(startingWith: authorize, in: login.standardOutput)
        {
            let authorization = try browse(url)
            #expect(authorization.status == 302, "\(authorization.text)", sourceLocation: sourceLocation)
            let callback = try #require(authorization.header("location"), sourceLocation: sourceLocation)
            #expect(try browse(callback).status == 200, sourceLocation: sourceLocation)
        }
        let status = try #require(login.waitForExit(), sourceLocation: sourceLocation)
        return (status, login.standardOutput, login.standardError)
    }

    /// The proxy started with `config` alone: `GET /NAME/items` reaches the API with the stored
    /// token; once the server expired it, the API's 401 makes the proxy refresh once and replay.
    static func expectServesAndRefreshes(
        config: String,
        session: String,
        server: AuthlibServer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let proxy = try ProxyProcess(["--config", config, "--listen", "127.0.0.1:0"])
        let port = try tcpPort(of: try #require(proxy.waitUntilListening(), sourceLocation: sourceLocation))
        let request = "GET /\(session)/items HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        let address = SocketAddress(ipAddress: "127.0.0.1", port: port)!
        let first = try httpRequest(address, request)
        #expect(first.status == 200, "\(first.text)", sourceLocation: sourceLocation)
        #expect(first.text.contains(#"{"api": "/api/items"}"#), "\(first.text)", sourceLocation: sourceLocation)
        // The login's token, then the proxy's first from the stored refresh token.
        #expect(try server.issuedTokens().count == 2, sourceLocation: sourceLocation)
        try server.expireTokens()
        let second = try httpRequest(address, request)
        #expect(second.status == 200, "\(second.text)", sourceLocation: sourceLocation)
        #expect(try server.issuedTokens().count == 3, sourceLocation: sourceLocation)
        #expect(proxy.stop() == 0, "\(proxy.standardError)", sourceLocation: sourceLocation)
    }

    @Test func loginURLCreatesTheConfigAndTheProxyServesTheAPIWithIt() throws {
        let server = try AuthlibServer(mode: .rfc8414, registration: .open)
        let api = "http://127.0.0.1:\(server.port)/api"
        let result = try self.login(api, server: server)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.hasSuffix(
                "Added [session 127-0-0-1] to \(self.config). Next: bearer-proxy --config \(self.config)\n"
            ),
            "\(result.stdout)"
        )
        let tokenFile = self.state + "/bearer-proxy/127-0-0-1.refresh-token"
        #expect(
            try String(contentsOfFile: self.config, encoding: .utf8) == """
                # Added by 'bearer-proxy login \(api)'.
                [session 127-0-0-1]
                upstream = \(api)
                mount = /127-0-0-1
                resource_url = \(api)
                refresh_token_file = \(tokenFile)

                """
        )
        var status = stat()
        #expect(stat(self.config, &status) == 0 && status.st_mode & 0o777 == 0o600)
        #expect(stat(tokenFile, &status) == 0 && status.st_mode & 0o777 == 0o600)
        #expect(try server.registeredClients().count == 1)
        try Self.expectServesAndRefreshes(config: self.config, session: "127-0-0-1", server: server)
    }

    @Test func anExistingConfigIsOnlyAppendedToAndASecondLoginAddsNothing() throws {
        // The 401 names metadata away from the well-known address: the section names the issuer.
        let server = try AuthlibServer(mode: .rfc8414, registration: .open, namesMetadataElsewhere: true)
        let api = "http://127.0.0.1:\(server.port)/api"
        let mine = "# my proxy\nlisten = 127.0.0.1:0"
        try FileManager.default.createDirectory(atPath: self.directory + "/config", withIntermediateDirectories: true)
        try mine.write(toFile: self.config, atomically: false, encoding: .utf8)
        chmod(self.config, 0o640)

        let result = try self.login(api, ["--session", "items", "--scope", "read"], server: server)
        #expect(result.status == 0, "\(result.stderr)")
        let text = try String(contentsOfFile: self.config, encoding: .utf8)
        #expect(
            text == mine + """


                # Added by 'bearer-proxy login \(api)'.
                [session items]
                upstream = \(api)
                mount = /items
                issuer = \(server.issuer)
                resource = \(api)
                scope = read
                refresh_token_file = \(self.state)/bearer-proxy/items.refresh-token

                """
        )
        var status = stat()
        #expect(stat(self.config, &status) == 0 && status.st_mode & 0o777 == 0o640)
        try Self.expectServesAndRefreshes(config: self.config, session: "items", server: server)

        let again = try self.login(api, server: server)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(
            again.stdout.hasSuffix(
                "\(self.config) already has [session items] for this API: logged it in again. Next: bearer-proxy --config \(self.config)\n"
            ),
            "\(again.stdout)"
        )
        #expect(try String(contentsOfFile: self.config, encoding: .utf8) == text)
        #expect(try server.registeredClients().count == 1)
    }

    /// A server that ignores RFC 8707's `resource` issues a token for another audience; the API
    /// refuses it. Found before anything is stored, and named from the token's `aud`.
    @Test func aServerThatIgnoresResourceIsOneLineAndNothingIsStored() throws {
        let server = try AuthlibServer(mode: .rfc8414, registration: .open, audience: .ignored)
        let api = "http://127.0.0.1:\(server.port)/api"
        let result = try self.login(api, server: server)
        #expect(result.status == 1)
        let tokenFile = self.state + "/bearer-proxy/127-0-0-1.refresh-token"
        let kept = try Data(contentsOf: URL(fileURLWithPath: self.state + "/bearer-proxy/127-0-0-1.client.json"))
        let clientID = try #require((try JSONSerialization.jsonObject(with: kept) as? [String: String])?["client_id"])
        #expect(
            result.stderr
                == "Error: login \(api): the authorization server \(server.issuer) ignores the resource parameter (RFC 8707): its token is for '\(clientID)', not '\(api)', and the API refused it (401); nothing was stored\n"
        )
        #expect(!FileManager.default.fileExists(atPath: tokenFile))
        #expect(!FileManager.default.fileExists(atPath: self.config))
    }

    /// The same server honouring `resource`: the token's audience is the API, on login and refresh.
    @Test func aServerThatHonoursResourceGivesTokensTheAPITakes() throws {
        let server = try AuthlibServer(mode: .rfc8414, registration: .open, audience: .resource)
        let result = try self.login("http://127.0.0.1:\(server.port)/api", server: server)
        #expect(result.status == 0, "\(result.stderr)")
        try Self.expectServesAndRefreshes(config: self.config, session: "127-0-0-1", server: server)
    }

    @Test func anAPIWithoutMetadataNamesTheAddressTried() throws {
        let server = try AuthlibServer(mode: .rfc8414, registration: .open)
        let api = "http://127.0.0.1:\(server.port)/elsewhere"
        let result = try self.login(api, server: server)
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: login \(api): no protected resource metadata at http://127.0.0.1:\(server.port)/.well-known/oauth-protected-resource/elsewhere (404)\n"
        )
        #expect(!FileManager.default.fileExists(atPath: self.config))
    }

    /// `--device`, or no browser to open (no xdg-open or open on PATH): bearer-proxy registers with
    /// the device grant among its grant types, and logs in with Authlib's device authorization
    /// endpoint once the test, as the person, approved the code.
    @Test(arguments: [(["--device"], [:]), ([], ["PATH": "/nonexistent"])])
    func deviceLoginRegistersForTheDeviceGrant(arguments: [String], environment: [String: String]) throws {
        let server = try AuthlibServer(mode: .rfc8414, registration: .open, device: true)
        let login = try ProxyProcess(
            ["login", "http://127.0.0.1:\(server.port)/api", "--config", self.config] + arguments,
            environment: environment.merging(["XDG_STATE_HOME": self.state]) { $1 }
        )
        let verify = "http://127.0.0.1:\(server.port)/device?user_code="
        #expect(waitUntil { login.standardOutput.contains(verify) || !login.process.isRunning })
        let url = try #require(word(startingWith: verify, in: login.standardOutput), "\(login.standardError)")
        #expect(try browse(url).status == 200)
        #expect(login.waitForExit() == 0, "\(login.standardError)")
        let client = try #require(try server.registeredClients().first)
        #expect(
            client["grant_types"] as? [String] == ["refresh_token", "urn:ietf:params:oauth:grant-type:device_code"]
        )
        try Self.expectServesAndRefreshes(config: self.config, session: "127-0-0-1", server: server)
    }

    /// Without --config: the default file, and the proxy started without a flag reads it.
    @Test func withoutConfigItWritesTheDefaultFile() throws {
        let server = try AuthlibServer(mode: .rfc8414, registration: .open)
        let result = try self.login("http://127.0.0.1:\(server.port)/api", server: server, configArguments: [])
        #expect(result.status == 0, "\(result.stderr)")
        let file = self.directory + "/xdg/bearer-proxy/proxy.conf"
        #expect(
            result.stdout.hasSuffix("Added [session 127-0-0-1] to \(file). Next: bearer-proxy\n"),
            "\(result.stdout)"
        )
        #expect(FileManager.default.fileExists(atPath: file))
    }

    @Test func printShowsTheSectionAndWritesNoConfig() throws {
        let server = try AuthlibServer(mode: .rfc8414, registration: .open)
        let api = "http://127.0.0.1:\(server.port)/api"
        let result = try self.login(api, ["--print"], server: server)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.hasSuffix(
                "Add this to \(self.config) (or another config file):\n\n# Added by 'bearer-proxy login \(api)'.\n[session 127-0-0-1]\nupstream = \(api)\nmount = /127-0-0-1\nresource_url = \(api)\nrefresh_token_file = \(self.state)/bearer-proxy/127-0-0-1.refresh-token\n\n"
            ),
            "\(result.stdout)"
        )
        #expect(!FileManager.default.fileExists(atPath: self.config))
    }
}
