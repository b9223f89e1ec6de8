import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `bearer-proxy` with `credential_store = secret-service` against a real gnome-keyring-daemon on a
/// private bus, in front of a mock API whose token server rotates refresh tokens and revokes the
/// family on reuse; libsecret's `secret-tool` reads and writes the item beside it.
final class KeyringProxies: ServingProxies {
    let bus: SessionBus
    let authority = MockTokenAuthority()
    let tokenServer: MockTokenServer
    let upstream: MockUpstream
    let stateFolder = temporaryDirectory()

    static let seed = "rt-keyring-seed-e2e"
    static let clientSecret = "keyring-e2e-client-secret"
    static let lookup = ["lookup", "application", "bearer-proxy", "session", "default", "kind", "refresh_token"]

    override init() throws {
        self.bus = try SessionBus()
        try self.bus.startKeyring()
        let settings = MockTokenServer.Settings.refreshTokenGrant(
            seed: Self.seed,
            clientID: "keyring",
            clientSecret: Self.clientSecret
        )
        self.tokenServer = MockTokenServer(group: e2eMockGroup, authority: self.authority, settings: settings)
        try self.tokenServer.start()
        self.upstream = MockUpstream(group: e2eMockGroup, authority: self.authority, recordsRequests: false)
        try self.upstream.start()
        try super.init()
    }

    deinit {
        for process in self.processes where process.process.isRunning { process.signal(SIGKILL) }
        self.upstream.stop()
        self.tokenServer.stop()
    }

    /// The bus, the keyring's folders, the client secret: what a desktop session's proxy would have.
    var environment: [String: String] {
        self.bus.environment.merging([
            "KEYRING_SECRET": Self.clientSecret, "XDG_STATE_HOME": self.stateFolder,
        ]) { $1 }
    }

    func config(store: String = "secret-service", extra: String = "") -> String {
        temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(self.upstream.baseURL)
            token_url = \(self.tokenServer.url)
            grant_type = refresh_token
            client_id = keyring
            client_secret = ${KEYRING_SECRET}
            credential_store = \(store)
            \(extra)
            """
        )
    }

    /// The item's secret as secret-tool reads it; nil when there is none.
    func storedToken() throws -> String? {
        let outcome = try self.bus.secretTool(Self.lookup)
        return outcome.status == 0 ? outcome.standardOutput : nil
    }

    func start(count: Int = 1, extra: String = "") throws {
        for _ in 0..<count { try self.startProxy(config: self.config(extra: extra), environment: self.environment) }
    }

    var secrets: [String] { [Self.seed, Self.clientSecret] + self.tokenServer.issuedRefreshTokenList }

    /// Stops every proxy and checks that no secret reached what they printed.
    func stopAll(sourceLocation: SourceLocation = #_sourceLocation) {
        for process in self.processes {
            _ = process.stop()
            for secret in self.secrets {
                #expect(!process.standardError.contains(secret), "\(secret) was logged", sourceLocation: sourceLocation)
            }
        }
    }
}

@Suite(.requires(.dbusDaemon), .requires(.gnomeKeyring), .requires(.secretTool))
struct KeyringBinaryTests {
    /// A refresh token put in the keyring with secret-tool is what the proxy spends; the rotated one
    /// replaces the item before it is used; the start-up line and /status name the store, never the
    /// secret.
    @Test func aTokenWrittenWithSecretToolIsSpentAndItsRotationReplacesTheItem() throws {
        let proxies = try KeyringProxies()
        let store = try proxies.bus.secretTool(
            ["store", "--label", "by hand"] + KeyringProxies.lookup.dropFirst(),
            input: KeyringProxies.seed
        )
        try #require(store.status == 0, "\(store.standardError)")
        try proxies.start()
        #expect(proxies.processes[0].standardError.contains("credential_store=\"secret-service on unix:path="))
        #expect(try proxies.get("/first", through: 0).status == 200)
        #expect(proxies.tokenServer.recordedCalls.first?.form["refresh_token"] == KeyringProxies.seed)
        let rotated = try #require(proxies.tokenServer.issuedRefreshTokenList.last)
        #expect(try proxies.storedToken() == rotated)
        #expect(try proxies.status(0)["credential_store"] as? String == "secret-service")
        #expect(Self.firstEvent(from: proxies.admins[0]).contains(#""store":"secret-service""#))
        proxies.stopAll()
    }

    /// The first snapshot of the admin's `/events` stream, as its text.
    static func firstEvent(from admin: SocketAddress) -> String {
        guard let client = try? BlockingHTTPClient(connectingTo: admin, timeout: .seconds(5)) else { return "" }
        client.send("GET /events HTTP/1.1\r\nHost: \(admin)\r\n\r\n")
        var text = ""
        for _ in 0..<20 {
            guard let bytes = client.readSome() else { break }
            text += String(decoding: bytes, as: UTF8.self)
            if let start = text.range(of: "data: "), let end = text[start.upperBound...].range(of: "\n\n") {
                return String(text[start.upperBound..<end.lowerBound])
            }
        }
        return text
    }

    /// Login creates the item (secret-tool reads back the token the server issued); logout revokes
    /// it and deletes the item.
    @Test func loginStoresTheItemAndLogoutDeletesIt() throws {
        let proxies = try KeyringProxies()
        let config = proxies.config(
            extra:
                "authorization_url = \(proxies.tokenServer.authorizationURL)\nrevocation_url = \(proxies.tokenServer.revocationURL)"
        )
        let login = try ProxyProcess(["login", "--config", config, "--no-browser"], environment: proxies.environment)
        #expect(waitUntil { login.standardOutput.contains(proxies.tokenServer.authorizationURL) })
        let url = try #require(word(startingWith: proxies.tokenServer.authorizationURL + "?", in: login.standardOutput))
        let callback = try #require(try browse(url).header("location"))
        #expect(try browse(callback).status == 200)
        #expect(login.waitForExit() == 0, "\(login.standardError)")
        let issued = try #require(proxies.tokenServer.issuedRefreshTokenList.last)
        #expect(try proxies.storedToken() == issued)
        #expect(login.standardOutput.contains("The refresh token is stored in the Secret Service"))

        let logout = try ProxyProcess.run(["logout", "--config", config], environment: proxies.environment)
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(logout.stdout.contains("Revoked the refresh token"))
        #expect(logout.stdout.contains("Deleted the refresh token from the Secret Service"))
        #expect(try proxies.storedToken() == nil)
        #expect(proxies.tokenServer.revokedTokens.contains(issued))
        for text in [login.standardOutput, login.standardError, logout.stdout, logout.stderr] {
            #expect(!text.contains(issued))
        }
    }

    /// A locked keyring stops the start with one line naming the fix, at once: no prompt waited for.
    @Test func aLockedKeyringStopsTheStartNamingTheFix() throws {
        let proxies = try KeyringProxies()
        _ = try proxies.bus.secretTool(
            ["store", "--label", "by hand"] + KeyringProxies.lookup.dropFirst(),
            input: KeyringProxies.seed
        )
        try proxies.bus.lockKeyring()
        let started = Instant.now()
        let run = try ProxyProcess.run(["--config", proxies.config()], environment: proxies.environment)
        #expect(run.status == 1)
        #expect(run.stderr.contains("is locked and unlocking it needs a prompt bearer-proxy cannot show"))
        #expect(run.stderr.contains("unlock the keyring") && run.stderr.contains("or set credential_store = file"))
        #expect(Instant.now() - started < .seconds(10))
    }

    /// The keyring locked while the proxy runs: a refresh fails with the line naming the fix, and
    /// spends nothing (the token in memory may be one another process rotated away).
    @Test func aKeyringLockedAtARefreshFailsTheRefreshNamingTheFix() throws {
        let proxies = try KeyringProxies()
        _ = try proxies.bus.secretTool(
            ["store", "--label", "by hand"] + KeyringProxies.lookup.dropFirst(),
            input: KeyringProxies.seed
        )
        // Retries of a refresh that cannot read its token end within the test's patience.
        try proxies.start(extra: "refresh_timeout = 2s")
        #expect(try proxies.get("/first", through: 0).status == 200)
        let calls = proxies.tokenServer.recordedCalls.count
        try proxies.bus.lockKeyring()
        let admin = proxies.admins[0]
        let started = Instant.now()
        let refresh = try httpRequest(admin, "POST /refresh HTTP/1.1\r\nHost: \(admin)\r\nContent-Length: 0\r\n\r\n")
        #expect(refresh.status != 200)
        #expect(refresh.text.contains("unlock the keyring"), "\(refresh.text)")
        #expect(Instant.now() - started < .seconds(30))
        #expect(proxies.tokenServer.recordedCalls.count == calls, "nothing spent")
        proxies.stopAll()
    }

    /// Two proxies on one keyring item, both needing a token at once: the lock beside the state and
    /// the item re-read after taking it make the second spend the token the first rotated, never the
    /// spent one (the server revokes the family on reuse: every request still succeeds).
    @Test func twoProxiesOnOneItemNeverSpendATokenTwice() throws {
        let proxies = try KeyringProxies()
        _ = try proxies.bus.secretTool(
            ["store", "--label", "by hand"] + KeyringProxies.lookup.dropFirst(),
            input: KeyringProxies.seed
        )
        try proxies.start(count: 2)
        let clients = try (0..<2).map { try BlockingHTTPClient(connectingTo: proxies.addresses[$0]) }
        func both(_ name: String) throws -> [Int] {
            for (index, client) in clients.enumerated() {
                client.send("GET /\(name)/\(index) HTTP/1.1\r\nHost: \(proxies.addresses[index])\r\n\r\n")
            }
            return try clients.map { try $0.readResponse().status }
        }
        #expect(try both("warm") == [200, 200])
        // Each proxy now holds a refresh token in memory that the other may rotate away.
        for round in 1...3 {
            proxies.authority.revokeAll()
            #expect(try both("round-\(round)") == [200, 200], "round \(round)")
        }
        let presented = proxies.tokenServer.recordedCalls.compactMap { $0.form["refresh_token"] }
        #expect(presented.count >= 4 && Set(presented).count == presented.count, "each refresh token spent once")
        #expect(presented.first == KeyringProxies.seed)
        #expect(try proxies.storedToken() == proxies.tokenServer.issuedRefreshTokenList.last)
        proxies.stopAll()
    }
}

/// `credential_store = auto` choosing: the file when there is no bus, or the bus does not answer
/// within a second; `--check` and the start-up line say which and why.
@Suite struct CredentialStoreChoiceBinaryTests {
    func config(_ tokenServer: String = "http://127.0.0.1:9/token") -> String {
        temporaryFile(
            """
            listen = 127.0.0.1:0
            upstream = http://127.0.0.1:9
            token_url = \(tokenServer)
            grant_type = refresh_token
            client_id = auto
            """
        )
    }

    /// No DBUS_SESSION_BUS_ADDRESS: the state folder's file, and the reason.
    @Test func autoWithoutABusPicksTheFileAndSaysSo() throws {
        let state = temporaryDirectory()
        let check = try ProxyProcess.run(
            ["--check", "--config", self.config()],
            environment: ["DBUS_SESSION_BUS_ADDRESS": "", "XDG_STATE_HOME": state]
        )
        #expect(check.status == 0, "\(check.stderr)")
        #expect(
            check.stdout.contains(
                "# credential_store: file \(state)/bearer-proxy/default.refresh-token: credential_store = auto: no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)"
            ),
            "\(check.stdout)"
        )
    }

    /// The proxy reads the token from that file: a request is answered with a token refreshed from it.
    @Test func autoWithoutABusSpendsTheStateFolderFile() throws {
        let state = temporaryDirectory()
        let authority = MockTokenAuthority()
        let server = MockTokenServer(
            group: e2eMockGroup,
            authority: authority,
            settings: .refreshTokenGrant(seed: "rt-state-file-seed", clientID: "auto", clientSecret: "s")
        )
        try server.start()
        defer { server.stop() }
        try FileManager.default.createDirectory(atPath: state + "/bearer-proxy", withIntermediateDirectories: true)
        try "rt-state-file-seed\n".write(
            toFile: state + "/bearer-proxy/default.refresh-token",
            atomically: true,
            encoding: .utf8
        )
        let config = self.config(server.url) + ""
        try (fileText(config) + "\nclient_secret = s\n").write(toFile: config, atomically: true, encoding: .utf8)
        let proxy = try ProxyProcess(
            ["--config", config],
            environment: ["DBUS_SESSION_BUS_ADDRESS": "", "XDG_STATE_HOME": state]
        )
        let listening = try #require(proxy.waitUntilListening(), "\(proxy.standardError)")
        #expect(proxy.standardError.contains("credential_store=\"file \(state)/bearer-proxy/default.refresh-token"))
        let address = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: listening))!
        _ = try? httpRequest(address, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(server.recordedCalls.first?.form["refresh_token"] == "rt-state-file-seed")
        _ = proxy.stop()
    }

    /// A bus that takes the connection and never answers: the file, within the bound.
    @Test func aBusThatDoesNotAnswerPicksTheFileWithinTheBound() throws {
        let silent = try SilentSocket()
        let started = Instant.now()
        let check = try ProxyProcess.run(
            ["--check", "--config", self.config()],
            environment: ["DBUS_SESSION_BUS_ADDRESS": silent.addressText, "XDG_STATE_HOME": temporaryDirectory()]
        )
        #expect(Instant.now() - started < .seconds(5))
        #expect(check.status == 0, "\(check.stderr)")
        #expect(
            check.stdout.contains(
                "credential_store = auto: no Secret Service answered: the D-Bus session bus at \(silent.addressText) did not answer authentication within 1s"
            ),
            "\(check.stdout)"
        )
    }
}
