import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `audit_log` against the built binary (docs/untrusted-programs.md): one JSON object per exchange,
/// allowed and refused alike, with the facts of the exchange and never a token; read whole after the
/// proxy stopped, as a reader of the file would.
@Suite struct AuditLogBinaryTests {
    /// Every line of an audit file, each parsed as a JSON object (a line that is not one fails the test).
    static func records(_ path: String) throws -> [[String: Any]] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { line in
            try #require(JSONText.object(Array(line.utf8)), "not a JSON object: \(line)")
        }
    }

    @Test func everyExchangeIsOneJSONLineWithItsFactsAndNoToken() throws {
        let path = temporaryDirectory() + "/audit.jsonl"
        let proxy = try ThreeAPIs(
            "admin_listen = 127.0.0.1:0\naudit_log = \(path)",
            sessionLines: ["a": RequestRulesBinaryTests.aRules]
        )
        // Session a holds its first token before the first request, which then waits for none
        // (`refreshed` false: only the replayed request below waits).
        #expect(
            waitUntil {
                guard let text = try? proxy.admin("GET", "/status").text,
                    let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                    let sessions = object["sessions"] as? [String: [String: Any]]
                else { return false }
                return sessions["a"]?["token_generation"] as? Int == 1
            },
            "session a holds its first token"
        )
        #expect(try proxy.get("/a/whoami?key=sekrit&flag").status == 200)
        let refused = try httpRequest(proxy.main, "DELETE /a/v1/items/7 HTTP/1.1\r\nHost: \(proxy.main)\r\n\r\n")
        #expect(refused.status == 403)
        // The upstream refuses the token: the request waits for a new one and is sent again.
        proxy["a"].authority.revokeAll()
        #expect(try proxy.get("/a/v1/items").status == 200)
        // A host of no session (the default API's token server), by host as a forward proxy client asks.
        let otherHost = try proxy.get(proxy["default"].tokens.url)
        // The admin page's recent exchanges are the same lines, the refused one among them.
        let exchanges = try proxy.admin("GET", "/exchanges").text
        let recent = try #require(JSONText.object(Array(exchanges.utf8)))
        #expect(recent["audit_log"] as? Bool == true)
        let recentLines = try #require(recent["exchanges"] as? [[String: Any]])
        #expect(recentLines.count == 4)
        #expect(
            recentLines.filter { $0["decision"] as? String == "refused" }.map { $0["method"] as? String } == ["DELETE"]
        )
        #expect(proxy.proxy.stop() == 0)

        let records = try Self.records(path)
        #expect(records.count == 4, "one line per exchange: \(records)")
        // Each loop writes its own lines: found by what they are about, not by their order.
        func record(_ field: String, _ value: String) throws -> [String: Any] {
            try #require(records.first { $0[field] as? String == value }, "no line with \(field) \(value)")
        }
        let allowed = try record("path", "/a/whoami?key=…&flag")
        let refusedLine = try record("method", "DELETE")
        let replayed = try record("path", "/a/v1/items")
        let other = try record("path", "/oauth/token")
        #expect(allowed["session"] as? String == "a")
        #expect(allowed["method"] as? String == "GET")
        #expect(allowed["scheme"] as? String == "http")
        #expect(allowed["host"] as? String == proxy["a"].upstream.baseURL.replacing("http://", with: ""))
        #expect(allowed["protocol"] as? String == "HTTP/1.1")
        #expect(allowed["status"] as? Int == 200)
        #expect((allowed["bytes_out"] as? Int ?? 0) > 0)
        #expect(allowed["bytes_in"] as? Int == 0)
        #expect(allowed["duration_ms"] != nil)
        #expect(allowed["token_generation"] as? Int == 1)
        #expect(allowed["replayed"] as? Bool == false)
        #expect(allowed["decision"] as? String == "allowed")
        #expect(allowed["rule"] == nil)
        let client = try #require(allowed["client"] as? String)
        #expect(client.hasPrefix("127.0.0.1:"))
        let time = try #require(allowed["time"] as? String)
        #expect(time.count == 24 && time.hasSuffix("Z"), "RFC 3339 UTC with milliseconds: \(time)")

        #expect(refusedLine["session"] as? String == "a")
        #expect(refusedLine["status"] as? Int == 403)
        #expect(refusedLine["decision"] as? String == "refused")
        #expect(refusedLine["rule"] as? String == "allow = GET /whoami, GET /v1/*, POST /v1/items")
        #expect(refusedLine["token_generation"] is JSONNull, "no token was added")

        #expect(replayed["status"] as? Int == 200)
        #expect(replayed["replayed"] as? Bool == true)
        #expect(replayed["refreshed"] as? Bool == true)
        #expect(replayed["token_generation"] as? Int == 2)

        #expect(other["decision"] as? String == "other_host")
        #expect(other["session"] is JSONNull)
        #expect(other["status"] as? Int == otherHost.status)
        #expect(other["token_generation"] is JSONNull)

        // No token any token server issued, no client secret.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for (name, api) in proxy.apis {
            #expect(api.authority.issuedCount > 0)
            for number in 0...api.authority.issuedCount {
                #expect(!text.contains("\(name)-access-\(number)"), "a token in the audit log")
                #expect(!exchanges.contains("\(name)-access-\(number)"), "a token in /exchanges")
            }
            #expect(!text.contains("\(name)-secret-e2e"))
        }
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)

        // `bearer-proxy audit FILE` sums it up: a's row, the other host's, and the refusal by rule.
        let summary = try ProxyProcess.run(["audit", path])
        #expect(summary.status == 0, "\(summary.stderr)")
        let lines = summary.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        #expect(lines.first?.hasPrefix("\(path): 4 requests, ") == true, "\(summary.stdout)")
        let aHost = proxy["a"].upstream.baseURL.replacing("http://", with: "")
        #expect(lines.contains("a \(aHost) 3 1 1 1 200:2 403:1"), "\(summary.stdout)")
        #expect(lines.contains { $0.hasPrefix("- ") && $0.contains(" 1 0 0 0 \(otherHost.status):1") })
        #expect(lines.contains("a 1 allow = GET /whoami, GET /v1/*, POST /v1/items"), "\(summary.stdout)")
    }

    /// One API behind a proxy listening on TCP and on a unix socket, with `extra` lines.
    final class UnixSocketProxy {
        let api: MockAPI
        let proxy: ProxyProcess
        let tcp: SocketAddress
        let unix: SocketAddress
        let admin: SocketAddress

        init(_ extra: String) throws {
            let api = try MockAPI("u", secret: "u-secret-e2e")
            self.api = api
            let socket = temporaryDirectory() + "/proxy.sock"
            let config = temporaryFile(
                """
                listen = 127.0.0.1:0, unix:\(socket)
                admin_listen = 127.0.0.1:0
                upstream = \(api.upstream.baseURL)
                token_url = \(api.tokens.url)
                client_id = u-client
                client_secret = u-secret-e2e
                \(extra)
                """
            )
            self.proxy = try ProxyProcess(["--config", config])
            guard self.proxy.waitUntilListening() != nil,
                let tcp = ThreeAPIs.address(in: self.proxy.standardError, session: nil),
                let admin = word(startingWith: "admin=", in: self.proxy.standardError).flatMap({ text in
                    try? tcpPort(of: String(text.dropFirst(6)))
                }).flatMap({ SocketAddress(ipAddress: "127.0.0.1", port: $0) })
            else {
                throw TestFailure(description: "the proxy did not start: \(self.proxy.standardError)")
            }
            self.tcp = tcp
            self.admin = admin
            self.unix = .unix(path: socket)
        }

        deinit {
            _ = self.proxy.stop()
            self.api.stop()
        }

        func get(_ target: String, on address: SocketAddress? = nil) throws -> BlockingHTTPClient.Response {
            let address = address ?? self.tcp
            let host = address.isUnix ? "localhost" : address.description
            return try httpRequest(address, "GET \(target) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        }

        /// The value of a counter on /metrics.
        func metric(_ name: String) throws -> Int? {
            let text = try httpRequest(self.admin, "GET /metrics HTTP/1.1\r\nHost: \(self.admin)\r\n\r\n").text
            let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            return line.flatMap { Int($0.split(separator: " ")[1]) }
        }
    }

    @Test func aUnixSocketClientIsItsProcessAndUser() throws {
        let path = temporaryDirectory() + "/audit.jsonl"
        let setup = try UnixSocketProxy("audit_log = \(path)")
        #expect(try setup.get("/whoami", on: setup.unix).status == 200)
        #expect(setup.proxy.stop() == 0)
        let records = try Self.records(path)
        #expect(records.count == 1)
        let client = try #require(records.first?["client"] as? [String: Any])
        #expect(client["pid"] as? Int == Int(getpid()), "the test process connected")
        #expect(client["uid"] as? Int == Int(getuid()))
    }

    /// logrotate's way: the file is renamed, SIGUSR1 makes the proxy open the path again. Every
    /// exchange is in exactly one of the two files, whichever side of the rotation it ended on.
    @Test func userSignalOneAfterARenameStartsANewFileAndLosesNothing() throws {
        let folder = temporaryDirectory()
        let path = folder + "/audit.jsonl"
        let setup = try UnixSocketProxy("audit_log = \(path)")
        var sent: [String] = []
        func send(_ count: Int) throws {
            for _ in 0..<count {
                let target = "/whoami/\(sent.count)"
                #expect(try setup.get(target).status == 200, "\(target)")
                sent.append(target)
            }
        }
        try send(5)
        #expect(rename(path, path + ".1") == 0)
        setup.proxy.signal(SIGUSR1)
        // The new file appears when the proxy opened it (an event in the file system, not a log line).
        #expect(waitUntil { access(path, F_OK) == 0 }, "SIGUSR1 did not open the path again")
        // Each loop moves to the new file as soon as it runs the change: requests until one is there.
        #expect(
            waitUntil {
                (try? send(1)) != nil && ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").contains("\n")
            }
        )
        #expect(setup.proxy.stop() == 0, "SIGUSR1 is not a stop")
        let rotated = try Self.records(path + ".1").compactMap { $0["path"] as? String }
        let current = try Self.records(path).compactMap { $0["path"] as? String }
        #expect((rotated + current).sorted() == sent.sorted(), "every exchange once")
        #expect(rotated.count >= 5 && !current.isEmpty)
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)
    }

    /// A file the proxy cannot write: one warning, the lines counted as dropped, and every request
    /// still answered.
    @Test(arguments: ["/dev/full", "/proc/bearer-proxy-audit/unwritable.jsonl"])
    func anUnwritableAuditFileIsOneWarningAndCountedDrops(path: String) throws {
        let setup = try UnixSocketProxy("audit_log = \(path)")
        for _ in 0..<5 { #expect(try setup.get("/whoami").status == 200) }
        #expect(waitUntil { (try? setup.metric("bearer_proxy_audit_lines_dropped_total")) == 5 })
        #expect(try setup.get("/whoami").status == 200)
        #expect(setup.proxy.stop() == 0)
        let warnings = setup.proxy.standardError.split(separator: "\n").filter { $0.contains("audit_log=") }
        #expect(warnings.count == 1, "\(setup.proxy.standardError)")
        #expect(warnings.first?.contains(" warn ") == true)
    }
}
