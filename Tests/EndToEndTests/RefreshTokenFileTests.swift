import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// refresh_token_file at start: a file `bearer-proxy login` has not written yet is normal, a path
/// that can never hold one stops the proxy; neither is ever blamed on the token endpoint, which is
/// not called for either.
@Suite struct RefreshTokenFileStartTests {
    let server: MockTokenServer

    init() throws {
        self.server = try startedTokenServer(clientID: "cli-app", expiresIn: 600)
    }

    func config(_ tokenFile: String) -> String {
        temporaryFile(
            """
            listen = 127.0.0.1:0
            upstream = http://127.0.0.1:9
            token_url = \(self.server.url)
            client_id = cli-app
            refresh_token_file = \(tokenFile)
            """
        )
    }

    @Test func aFolderThatDoesNotExistStopsTheStartNamingThePath() throws {
        defer { self.server.stop() }
        let folder = temporaryDirectory() + "/not-made"
        let file = folder + "/refresh_token"
        let result = try ProxyProcess.run(["--config", self.config(file)])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: \(file): refresh_token_file: its folder \(folder) does not exist (create it, or fix the path)\n"
        )
        #expect(self.server.callCount == 0)
    }

    @Test func aFileThatExistsButCannotBeReadStopsTheStartNamingThePath() throws {
        defer { self.server.stop() }
        // A directory where the file should be: unreadable as a file even for root (the tests may run as root).
        let file = temporaryDirectory() + "/refresh_token"
        try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: false)
        let result = try ProxyProcess.run(["--config", self.config(file)])
        #expect(result.status == 1)
        #expect(result.stderr == "Error: \(file): cannot read the refresh token file: Is a directory\n")
        if getuid() != 0 {
            let locked = temporaryDirectory() + "/refresh_token"
            try "rt-locked-away\n".write(toFile: locked, atomically: true, encoding: .utf8)
            chmod(locked, 0)
            let denied = try ProxyProcess.run(["--config", self.config(locked)])
            #expect(denied.status == 1)
            #expect(denied.stderr == "Error: \(locked): cannot read the refresh token file: Permission denied\n")
        }
        #expect(self.server.callCount == 0)
    }

    @Test func aFileNotWrittenYetStartsSaysToLogInAndAnswers401() throws {
        defer { self.server.stop() }
        let file = temporaryDirectory() + "/refresh_token"
        let proxy = try ProxyProcess(["--config", self.config(file)])
        let listening = try #require(proxy.waitUntilListening())
        let port = try #require(Int(listening.split(separator: ":").last ?? ""))
        // The start-up refresh finds no file: a request meanwhile waits for that answer, later ones get
        // it at once.
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: port)!,
            "GET /needs-a-token HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        )
        #expect(response.status == 401)
        #expect(
            response.text
                == "bearer-proxy: no refresh token yet: \(file) does not exist yet; run 'bearer-proxy login' (a running proxy picks the new file up by itself)\n"
        )
        #expect(proxy.stop() == 0)
        let lines = proxy.standardError.split(separator: "\n")
        let said = lines.filter { $0.contains("no refresh token") }
        #expect(said.count == 1, "one line says so: \(said)")
        #expect(said.first?.contains(" warn no refresh token yet; run 'bearer-proxy login' ") == true)
        #expect(said.first?.contains("reason=\"\(file) does not exist yet\"") == true)
        #expect(!proxy.standardError.contains("token endpoint"), "nothing is blamed on the token endpoint")
        #expect(self.server.callCount == 0)
    }
}
