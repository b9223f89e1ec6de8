import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// Refresh storms with each new token source, the proxy logging at debug: no byte of a key file, no
/// signed assertion (nor its signature), no token reaches a log line, `/status`, `/metrics` or
/// `--check`.
@Suite(.requires(.openssl))
struct SignedCredentialSecretsAuditTests {
    enum Source: String, CaseIterable, Sendable {
        case privateKeyJWT, jwtBearer, serviceAccount, mutualTLS
    }

    @Test(arguments: Source.allCases)
    func noKeyAssertionOrTokenReachesAnyOutput(_ source: Source) throws {
        switch source {
        case .serviceAccount: try self.auditServiceAccount()
        case .privateKeyJWT, .jwtBearer, .mutualTLS: try self.auditTokenEndpoint(source)
        }
    }

    /// The check itself finds a whole token, whatever surrounds it, and only a whole one.
    @Test func theCheckFindsWholeTokensOnly() {
        withKnownIssue {
            expectNoSecrets(["ya29.mock-1"], in: [("log", "token=\"ya29.mock-1\" next")])
        }
        withKnownIssue {
            expectNoSecrets(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"], in: [("log", "key=MIIEvQIBADANBgkqhkiG9w0BAQEFAASC")])
        }
        expectNoSecrets(["ya29.mock-1", "mock-access-1"], in: [("log", "ya29.mock-12 mock-access-10 xmock-access-1")])
    }

    private func auditTokenEndpoint(_ source: Source) throws {
        let key = try TestKeys.key(source == .privateKeyJWT ? .p256 : .rsa2048)
        let publicKey = try TestKeys.publicKey(of: key)
        let certificates = try ClientCertificates()
        let usesTLS = source == .mutualTLS
        let proxy = try SignedTokenProxy(
            tokenTLS: usesTLS ? try E2ETLSFixtures.server(clientCA: certificates.root) : nil,
            upstreamTLS: usesTLS ? try E2ETLSFixtures.server(clientCA: certificates.root) : nil
        ) {
            $0.refreshTokens = ["rt-audit-seed-secret"]
            $0.rotatesRefreshTokens = true
            switch source {
            case .privateKeyJWT:
                $0.clientID = "audit-client"
                $0.assertions.clientKey = publicKey
            case .jwtBearer:
                $0.assertions.grantKey = publicKey
                $0.assertions.grantIssuer = "audit-client"
            case .mutualTLS:
                $0.clientID = "audit-client"
                $0.assertions.clientCertificateSubject = ClientCertificates.subject
            case .serviceAccount:
                break
            }
        }
        let tokenFile = proxy.directory + "/refresh_token"
        try "rt-audit-seed-secret\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let lines: String
        switch source {
        case .privateKeyJWT:
            lines =
                "client_id = audit-client\nclient_auth = private_key_jwt\nclient_key_file = \(key)\nrefresh_token_file = \(tokenFile)"
        case .jwtBearer:
            lines = "grant_type = jwt_bearer\nclient_id = audit-client\nclient_key_file = \(key)"
        case .mutualTLS, .serviceAccount:
            lines = "client_id = audit-client\nclient_auth = tls_client_auth\n\(certificates.lines)"
        }
        try proxy.start(lines)
        try proxy.storm(callCount: { proxy.tokenServer.callCount })
        let status = try proxy.status().text
        let metrics = try proxy.metrics()
        let check = try ProxyProcess.run(["--check", "--config", proxy.configFile(lines)])
        proxy.stop()
        #expect(proxy.tokenServer.assertionRefusals.isEmpty)
        #expect(proxy.process.standardError.contains("token refreshed"), "the storm was logged")

        let assertions = proxy.tokenServer.acceptedAssertions.map(\.compact)
        #expect(assertions.count == (source == .mutualTLS ? 0 : 4))
        let keyLines = try TestKeys.pemBodyLines(of: key) + TestKeys.pemBodyLines(of: certificates.key)
        let secrets =
            keyLines + assertions + assertions.compactMap { $0.split(separator: ".").last.map(String.init) }
            + ["rt-audit-seed-secret"] + proxy.tokenServer.issuedRefreshTokenList + proxy.issuedAccessTokens
        expectNoSecrets(
            secrets,
            in: [
                ("stderr", proxy.process.standardError), ("/status", status), ("/metrics", metrics),
                ("--check", check.stdout + check.stderr),
            ]
        )
    }

    private func auditServiceAccount() throws {
        let account = try GoogleAccount()
        let process = try ProxyProcess(["--config", account.config])
        let listening = try #require(process.waitUntilListening())
        let address = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: listening))!
        let admin = try #require(
            word(startingWith: "admin=", in: process.standardError).flatMap { Int($0.split(separator: ":").last!) }
        )
        let adminAddress = SocketAddress(ipAddress: "127.0.0.1", port: admin)!
        func statusText() throws -> String {
            try httpRequest(adminAddress, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:\(admin)\r\n\r\n").text
        }
        // The start-up refresh ended first: running during the storm's first round, it would be that
        // round's one call (a refresh asked for while it runs joins it).
        #expect(
            waitUntil { (try? statusText())?.contains("\"token_generation\" : 1") == true },
            "the proxy fetches a token at start"
        )
        try revocationStorm(through: address, authority: account.authority, callCount: { account.google.callCount })
        let status = try statusText()
        let check = try ProxyProcess.run(["--check", "--config", account.config])
        process.signal(SIGTERM)
        #expect(process.waitForExit() == 0)
        #expect(account.google.callCount == 4, "one at start, one per revocation")
        let assertions = account.google.acceptedAssertions.map(\.compact)
        expectNoSecrets(
            try TestKeys.pemBodyLines(of: account.keyFile) + assertions
                + assertions.compactMap { $0.split(separator: ".").last.map(String.init) }
                + (1...account.authority.issuedCount).map { "ya29.mock-\($0)" },
            in: [("stderr", process.standardError), ("/status", status), ("--check", check.stdout + check.stderr)]
        )
    }
}
