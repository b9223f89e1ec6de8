import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `bearer-proxy login` with `dpop = on` (RFC 9449 §5): each call to the token endpoint (the device
/// polls, the browser login's code exchange) carries a proof of the session's key, made on first
/// need by login itself; the proxy started afterwards signs with the same key, so the refresh it
/// makes with login's refresh token and the API requests after it are proved by the key the token
/// endpoint bound the tokens to.
@Suite struct DPoPLoginTests {
    let authority = MockTokenAuthority()
    let tokenRules = MockDPoPRules()
    let apiRules = MockDPoPRules()
    let token: MockTokenServer
    let api: MockUpstream
    let directory = temporaryDirectory()
    var keyFile: String { self.directory + "/dpop-key.pem" }
    var tokenFile: String { self.directory + "/refresh_token" }

    init() throws {
        var settings = MockTokenServer.Settings()
        settings.clientID = "dpop-cli"
        settings.expiresIn = 3600
        settings.dpop = self.tokenRules
        settings.login.deviceInterval = 0
        self.token = MockTokenServer(group: e2eMockGroup, authority: self.authority, settings: settings)
        try self.token.start()
        self.api = MockUpstream(group: e2eMockGroup, authority: self.authority, dpop: self.apiRules)
        try self.api.start()
    }

    func config(_ loginKey: String) -> String {
        temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(self.api.baseURL)
            token_url = \(self.token.url)
            client_id = dpop-cli
            \(loginKey)
            refresh_token_file = \(self.tokenFile)
            dpop = on
            dpop_key_file = \(self.keyFile)
            """
        )
    }

    /// Every token call so far carried a proof for the token URL, each its own, all of one key; the
    /// proxy then refreshes with login's refresh token and reaches the API with that key's proofs.
    func expectProofsOfOneKeyThenAProxyThatUsesIt(_ config: String, tokenCalls: Int) throws {
        #expect(self.tokenRules.failures.isEmpty, "\(self.tokenRules.failures)")
        let proofs = self.tokenRules.proofs
        #expect(proofs.count == tokenCalls)
        #expect(proofs.allSatisfy { $0.htm == "POST" && $0.htu == self.token.url && $0.ath == nil })
        #expect(Set(proofs.compactMap(\.jti)).count == proofs.count)
        let thumbprints = Set(proofs.map(\.thumbprint))
        #expect(thumbprints.count == 1)
        var status = stat()
        #expect(stat(self.keyFile, &status) == 0 && status.st_mode & 0o777 == 0o600)

        let proxy = try RunningProxy(["--config", config])
        defer { proxy.stop() }
        let response = try proxy.get("/v1/after-login")
        #expect(response.status == 200, "\(response.text)")
        #expect(self.token.recordedCalls.last?.form["grant_type"] == "refresh_token")
        #expect(self.tokenRules.proofs.count == tokenCalls + 1)
        #expect(Set(self.tokenRules.proofs.map(\.thumbprint)) == thumbprints)
        #expect(self.apiRules.failures.isEmpty, "\(self.apiRules.failures)")
        #expect(self.apiRules.proofs.map(\.thumbprint) == Array(thumbprints))
    }

    @Test func aDeviceLoginProvesEachPollWithTheKeyTheProxyThenUses() throws {
        defer {
            self.api.stop()
            self.token.stop()
        }
        let config = self.config("device_authorization_url = \(self.token.deviceAuthorizationURL)")
        let login = try ProxyProcess(["login", "--config", config])
        #expect(waitUntil { !self.token.pendingUserCodes.isEmpty })
        let userCode = try #require(self.token.pendingUserCodes.first)
        #expect(waitUntil { self.token.devicePolls(userCode: userCode) >= 2 })
        self.token.decideDeviceLogin(userCode: userCode, approve: true)
        #expect(login.waitForExit() == 0, "\(login.standardError)")
        let polls = self.token.recordedCalls.count
        #expect(polls >= 3)
        try self.expectProofsOfOneKeyThenAProxyThatUsesIt(config, tokenCalls: polls)
    }

    @Test func aBrowserLoginProvesTheCodeExchangeWithTheKeyTheProxyThenUses() throws {
        defer {
            self.api.stop()
            self.token.stop()
        }
        let config = self.config("authorization_url = \(self.token.authorizationURL)")
        let login = try ProxyProcess(["login", "--config", config, "--no-browser"])
        #expect(waitUntil { login.standardOutput.contains(self.token.authorizationURL) })
        let url = try #require(word(startingWith: self.token.authorizationURL + "?", in: login.standardOutput))
        let callback = try #require(try browse(url).header("location"))
        #expect(try browse(callback).status == 200)
        #expect(login.waitForExit() == 0, "\(login.standardError)")
        #expect(self.token.recordedCalls.map { $0.form["grant_type"] } == ["authorization_code"])
        try self.expectProofsOfOneKeyThenAProxyThatUsesIt(config, tokenCalls: 1)
    }
}
