import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// Runs refresh storms with every kind of secret in play, then greps every log line, the access log,
/// `/status`, `/metrics` and the `--check` report for every secret used. In the JSON flavour the
/// initial refresh token is refused, so a login with the password happens too.
@Suite struct SecretsAuditTests {
    @Test(arguments: TokenFlavour.allCases)
    func noSecretReachesAnyLogOrOperatorOutput(flavour: TokenFlavour) throws {
        let directory = try ScratchSpace.newDirectory("audit")
        let tokenFile = directory + "/refresh_token"
        let accessLog = directory + "/access.log"
        try "rt-audit-initial\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let fixture = try SessionFixture(
            flavour: flavour,
            tokenSettings: {
                $0.refreshTokens = flavour == .form ? ["rt-audit-initial"] : []
                $0.rotatesRefreshTokens = true
            }
        ) { config, server in
            if flavour == .json { SessionFixture.addJSONLogin(&config, server) }
            config.grantType = .refreshToken
            config.refreshTokenFile = tokenFile
            config.accessToken = Secret("at-audit-configured")
            config.accessLog = .file(accessLog)
            config.adminListen = .hostPort(host: "127.0.0.1", port: 0)
        }
        let clients = try (0..<40).map { _ in try fixture.client() }
        for round in 0..<3 {
            fixture.authority.revokeAll()
            for (index, client) in clients.enumerated() {
                client.send(
                    "GET /audit/\(round)/\(index) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer client-own-secret\r\n\r\n"
                )
            }
            for client in clients { #expect(try client.readResponse().status == 200) }
        }
        let admin = try #require(fixture.proxy.adminAddress)
        let status = try httpRequest(admin, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:\(admin.port!)\r\n\r\n").text
        let metrics = try httpRequest(admin, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(admin.port!)\r\n\r\n").text
        let report = ConfigurationLoader.report(fixture.proxy.runtime.configuration)

        let rotated = fixture.tokenServer.issuedRefreshTokenList
        #expect(rotated.count >= 3)
        if flavour == .json {
            #expect(fixture.tokenServer.loginCallCount == 1, "the refused refresh token led to a login")
        }
        let secrets =
            [
                "rt-audit-initial", "at-audit-configured", "client-own-secret", SessionFixture.clientSecret,
                SessionFixture.password,
            ]
            + rotated + (1...fixture.authority.issuedCount).map { "mock-access-\($0)" }
        // The access log is written by a thread of its own: all of it once the proxy stopped.
        let accessLines = fixture.stopAndReadAccessLog(accessLog)
        #expect(accessLines.count >= 3 * clients.count, "a line per request")
        let outputs = [
            ("log", fixture.logs.capturedLines.joined()),
            ("access log", accessLines.joined(separator: "\n")),
            ("/status", status), ("/metrics", metrics), ("--check", report),
        ]
        #expect(outputs[0].1.contains("token refreshed"), "the storm was logged")
        for (name, text) in outputs {
            let words = Set(text.split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "-" }).map(String.init))
            for secret in secrets {
                #expect(!words.contains(secret), "\(secret) appears in the \(name)")
            }
        }
    }
}
