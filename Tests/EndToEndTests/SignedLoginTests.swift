import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `bearer-proxy login` with private_key_jwt and resource indicators: every request to the device
/// authorization and token endpoints carries a freshly signed client assertion and every `resource`.
@Suite(.requires(.openssl))
struct SignedLoginTests {
    static let resources = ["https://api.test.local/", "https://files.test.local/"]

    func server(clientID: String) throws -> MockTokenServer {
        let server = try startedTokenServer(clientID: clientID, expiresIn: 600)
        let publicKey = try TestKeys.publicKey(of: try TestKeys.key(.p256))
        server.update {
            $0.assertions.clientKey = publicKey
            $0.login.deviceInterval = 0
        }
        return server
    }

    func config(_ server: MockTokenServer, clientID: String, _ extra: String) throws -> (String, String) {
        let tokenFile = temporaryDirectory() + "/refresh_token"
        let config = temporaryFile(
            """
            upstream = http://127.0.0.1:9
            token_url = \(server.url)
            client_id = \(clientID)
            client_auth = private_key_jwt
            client_key_file = \(try TestKeys.key(.p256))
            resource = \(Self.resources.joined(separator: ", "))
            refresh_token_file = \(tokenFile)
            \(extra)
            """
        )
        return (config, tokenFile)
    }

    @Test func aDeviceLoginSignsEachPollAndNamesTheResources() throws {
        let server = try self.server(clientID: "tv-app")
        defer { server.stop() }
        let (config, tokenFile) = try self.config(
            server,
            clientID: "tv-app",
            "device_authorization_url = \(server.deviceAuthorizationURL)"
        )
        let login = try ProxyProcess(["login", "--config", config])
        #expect(waitUntil { !server.pendingUserCodes.isEmpty })
        let userCode = try #require(server.pendingUserCodes.first)
        #expect(waitUntil { server.devicePolls(userCode: userCode) >= 2 })
        server.decideDeviceLogin(userCode: userCode, approve: true)
        #expect(login.waitForExit() == 0, "\(login.standardError)")
        #expect(server.assertionRefusals.isEmpty, "\(server.assertionRefusals)")
        #expect(server.deviceAuthorizationResources == [Self.resources])
        let polls = server.recordedCalls
        #expect(polls.count >= 3)
        #expect(polls.allSatisfy { $0.resources == Self.resources })
        #expect(polls.allSatisfy { $0.form["client_assertion_type"] == MockTokenServer.clientAssertionType })
        // The device request and each poll: an assertion each, every jti new.
        let assertions = server.acceptedAssertions
        #expect(assertions.count == polls.count + 1)
        #expect(Set(assertions.compactMap { $0.stringClaims["jti"] }).count == assertions.count)
        #expect(
            try String(contentsOfFile: tokenFile, encoding: .utf8) == (server.issuedRefreshTokenList.last ?? "?") + "\n"
        )
    }

    @Test func aBrowserLoginAsksForTheResourcesAndSignsTheCodeExchange() throws {
        let server = try self.server(clientID: "cli-app")
        defer { server.stop() }
        let (config, _) = try self.config(server, clientID: "cli-app", "authorization_url = \(server.authorizationURL)")
        let login = try ProxyProcess(["login", "--config", config, "--no-browser"])
        #expect(waitUntil { login.standardOutput.contains(server.authorizationURL) })
        let url = try #require(word(startingWith: server.authorizationURL + "?", in: login.standardOutput))
        let callback = try #require(try browse(url).header("location"))
        #expect(try browse(callback).status == 200)
        #expect(login.waitForExit() == 0, "\(login.standardError)")
        #expect(
            server.authorizationResources == [Self.resources],
            "RFC 8707 §2.1: asked for at the authorization endpoint"
        )
        let exchange = try #require(server.recordedCalls.last)
        #expect(exchange.form["grant_type"] == "authorization_code")
        #expect(exchange.resources == Self.resources)
        #expect(exchange.form["client_assertion_type"] == MockTokenServer.clientAssertionType)
        #expect(server.assertionRefusals.isEmpty, "\(server.assertionRefusals)")
        #expect(server.acceptedAssertions.count == 1)
    }
}
