import BearerIO
import BearerTestSupport
import Foundation

/// The proxy's admin listener as a run against your own stack uses it: `/status` for the session's
/// facts and its last refresh, `/metrics` for how many refreshes ended, `POST /refresh?park=1` for a
/// storm. One short connection per request (a few a second), never a token: the admin shows none.
struct StackAdmin: Sendable {
    let address: SocketAddress
    /// `session=NAME`, or nothing for the default session.
    let sessionQuery: String

    /// What the admin shows of one session (`/status`).
    struct SessionStatus {
        var fields: [String: Any]
        /// The session's name in `/metrics` labels (nil: the proxy names no session).
        var metricsName: String?

        var upstream: String { self.fields["upstream"] as? String ?? "" }
        var tokenEndpoint: String? { self.fields["token_endpoint"] as? String }
        var generation: Int { self.fields["token_generation"] as? Int ?? 0 }
        var mount: String { self.fields["mount"] as? String ?? "" }
        /// The session's own listener, when it has one: its requests go there.
        var listen: String? {
            (self.fields["listen"] as? String)?.split(separator: ",").first.map {
                String($0).trimmingCharacters(in: .whitespaces)
            }
        }
        var lastRefresh: LastRefresh? {
            guard let object = self.fields["last_refresh"] as? [String: Any] else { return nil }
            return LastRefresh(
                outcome: object["outcome"] as? String ?? "",
                at: object["at"] as? String ?? "",
                trigger: object["trigger"] as? String,
                seconds: object["duration_s"] as? Double,
                waitingRequests: object["waiting_requests"] as? Int,
                generation: self.generation
            )
        }
    }

    /// `/status`'s `last_refresh`, with the generation it left.
    struct LastRefresh: Equatable {
        var outcome: String
        var at: String
        var trigger: String?
        var seconds: Double?
        var waitingRequests: Int?
        var generation: Int

        /// Names one refresh: a new one changes its time, trigger or generation.
        var key: String { "\(self.at)|\(self.trigger ?? "")|\(self.generation)|\(self.outcome)" }
    }

    /// `http://HOST:PORT` (the admin listens on an IP address).
    init(url: String, session: String?) throws {
        guard let address = socketAddress(of: url) else {
            throw BenchError("--admin must be http://IP:PORT, the proxy's admin_listen, got '\(url)'")
        }
        self.address = address
        self.sessionQuery = session.map { "session=\($0)" } ?? ""
    }

    init(address: SocketAddress, session: String?) {
        self.address = address
        self.sessionQuery = session.map { "session=\($0)" } ?? ""
    }

    private func request(_ method: String, _ target: String) throws -> BlockingHTTPClient.Response {
        let client = try BlockingHTTPClient(connectingTo: self.address, timeout: .seconds(60))
        let body = method == "POST" ? "Content-Length: 0\r\n" : ""
        client.send("\(method) \(target) HTTP/1.1\r\nHost: \(self.address)\r\n\(body)Connection: close\r\n\r\n")
        return try client.readResponse(method: method == "POST" ? .post : .get)
    }

    /// The session's part of `/status` (named: `sessions[NAME]`, else the top level).
    func status(session: String?) throws -> SessionStatus {
        let response = try self.request("GET", "/status")
        guard response.status == 200,
            let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        else { throw BenchError("the admin's /status answered \(response.status): \(response.text.prefix(200))") }
        guard let sessions = object["sessions"] as? [String: Any] else {
            if let session, session != "default" {
                throw BenchError("the proxy has no session '\(session)' (its config has no [session] sections)")
            }
            return SessionStatus(fields: object, metricsName: nil)
        }
        guard let name = session ?? (object["default_session"] as? String) else {
            let names = sessions.keys.sorted().joined(separator: ", ")
            throw BenchError("the proxy has no default session; name one with --session (its sessions: \(names))")
        }
        guard let fields = sessions[name] as? [String: Any] else {
            let names = sessions.keys.sorted().joined(separator: ", ")
            throw BenchError("the proxy has no session '\(name)' (its sessions: \(names))")
        }
        return SessionStatus(fields: fields, metricsName: name)
    }

    /// Refreshes of the session that ended so far, whatever their outcome (`/metrics`).
    func refreshesEnded(metricsName: String?) throws -> Int {
        let response = try self.request("GET", "/metrics")
        guard response.status == 200 else { throw BenchError("the admin's /metrics answered \(response.status)") }
        let prefix = "bearer_proxy_token_refreshes_total{" + (metricsName.map { "session=\"\($0)\"," } ?? "")
        return response.text.split(separator: "\n").filter { $0.hasPrefix(prefix) }
            .compactMap { line in line.split(separator: " ").last.flatMap { Int($0) } }
            .reduce(0, +)
    }

    /// What `POST /refresh?park=1` answered: the generation it put in use, or why it failed.
    struct ForcedRefresh {
        var status: Int
        var generation: Int?
        /// The error's short name (`rejected`, `unreachable`, …), or the answer's first line.
        var error: String?
    }

    /// Forces an expiry storm: returns when the refresh ended.
    func forceStorm() throws -> ForcedRefresh {
        let query = self.sessionQuery.isEmpty ? "park=1" : "\(self.sessionQuery)&park=1"
        let response = try self.request("POST", "/refresh?\(query)")
        let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        let error =
            response.status == 200
            ? nil : (object?["error"] as? String ?? String(response.text.split(separator: "\n").first ?? "no answer"))
        return ForcedRefresh(status: response.status, generation: object?["token_generation"] as? Int, error: error)
    }
}

/// `http://IP:PORT[/…]` (or `localhost`) as a socket address.
func socketAddress(of url: String) -> SocketAddress? {
    guard let parsed = URL(string: url), parsed.scheme == "http", let host = parsed.host else { return nil }
    let port = parsed.port ?? 80
    let ip = host == "localhost" ? "127.0.0.1" : host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
    return SocketAddress(ipAddress: ip, port: port)
}
