import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// Two named sessions behind one proxy process whose config file the test rewrites and re-reads with
/// SIGHUP (issue 32, points 1 and 2): `a` mounted at /a, `b` at /b, each API with a token server
/// whose authority the other refuses.
final class TwoReloadableSessions {
    typealias API = MockAPI

    let apis: [String: API]
    let configFile: String
    let proxy: ProxyProcess
    let main: SocketAddress
    let admin: SocketAddress

    init(secrets: [String: String] = [:]) throws {
        var apis: [String: API] = [:]
        for name in ["a", "b"] { apis[name] = try MockAPI(name, secret: "\(name)-secret") }
        self.apis = apis
        self.configFile = temporaryFile(Self.configText(apis, secrets: secrets))
        let proxy = try ProxyProcess(["--config", self.configFile])
        self.proxy = proxy
        guard proxy.waitUntilListening() != nil,
            let main = ThreeAPIs.address(in: proxy.standardError, session: nil),
            let admin = word(startingWith: "admin=", in: proxy.standardError).flatMap({
                try? tcpPort(of: String($0.dropFirst(6)))
            }).flatMap({ SocketAddress(ipAddress: "127.0.0.1", port: $0) })
        else {
            throw TestFailure(description: "the proxy did not start: \(proxy.standardError)")
        }
        self.main = main
        self.admin = admin
    }

    deinit {
        self.proxy.signal(SIGTERM)
        _ = self.proxy.waitForExit()
        for api in self.apis.values { api.stop() }
    }

    subscript(name: String) -> API { self.apis[name]! }

    /// The config file: both sessions with their right secrets unless `secrets` says otherwise,
    /// `processLines` above the sections, `sessionLines` at the end of a session's.
    func write(
        secrets: [String: String] = [:],
        processLines: String = "",
        sessionLines: [String: String] = [:]
    ) {
        let text = Self.configText(self.apis, secrets: secrets, processLines: processLines, sessionLines: sessionLines)
        // Written whole and renamed over the old file, as editors do: a reload never reads half a file.
        let next = self.configFile + ".next"
        #expect(FileManager.default.createFile(atPath: next, contents: Data(text.utf8)))
        #expect(rename(next, self.configFile) == 0)
    }

    static func configText(
        _ apis: [String: API],
        secrets: [String: String] = [:],
        processLines: String = "",
        sessionLines: [String: String] = [:]
    ) -> String {
        func section(_ name: String) -> String {
            """
            [session \(name)]
            mount = /\(name)
            upstream = \(apis[name]!.upstream.baseURL)
            token_url = \(apis[name]!.tokens.url)
            client_id = \(name)-client
            client_secret = \(secrets[name] ?? "\(name)-secret")
            \(sessionLines[name] ?? "")
            """
        }
        return """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            \(processLines)

            \(section("a"))

            \(section("b"))
            """
    }

    var tokenCalls: [String: Int] { self.apis.mapValues(\.tokens.callCount) }

    func get(_ target: String) throws -> BlockingHTTPClient.Response {
        try httpRequest(self.main, "GET \(target) HTTP/1.1\r\nHost: \(self.main)\r\n\r\n")
    }

    /// `/status`'s `sessions` object.
    func sessionStatus() throws -> [String: [String: Any]] {
        let response = try httpRequest(self.admin, "GET /status HTTP/1.1\r\nHost: \(self.admin)\r\n\r\n")
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return object?["sessions"] as? [String: [String: Any]] ?? [:]
    }

    /// Stops the proxy (SIGTERM) and returns the lines that say how SIGHUP's re-reads went, from its
    /// complete stderr. Every SIGHUP sent before was handled: the signal thread takes one signal at a
    /// time, lowest number first, and does SIGHUP's work before it takes the next.
    func stopAndReadReloadLines() -> [Substring] {
        #expect(self.proxy.stop() == 0, "\(self.proxy.standardError)")
        return self.proxy.standardError.split(separator: "\n").filter { $0.contains(" SIGHUP: ") }
    }
}

@Suite struct ReloadTests {
    /// Point 1: with `[session NAME]` sections SIGHUP refreshed nothing.
    @Test func sighupRefreshesEveryNamedSession() throws {
        let proxy = try TwoReloadableSessions()
        // The start-up refreshes have ended (a SIGHUP during one joins it rather than start another).
        for name in ["a", "b"] {
            #expect(waitUntil { (try? proxy.sessionStatus())?[name]?["token_generation"] as? Int == 1 })
        }
        proxy.proxy.signal(SIGHUP)
        #expect(waitUntil { proxy.tokenCalls == ["a": 2, "b": 2] }, "\(proxy.tokenCalls)")
        #expect(waitUntil { (try? proxy.sessionStatus())?["a"]?["token_generation"] as? Int == 2 })
        #expect(waitUntil { (try? proxy.sessionStatus())?["b"]?["token_generation"] as? Int == 2 })
        #expect(try proxy.get("/a/x").status == 200)
        #expect(proxy["a"].upstream.requests.last?.header("authorization") == "Bearer a-access-2")
    }

    /// Point 2: a client_secret corrected in the file is used after SIGHUP, without a restart; the
    /// 401 before says what fits client_credentials.
    @Test func sighupAppliesACorrectedClientSecret() throws {
        let proxy = try TwoReloadableSessions(secrets: ["a": "a-wrong-secret"])
        #expect(waitUntil { proxy.tokenCalls == ["a": 1, "b": 1] })
        let refused = try proxy.get("/a/before")
        #expect(refused.status == 401)
        #expect(refused.text.contains("invalid_client"), "\(refused.text)")
        #expect(refused.text.contains("fix client_id and client_secret"), "\(refused.text)")
        #expect(!refused.text.contains("refresh token file"), "\(refused.text)")
        proxy.write()
        proxy.proxy.signal(SIGHUP)
        // The corrected secret, applied, brings a's first token.
        #expect(waitUntil { (try? proxy.sessionStatus())?["a"]?["state"] as? String == "ready" })
        let served = try proxy.get("/a/after")
        #expect(served.status == 200, "\(served.text)")
        #expect(proxy["a"].upstream.requests.last?.header("authorization") == "Bearer a-access-1")
        let lines = proxy.stopAndReadReloadLines()
        #expect(lines.count == 1 && lines[0].contains(" info SIGHUP: configuration re-read and applied file="))
        #expect(!proxy.proxy.standardError.contains("a-wrong-secret"))
        #expect(!proxy.proxy.standardError.contains("a-secret"), "a secret reached the log")
    }

    /// An invalid file changes nothing: one error line naming file:line, the sessions serve on, and
    /// no token call is made for it.
    @Test func sighupWithAnInvalidFileChangesNothing() throws {
        let proxy = try TwoReloadableSessions()
        #expect(waitUntil { proxy.tokenCalls == ["a": 1, "b": 1] })
        proxy.write(secrets: ["b": "b-other-secret"], sessionLines: ["b": "refresh_skew = soon"])
        proxy.proxy.signal(SIGHUP)
        // Nothing a client sees changes, so there is no event to wait for: b serves meanwhile, and the
        // re-read has ended by the time the proxy stops.
        #expect(try proxy.get("/b/x").status == 200)
        let lines = proxy.stopAndReadReloadLines()
        #expect(lines.count == 1, "\(lines)")
        let line = lines.first
        #expect(
            line?.contains(
                #" error SIGHUP: the config file has errors; the running configuration stays error="\#(proxy.configFile):"#
            ) == true,
            "\(line ?? "")"
        )
        #expect(line?.contains("refresh_skew: invalid duration 'soon'") == true, "\(line ?? "")")
        #expect(proxy.tokenCalls == ["a": 1, "b": 1], "a file with errors made no token call")
    }

    /// Keys that cannot change live are named in one warning and keep their running values; what can
    /// change (access_log here, from off to stderr) does.
    @Test func sighupNamesTheKeysThatNeedARestartAndAppliesTheRest() throws {
        let proxy = try TwoReloadableSessions()
        // The start-up refreshes have ended (a SIGHUP during one joins it rather than start another).
        for name in ["a", "b"] {
            #expect(waitUntil { (try? proxy.sessionStatus())?[name]?["token_generation"] as? Int == 1 })
        }
        proxy.write(processLines: "workers = 3\naccess_log = stderr", sessionLines: ["b": "refresh_on = 401, 403"])
        proxy.proxy.signal(SIGHUP)
        // Applied, the re-read refreshes both sessions.
        #expect(waitUntil { proxy.tokenCalls == ["a": 2, "b": 2] }, "\(proxy.tokenCalls)")
        #expect(try proxy.get("/b/logged").status == 200)
        let lines = proxy.stopAndReadReloadLines()
        #expect(lines.count == 2, "\(lines)")
        let warning = lines.first { $0.contains(" warn SIGHUP: ") }
        #expect(
            warning?.hasSuffix(
                #"warn SIGHUP: restart to apply these changes; they keep their running values until then keys="workers, [session b] refresh_on""#
            ) == true,
            "\(warning ?? "")"
        )
        #expect(proxy.proxy.standardError.contains(" info request method=GET "), "the access log is on")
        #expect(proxy.proxy.standardError.contains(" path=/b/logged status=200 "))
    }
}
