import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// Plays the browser: GETs a URL on 127.0.0.1 and returns the response (redirects are not followed:
/// the test follows them, as a browser would, to see each step).
func browse(_ url: String) throws -> BlockingHTTPClient.Response {
    let rest = try #require(url.hasPrefix("http://127.0.0.1:") ? url.dropFirst("http://127.0.0.1:".count) : nil)
    let port = try #require(Int(rest.prefix { $0.isNumber }))
    let target = String(rest.drop { $0.isNumber })
    return try httpRequest(
        SocketAddress(ipAddress: "127.0.0.1", port: port)!,
        "GET \(target.isEmpty ? "/" : target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUser-Agent: test-browser\r\n\r\n"
    )
}

/// The query of a URL as a dictionary (percent-decoding, `+` as a space).
func queryItems(_ url: String) -> [String: String] {
    var items: [String: String] = [:]
    for pair in (url.split(separator: "?", maxSplits: 1).dropFirst().first ?? "").split(separator: "&") {
        let parts = pair.split(separator: "=", maxSplits: 1).map {
            String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
        }
        items[parts[0]] = parts.count > 1 ? parts[1] : ""
    }
    return items
}

func fileMode(_ path: String) -> mode_t? {
    var info = stat()
    return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
}

/// A running mock token server for an OAuth2 client (the login tests' authorization server).
func startedTokenServer(clientID: String, expiresIn: Int) throws -> MockTokenServer {
    var settings = MockTokenServer.Settings()
    settings.clientID = clientID
    settings.expiresIn = expiresIn
    let server = MockTokenServer(group: e2eMockGroup, settings: settings)
    try server.start()
    return server
}

/// The first word of `text` that starts with `prefix`.
func word(startingWith prefix: String, in text: String) -> String? {
    text.split(whereSeparator: { $0.isWhitespace }).first { $0.hasPrefix(prefix) }.map(String.init)
}

@Suite struct BrowserLoginTests {
    let server: MockTokenServer
    let directory = temporaryDirectory()
    var tokenFile: String { self.directory + "/nested/refresh_token" }

    init() throws {
        self.server = try startedTokenServer(clientID: "cli-app", expiresIn: 3600)
    }

    func config(_ extra: String = "") -> String {
        temporaryFile(
            """
            upstream = http://127.0.0.1:9
            token_url = \(self.server.url)
            authorization_url = \(self.server.authorizationURL)
            client_id = cli-app
            scope = read write
            refresh_token_file = \(self.tokenFile)
            \(extra)
            """
        )
    }

    /// Every token the mock issued: none may appear in the command's output.
    func expectNoTokens(in texts: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let secrets =
            self.server.issuedRefreshTokenList
            + (1...max(self.server.authority.issuedCount, 1)).map {
                "mock-access-\($0)"
            }
        for text in texts {
            for secret in secrets {
                #expect(!text.contains(secret), "\(secret) was printed", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func aBrowserLoginWithPKCEStoresTheRefreshTokenAndRefusesAForeignState() throws {
        defer { self.server.stop() }
        let login = try ProxyProcess(["login", "--config", self.config(), "--no-browser"])
        #expect(waitUntil { login.standardOutput.contains(self.server.authorizationURL) })
        let url = try #require(word(startingWith: self.server.authorizationURL + "?", in: login.standardOutput))
        let query = queryItems(url)
        #expect(query["response_type"] == "code")
        #expect(query["client_id"] == "cli-app")
        #expect(query["code_challenge_method"] == "S256")
        #expect(query["scope"] == "read write")
        let redirectURI = try #require(query["redirect_uri"])
        #expect(redirectURI.hasPrefix("http://127.0.0.1:") && redirectURI.hasSuffix("/callback"))
        let state = try #require(query["state"])
        let challenge = try #require(query["code_challenge"])
        #expect(challenge.count == 43)

        // A page (or another local program) delivering a code under another state is refused, and
        // the login keeps waiting for its own callback.
        let forged = try browse("\(redirectURI)?state=forged-state&code=attacker-code")
        #expect(forged.status == 400)
        #expect(forged.text.contains("does not match the login in progress"))
        #expect(login.process.isRunning)

        // The user logs in: the authorization server redirects to the loopback listener at once.
        let authorization = try browse(url)
        #expect(authorization.status == 302)
        let callback = try #require(authorization.header("location"))
        #expect(callback.hasPrefix(redirectURI + "?state=") && queryItems(callback)["state"] == state)
        let page = try browse(callback)
        #expect(page.status == 200)
        #expect(page.header("content-type") == "text/html; charset=utf-8")
        #expect(page.text.contains("You may close this window."))

        #expect(login.waitForExit() == 0)
        // The token endpoint got the verifier whose S256 hash the browser carried; the URL never had it.
        let exchange = try #require(self.server.recordedCalls.last)
        #expect(exchange.form["grant_type"] == "authorization_code")
        let verifier = try #require(exchange.form["code_verifier"])
        #expect(MockTokenServer.s256(verifier) == challenge)
        #expect(!url.contains(verifier))
        #expect(exchange.form["redirect_uri"] == redirectURI)

        let stored = try String(contentsOfFile: self.tokenFile, encoding: .utf8)
        #expect(stored == (self.server.issuedRefreshTokenList.last ?? "?") + "\n")
        #expect(fileMode(self.tokenFile) == 0o600)
        #expect(
            login.standardOutput.contains("Logged in. The refresh token is stored in \(self.tokenFile) (mode 0600)")
        )
        #expect(login.standardOutput.contains("The access token expires in 1h ("))
        #expect(login.standardOutput.contains("; scope: read write."))
        #expect(login.standardError.isEmpty)
        self.expectNoTokens(in: [login.standardOutput, login.standardError])
        // The listener closed with the login.
        #expect(throws: BlockingHTTPClient.ClientError.self) { try browse(callback) }
    }

    @Test func opensTheURLWithXdgOpenWhenThereIsOne() throws {
        defer { self.server.stop() }
        // A stand-in for xdg-open that records the URL it was asked to open.
        let bin = temporaryDirectory()
        let opened = bin + "/opened-url"
        let opener = bin + "/xdg-open"
        // Close-on-exec: a child another test spawns meanwhile must not hold the script open for
        // writing, or running it fails with 'text file busy'.
        try AtomicFile.writeFlushed(
            Array("#!/bin/sh\nprintf '%s' \"$1\" > \(opened).tmp && mv \(opened).tmp \(opened)\n".utf8),
            to: opener,
            mode: 0o755
        )
        let login = try ProxyProcess(
            ["login", "--config", self.config()],
            environment: ["PATH": "\(bin):/usr/bin:/bin"]
        )
        #expect(waitUntil { FileManager.default.fileExists(atPath: opened) })
        // The opener runs beside the command: its file may come before the line saying it was started.
        #expect(waitUntil { login.standardOutput.contains("Opened it in your browser.") })
        let url = try String(contentsOfFile: opened, encoding: .utf8)
        #expect(login.standardOutput.contains(url), "the URL is printed too, in case no browser opens")
        let callback = try #require(try browse(url).header("location"))
        #expect(try browse(callback).status == 200)
        #expect(login.waitForExit() == 0)
        #expect(FileManager.default.fileExists(atPath: self.tokenFile))
    }

    @Test func theURLReachesAPipeBeforeTheLoginWaits() throws {
        defer { self.server.stop() }
        // stdout is a pipe here: the URL must arrive while the command waits, not when it exits.
        let login = try ProxyProcess(["login", "--config", self.config("login_timeout = 5m"), "--no-browser"])
        #expect(waitUntil { login.standardOutput.contains(self.server.authorizationURL) })
        #expect(login.process.isRunning)
        // And SIGTERM (or Ctrl-C) ends the waiting login at once.
        login.signal(SIGTERM)
        #expect(login.waitForTermination() == .killed(signal: SIGTERM))
    }

    @Test func aDeniedAuthorizationFailsWithOneLine() throws {
        defer { self.server.stop() }
        self.server.update { $0.login.deniesAuthorization = true }
        let login = try ProxyProcess(["login", "--config", self.config(), "--no-browser"])
        #expect(waitUntil { login.standardOutput.contains(self.server.authorizationURL) })
        let url = try #require(word(startingWith: self.server.authorizationURL + "?", in: login.standardOutput))
        let page = try browse(try #require(try browse(url).header("location")))
        #expect(page.text.contains("Login failed"))
        #expect(login.waitForExit() == 1)
        #expect(
            login.standardError
                == "Error: the authorization server denied the login: access_denied (The user said no)\n"
        )
        #expect(!FileManager.default.fileExists(atPath: self.tokenFile))
    }

    @Test func givesUpAfterLoginTimeout() throws {
        defer { self.server.stop() }
        let result = try ProxyProcess.run(["login", "--config", self.config("login_timeout = 1s"), "--no-browser"])
        #expect(result.status == 1)
        #expect(result.stderr == "Error: login timed out after 1s waiting for the browser (login_timeout)\n")
    }
}

@Suite struct DeviceLoginTests {
    let server: MockTokenServer
    let directory = temporaryDirectory()
    var tokenFile: String { self.directory + "/refresh_token" }

    init() throws {
        self.server = try startedTokenServer(clientID: "tv-app", expiresIn: 600)
    }

    func startLogin(_ extra: String = "") throws -> (ProxyProcess, String) {
        let config = temporaryFile(
            """
            upstream = http://127.0.0.1:9
            token_url = \(self.server.url)
            device_authorization_url = \(self.server.deviceAuthorizationURL)
            client_id = tv-app
            refresh_token_file = \(self.tokenFile)
            \(extra)
            """
        )
        let login = try ProxyProcess(["login", "--config", config])
        #expect(waitUntil { !self.server.pendingUserCodes.isEmpty && login.standardOutput.contains("Waiting") })
        let userCode = try #require(self.server.pendingUserCodes.first)
        #expect(login.standardOutput.contains("enter the code\n\n    \(userCode)\n"))
        #expect(login.standardOutput.contains("open \(self.server.server.baseURL)/device on any device"))
        return (login, userCode)
    }

    @Test func pendingThenSlowDownThenApproved() throws {
        defer { self.server.stop() }
        self.server.update {
            $0.login.deviceInterval = 0
            $0.login.slowDownPolls = [2]
        }
        let (login, userCode) = try self.startLogin()
        // Poll 1: authorization_pending; poll 2: slow_down, after which polls come 5 s apart.
        #expect(waitUntil { self.server.devicePolls(userCode: userCode) >= 2 })
        self.server.decideDeviceLogin(userCode: userCode, approve: true)
        #expect(login.waitForExit() == 0)
        #expect(self.server.devicePolls(userCode: userCode) == 3)
        let polls = self.server.callInstants
        #expect(polls.count == 3)
        #expect(polls[2] - polls[1] >= .milliseconds(4900), "slow_down adds 5 seconds to the interval")
        #expect(
            self.server.recordedCalls.allSatisfy {
                $0.form["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code"
            }
        )
        let stored = try String(contentsOfFile: self.tokenFile, encoding: .utf8)
        #expect(stored == (self.server.issuedRefreshTokenList.last ?? "?") + "\n")
        #expect(login.standardOutput.contains("The access token expires in 10m ("))
        #expect(!login.standardOutput.contains("dc-"), "the device code is a credential, never printed")
    }

    @Test func aDeniedDeviceLoginStopsWithOneLine() throws {
        defer { self.server.stop() }
        let (login, userCode) = try self.startLogin()
        #expect(waitUntil { self.server.devicePolls(userCode: userCode) >= 1 })
        self.server.decideDeviceLogin(userCode: userCode, approve: false)
        #expect(login.waitForExit() == 1)
        #expect(
            login.standardError
                == "Error: the authorization server denied the login: access_denied (The user denied the request)\n"
        )
        #expect(!FileManager.default.fileExists(atPath: self.tokenFile))
    }

    @Test func aDeviceCodeWhoseLifetimeRanOutStopsWithOneLine() throws {
        defer { self.server.stop() }
        self.server.update { $0.login.deviceCodeLifetime = 2 }
        let (login, _) = try self.startLogin()
        #expect(login.waitForExit() == 1)
        #expect(
            login.standardError
                == "Error: the device code expired before the login was approved (its expires_in, 2s, ran out; the server would answer expired_token); run 'bearer-proxy login --device' again\n"
        )
    }

    @Test func aDeviceCodeTheServerExpiresStopsNamingExpiredToken() throws {
        defer { self.server.stop() }
        let (login, userCode) = try self.startLogin()
        #expect(waitUntil { self.server.devicePolls(userCode: userCode) >= 1 })
        self.server.expireDeviceCode(userCode: userCode)
        #expect(login.waitForExit() == 1)
        #expect(
            login.standardError
                == "Error: the authorization server answered expired_token: the device code expired before the login was approved; run 'bearer-proxy login --device' again\n"
        )
        #expect(!FileManager.default.fileExists(atPath: self.tokenFile))
    }
}

@Suite struct JSONLoginTests {
    let server: MockTokenServer
    let directory = temporaryDirectory()
    var tokenFile: String { self.directory + "/refresh_token" }
    static let password = #"pa"ss\word-e2e-secret"#

    init() throws {
        var settings = MockTokenServer.Settings()
        settings.users = ["alice@example.com": Self.password]
        settings.expiresIn = 900
        settings.json.isEnveloped = true
        self.server = MockTokenServer(group: e2eMockGroup, settings: settings)
        try self.server.start()
    }

    func config(_ extra: String) -> String {
        temporaryFile(
            """
            upstream = http://127.0.0.1:9
            token_format = json
            token_url = \(self.server.jsonRefreshURL)
            login_url = \(self.server.jsonLoginURL)
            username = alice@example.com
            refresh_token_file = \(self.tokenFile)
            \(extra)
            """
        )
    }

    @Test func logsInWithThePasswordFromTheEnvironment() throws {
        defer { self.server.stop() }
        let result = try ProxyProcess.run(
            ["login", "--config", self.config("password = ${E2E_PASSWORD}")],
            environment: ["E2E_PASSWORD": Self.password]
        )
        #expect(result.status == 0)
        #expect(self.server.loginCallCount == 1)
        let call = try #require(self.server.recordedCalls.first)
        #expect(call.contentType == "application/json")
        #expect(call.form == ["username": "alice@example.com", "password": Self.password])
        let stored = try String(contentsOfFile: self.tokenFile, encoding: .utf8)
        #expect(stored.hasPrefix("rt-login-"))
        #expect(result.stdout.contains("The access token expires in 15m ("))
        for text in [result.stdout, result.stderr] {
            #expect(!text.contains(Self.password) && !text.contains(stored.trimmingCharacters(in: .newlines)))
        }
    }

    @Test func asksForThePasswordWithoutEchoOnATerminal() throws {
        defer { self.server.stop() }
        let (master, slave) = try openPseudoTerminal()
        let terminal = FileHandle(fileDescriptor: slave, closeOnDealloc: true)
        let login = try ProxyProcess(["login", "--config", self.config("")], standardInput: terminal)
        #expect(waitUntil { login.standardError.contains("Password for alice@example.com: ") })
        let typed = Array((Self.password + "\n").utf8)
        #expect(write(master, typed, typed.count) == typed.count)
        #expect(login.waitForExit() == 0)
        // Whatever the terminal echoed to its screen (the master side) must not show the password.
        var screen: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let flags = fcntl(master, F_GETFL)
        _ = fcntl(master, F_SETFL, flags | O_NONBLOCK)
        while true {
            let count = read(master, &chunk, chunk.count)
            if count <= 0 { break }
            screen += chunk[0..<count]
        }
        close(master)
        let echoed = String(decoding: screen, as: UTF8.self)
        #expect(!echoed.contains("pa\"ss"), "the password was echoed: \(echoed)")
        #expect(self.server.recordedCalls.first?.form["password"] == Self.password)
        #expect(FileManager.default.fileExists(atPath: self.tokenFile))
        #expect(!login.standardOutput.contains("pa\"ss") && !login.standardError.contains("pa\"ss"))
    }

    @Test func withoutATerminalAMissingPasswordIsAOneLineError() throws {
        defer { self.server.stop() }
        let result = try ProxyProcess.run(["login", "--config", self.config("")])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: login_body needs password, which is not in the config, and there is no terminal to ask on (set password = ${VARIABLE})\n"
        )
        #expect(self.server.loginCallCount == 0)
    }

    @Test func aWrongPasswordNamesTheBackendsMessage() throws {
        defer { self.server.stop() }
        let result = try ProxyProcess.run(
            ["login", "--config", self.config("password = ${E2E_PASSWORD}")],
            environment: ["E2E_PASSWORD": "not-the-password"]
        )
        #expect(result.status == 1)
        #expect(
            result.stderr == "Error: the login endpoint refused the login: http_401 (invalid username or password)\n"
        )
        #expect(!result.stderr.contains("not-the-password"))
    }
}

@Suite struct LogoutTests {
    @Test(arguments: ["form", "json"])
    func revokesTheRefreshTokenAndDeletesTheFile(format: String) throws {
        let server = MockTokenServer(group: e2eMockGroup)
        try server.start()
        defer { server.stop() }
        server.update { $0.refreshTokens = ["rt-to-revoke-secret"] }
        let file = temporaryDirectory() + "/refresh_token"
        try "rt-to-revoke-secret\n".write(toFile: file, atomically: true, encoding: .utf8)
        let settings =
            format == "form"
            ? "token_url = \(server.url)\nrevocation_url = \(server.revocationURL)\nclient_id = c"
            : "token_format = json\ntoken_url = \(server.jsonRefreshURL)\nlogout_url = \(server.jsonLogoutURL)"
        let config = temporaryFile("upstream = http://127.0.0.1:9\nrefresh_token_file = \(file)\n\(settings)\n")
        let result = try ProxyProcess.run(["logout", "--config", config])
        #expect(result.status == 0)
        #expect(server.revokedTokens == ["rt-to-revoke-secret"])
        #expect(!FileManager.default.fileExists(atPath: file))
        let endpoint = format == "form" ? server.revocationURL : server.jsonLogoutURL
        #expect(
            result.stdout
                == "Revoked the refresh token at \(endpoint).\nDeleted \(file).\n\(keptLockLine(file))\n"
        )
        #expect(FileManager.default.fileExists(atPath: file + ".lock"), "the lock file stays, and the output says why")
        #expect(!result.stdout.contains("rt-to-revoke-secret") && !result.stderr.contains("rt-to-revoke-secret"))
    }

    @Test func deletesTheFileEvenWhenTheServerIsUnreachableAndSaysSo() throws {
        let fd = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        let port = Socket.localAddress(fd)!.port!
        Socket.close(fd)
        let file = temporaryDirectory() + "/refresh_token"
        try "rt-unrevoked\n".write(toFile: file, atomically: true, encoding: .utf8)
        let config = temporaryFile(
            """
            upstream = http://127.0.0.1:9
            token_url = http://127.0.0.1:\(port)/token
            revocation_url = http://127.0.0.1:\(port)/revoke
            client_id = c
            refresh_token_file = \(file)
            """
        )
        let result = try ProxyProcess.run(["logout", "--config", config])
        #expect(result.status == 0)
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(
            result.stdout
                == "Could not reach the server to revoke the refresh token (revocation endpoint 127.0.0.1:\(port): cannot connect: Connection refused); it may stay valid until it expires.\nDeleted \(file).\n\(keptLockLine(file))\n"
        )
    }

    @Test func withNothingStoredThereIsNothingToDo() throws {
        let file = temporaryDirectory() + "/refresh_token"
        let config = temporaryFile(
            "upstream = http://127.0.0.1:9\ntoken_url = http://127.0.0.1:9/t\nclient_id = c\nrefresh_token_file = \(file)\n"
        )
        let result = try ProxyProcess.run(["logout", "--config", config])
        #expect(result.status == 0)
        #expect(result.stdout == "Not logged in: \(file) does not exist. Nothing to revoke.\n")
        #expect(!FileManager.default.fileExists(atPath: file + ".lock"), "nothing to delete, nothing locked or made")
        // A lock file left by an earlier login is explained, not removed.
        #expect(FileManager.default.createFile(atPath: file + ".lock", contents: nil))
        let again = try ProxyProcess.run(["logout", "--config", config])
        #expect(again.stdout == "Not logged in: \(file) does not exist. Nothing to revoke.\n\(keptLockLine(file))\n")
        #expect(FileManager.default.fileExists(atPath: file + ".lock"))
    }
}

/// What `logout` says of the lock file it leaves: removing a lock file another process may hold
/// splits the lock (docs/token-sources.md, "Getting your first token").
func keptLockLine(_ file: String) -> String {
    "Kept \(file).lock: it is empty, and it is the lock that processes sharing \(file) take; removing it while one of them may hold it could let two of them spend one refresh token."
}

@Suite struct SubcommandLineTests {
    @Test func helpForEachSubcommandGoesToStdout() throws {
        for name in ["login", "logout"] {
            let help = try ProxyProcess.run([name, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.hasPrefix("OVERVIEW: "))
            #expect(help.stdout.contains("USAGE: bearer-proxy \(name) [") && help.stdout.contains("[--config <file>]"))
            #expect(help.stderr.isEmpty)
        }
    }

    @Test func mistakesAreNamedWithTheSubcommandsUsage() throws {
        let unknown = try ProxyProcess.run(["login", "--devise"])
        #expect(unknown.status == 1)
        #expect(
            unknown.stderr
                == "Error: Unknown option '--devise' (did you mean '--device'?)\nUsage: bearer-proxy login [<url>] [--config <file>] [--session <name>] [--device] [--no-browser] [--scope <scope>] [--print]\n  See 'bearer-proxy login --help' for more information.\n"
        )
        let device = try ProxyProcess.run(["logout", "--device"])
        #expect(device.status == 1)
        #expect(
            device.stderr.hasPrefix(
                "Error: Unknown option '--device'\nUsage: bearer-proxy logout [--config <file>] [--session <name>]\n"
            )
        )
    }

    @Test func aConfigWithoutARefreshTokenFileIsAOneLineError() throws {
        let config = temporaryFile("upstream = http://127.0.0.1:9\ntoken_url = http://127.0.0.1:9/t\nclient_id = c\n")
        let result = try ProxyProcess.run(["login", "--config", config])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: \(config): refresh_token_file: login needs it (where the refresh token is stored)\n"
        )
    }

    @Test func aConfigWithNoWayToLogInIsAOneLineError() throws {
        let config = temporaryFile(
            "upstream = http://127.0.0.1:9\ntoken_url = http://127.0.0.1:9/t\nclient_id = c\nrefresh_token_file = \(temporaryDirectory())/refresh_token\n"
        )
        let result = try ProxyProcess.run(["login", "--config", config])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: nothing to log in with: set authorization_url (browser) or device_authorization_url (--device)\n"
        )
    }
}

@Suite struct LoginWhileTheProxyRunsTests {
    /// The proxy starts before there is a refresh token; `bearer-proxy login` writes one; the running
    /// proxy takes it up by itself, with no signal and no request needed.
    @Test func aRunningProxyUsesTheTokenALoginStored() throws {
        let authority = MockTokenAuthority()
        var settings = MockTokenServer.Settings()
        settings.clientID = "cli-app"
        let server = MockTokenServer(group: e2eMockGroup, authority: authority, settings: settings)
        try server.start()
        defer { server.stop() }
        let upstream = MockUpstream(group: e2eMockGroup, authority: authority)
        try upstream.start()
        defer { upstream.stop() }
        let tokenFile = temporaryDirectory() + "/refresh_token"
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(upstream.baseURL)
            token_url = \(server.url)
            authorization_url = \(server.authorizationURL)
            client_id = cli-app
            refresh_token_file = \(tokenFile)
            """
        )
        let proxy = try ProxyProcess(["--config", config])
        #expect(proxy.waitUntilListening() != nil)
        // The admin port, from the start line (written before the ready line).
        let admin = try #require(word(startingWith: "admin=", in: proxy.standardError)?.dropFirst(6))
        let adminAddress = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: String(admin)))!
        func status() -> [String: Any]? {
            let response = try? httpRequest(adminAddress, "GET /status HTTP/1.1\r\nHost: \(adminAddress)\r\n\r\n")
            return response.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
        }
        // The start-up refresh found no file to refresh with.
        #expect(waitUntil { (status()?["failure"] as? String)?.contains("no refresh token yet") == true })

        let login = try ProxyProcess(["login", "--config", config, "--no-browser"])
        #expect(waitUntil { login.standardOutput.contains(server.authorizationURL) })
        let url = try #require(word(startingWith: server.authorizationURL + "?", in: login.standardOutput))
        #expect(try browse(try #require(try browse(url).header("location"))).status == 200)
        #expect(login.waitForExit() == 0)

        // The proxy noticed the file by itself and refreshed with it.
        #expect(waitUntil { status()?["token_generation"] as? Int == 1 }, "\(String(describing: status()))")
        let address = try #require(
            proxy.standardError.split(separator: "\n").compactMap { line in
                line.range(of: "listening on ").map { String(line[$0.upperBound...].prefix { !$0.isWhitespace }) }
            }.first
        )
        let port = try #require(Int(address.split(separator: ":").last ?? ""))
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: port)!,
            "GET /after-login HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        )
        #expect(response.status == 200)
        #expect(proxy.stop() == 0)
        // The log, whole now: what it said before the login, and the refresh the file brought.
        #expect(proxy.standardError.contains(" warn no refresh token yet; run 'bearer-proxy login' "))
        #expect(proxy.standardError.contains(" info token refreshed generation=1 trigger=file "))
        for token in server.issuedRefreshTokenList {
            #expect(!proxy.standardError.contains(token) && !login.standardOutput.contains(token))
        }
    }
}

/// A pseudo-terminal pair: what the test types into the master, the child reads from the slave as
/// from a terminal; what the terminal echoes shows up on the master.
func openPseudoTerminal() throws -> (master: Int32, slave: Int32) {
    let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
    try #require(master >= 0, "cannot open /dev/ptmx")
    // Linux ioctls that Glibc does not export: TIOCSPTLCK (unlock the slave), TIOCGPTN (its number).
    var unlock: Int32 = 0
    var number: UInt32 = 0
    try #require(ioctl(master, UInt(0x4004_5431), &unlock) == 0 && ioctl(master, UInt(0x8004_5430), &number) == 0)
    let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
    try #require(slave >= 0, "cannot open /dev/pts/\(number)")
    return (master, slave)
}
