import BearerCore
import BearerHTTP
import BearerIO

/// One connection to the admin listener: the page (`/`, `/app.js`, `/app.css`, `/icon.svg`),
/// `/metrics`, `/healthz`, `/status`, `/events` (a snapshot a second until the client goes),
/// `/exchanges` (the audit log's last lines), `POST /refresh`, `POST /logout`, nothing else. Follows
/// the same Host and Origin rules as the proxy port (its own origin allowed, for the page's buttons),
/// so another web page cannot log the user out or read their session. `?session=NAME` names the session refresh
/// and logout act on (none: the default session, when there is one). Confined to its loop.
final class AdminConnection: StreamConnectionDelegate {
    let stream: StreamConnection
    let server: AdminServer
    private var parser = HTTPRequestParser(maximumHeadBytes: 16 * 1024)
    private var head: RequestHead?
    private var isBusy = false
    private var closes = false
    /// Answering `/events`: the connection is the stream's until the client goes.
    private var isWatching = false

    init(stream: StreamConnection, server: AdminServer) {
        self.stream = stream
        self.server = server
    }

    func streamReceived(_ connection: StreamConnection) { self.process() }
    func streamReadEnded(_ connection: StreamConnection) {
        if self.isWatching { self.server.viewers.value.remove(connection) }
        if !self.isBusy || self.isWatching { connection.closeAfterFlush() } else { self.closes = true }
    }
    func streamWritable(_ connection: StreamConnection) {}
    func streamConnected(_ connection: StreamConnection) {}
    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        if self.isWatching { self.server.viewers.value.remove(connection) }
    }

    private func process() {
        while !self.isBusy && !self.stream.isClosed {
            let event: HTTPRequestParser.Event
            do throws(HTTPParseError) {
                event = try self.stream.inbound.parseNext { raw throws(HTTPParseError) in try self.parser.next(raw) }
            } catch {
                self.closes = true
                self.respond(error.status, "bearer-proxy: bad request: \(error.message)\n")
                return
            }
            switch event {
            case .needMore:
                return
            case .head(let head, _):
                self.head = head
                if !head.wantsKeepAlive { self.closes = true }
            case .body:
                // Admin requests carry no meaningful body; it is read and dropped.
                continue
            case .end:
                if let head = self.head { self.handle(head) }
            }
        }
    }

    private func handle(_ head: RequestHead) {
        if let refusal = self.server.requestGuard.check(head, fromUnixSocket: self.server.isUnixSocket) {
            self.respond(refusal.status, refusal.message + "\n")
            return
        }
        let parts = head.string(head.target).split(separator: "?", maxSplits: 1)
        let path = String(parts.first ?? "")
        let query = parts.count > 1 ? String(parts[1]) : ""
        let method = head.string(head.methodRange)
        let runtime = self.server.runtime
        switch (method, path) {
        case ("GET", "/healthz"), ("HEAD", "/healthz"):
            self.respond(200, "ok\n")
        case ("GET", "/metrics"):
            self.isBusy = true
            self.server.gatherLoopMetrics(from: self.stream.loop) { loops in
                let sessions = runtime.shownSessions.map { session in
                    SessionFigures(
                        name: runtime.namesSessions ? session.name : nil,
                        metrics: session.tokens.metrics,
                        parked: session.tokens.parkedCount,
                        generation: session.tokens.generation,
                        store: session.tokens.sessionStore?.status,
                        dpop: session.dpop
                    )
                }
                var text = renderMetrics(
                    loops: loops,
                    sessions: sessions,
                    openConnections: runtime.openConnections.load(ordering: .relaxed)
                )
                text += renderStoreMetrics(sessions)
                text += renderDPoPMetrics(sessions)
                text += renderRefusalMetrics(runtime.shownSessions.map { ($0.name, $0.refusals.withLock { $0 }) })
                text += renderLogMetrics(
                    droppedLines: runtime.droppedLogLines,
                    droppedAuditLines: runtime.droppedAuditLines,
                    queuedBytes: runtime.queuedLogBytes
                )
                text += renderInterceptMetrics(
                    leavesIssued: runtime.interceptCertificates?.leavesIssued ?? 0,
                    loops: loops
                )
                self.isBusy = false
                self.respond(200, text, contentType: "text/plain; version=0.0.4; charset=utf-8")
            }
        case ("GET", "/status"):
            self.respond(200, self.statusJSON(), contentType: "application/json")
        case ("GET", "/events"):
            self.watch()
        case ("GET", "/"):
            self.respondPage(AdminPage.html, contentType: "text/html; charset=utf-8")
        case ("GET", "/app.js"):
            self.respondPage(AdminPageScript.source, contentType: "text/javascript; charset=utf-8")
        case ("GET", "/app.css"):
            self.respondPage(AdminPage.style, contentType: "text/css; charset=utf-8")
        case ("GET", "/icon.svg"):
            self.respondPage(AdminPage.icon, contentType: "image/svg+xml")
        case ("GET", "/exchanges"):
            let isOn = runtime.auditLog != nil
            let lines = isOn ? runtime.recentExchanges.json : "[]"
            self.respond(200, #"{"audit_log":\#(isOn),"exchanges":\#(lines)}"# + "\n", contentType: "application/json")
        case ("POST", "/refresh"):
            if let (session, parks) = self.session(named: query, allowsPark: true) {
                self.refresh(session, parks: parks)
            }
        case ("POST", "/logout"):
            if let (session, _) = self.session(named: query) { self.logOut(session) }
        case (_, "/healthz"), (_, "/metrics"), (_, "/status"), (_, "/events"), (_, "/refresh"), (_, "/logout"),
            (_, "/"), (_, "/app.js"), (_, "/app.css"), (_, "/icon.svg"), (_, "/exchanges"):
            // RFC 9110 §15.5.6: a 405 names the methods the resource does allow.
            let allowed = Self.allowedMethods(path)
            self.respond(
                405,
                "bearer-proxy: \(method) is not allowed on \(path) (use \(allowed))\n",
                extraHeaders: "Allow: \(allowed)\r\n"
            )
        default:
            self.respond(
                404,
                "bearer-proxy admin: no such endpoint (try /, /metrics, /healthz, /status, /events, /exchanges, POST /refresh, POST /logout)\n"
            )
        }
    }

    /// `GET /events`: a `text/event-stream` without a length, one snapshot a second (`EventStreamViewers`)
    /// until the client closes; past the viewers' limit a 503 that says so.
    private func watch() {
        let viewers = self.server.viewers.value
        guard viewers.count < EventStreamViewers.limit else {
            self.closes = true
            self.respond(
                503,
                "bearer-proxy: \(EventStreamViewers.limit) viewers are watching /events already, the most it serves; close one and try again\n"
            )
            return
        }
        self.isBusy = true
        self.isWatching = true
        self.stream.withOutbound { buffer in
            buffer.writeString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n")
            buffer.writeString("Connection: close\r\n\r\n")
        }
        _ = viewers.add(self.stream, of: self.server)
    }

    /// A part of the page, with the policy that keeps it to the listener's own script and style.
    private func respondPage(_ body: String, contentType: String) {
        self.respond(
            200,
            body,
            contentType: contentType,
            extraHeaders: "Content-Security-Policy: \(AdminPage.contentSecurityPolicy)\r\n"
                + "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
        )
    }

    /// The session `?session=NAME` names (none: the default session), and for `/refresh` whether
    /// `park=1` asks requests to wait for its token; nil after answering 404 (a name that is no
    /// session's) or 400 (another parameter, or no name when there is no default session).
    private func session(named query: String, allowsPark: Bool = false) -> (NamedSession, parks: Bool)? {
        let runtime = self.server.runtime
        let sessions = runtime.shownSessions
        let known = sessions.map(\.name).joined(separator: ", ")
        var name: Substring?
        var parks = false
        for parameter in query.split(separator: "&", omittingEmptySubsequences: true) {
            if parameter.hasPrefix("session="), name == nil {
                name = parameter.dropFirst("session=".count)
            } else if allowsPark, parameter == "park=1", !parks {
                parks = true
            } else {
                let allowed =
                    allowsPark ? "the parameters are session=NAME and park=1" : "the only parameter is session=NAME"
                self.respond(400, "bearer-proxy: \(allowed) (the sessions are \(known))\n")
                return nil
            }
        }
        guard let name else {
            if runtime.configuration.hasDefaultSession { return (runtime.sessions[0], parks) }
            // 400, not 409: the request is incomplete whatever state the sessions are in.
            let choices = sessions.map { "?session=\($0.name)" }
            let listed =
                choices.count > 1
                ? choices.dropLast().joined(separator: ", ") + " or " + choices[choices.count - 1] : choices.joined()
            self.respond(400, "bearer-proxy: this proxy has no default session; name one: \(listed)\n")
            return nil
        }
        guard let session = sessions.first(where: { $0.name == name }) else {
            let shown = oneLine(String(name), limit: 64)
            self.respond(404, "bearer-proxy: there is no session '\(shown)' (the sessions are \(known))\n")
            return nil
        }
        return (session, parks)
    }

    /// What each admin endpoint answers to, as an `Allow` value.
    private static func allowedMethods(_ path: String) -> String {
        switch path {
        case "/healthz": "GET, HEAD"
        case "/refresh", "/logout": "POST"
        default: "GET"
        }
    }

    /// The default session's fields at the top level (as in a file without sections), and with
    /// named sessions every session's under `sessions`, keyed by name, and `default_session`: the
    /// name of the one at the top level, or null when the keys outside any section reach no API
    /// (then the top level holds no session's fields).
    private func statusJSON() -> String {
        let runtime = self.server.runtime
        let hasDefaultSession = runtime.configuration.hasDefaultSession
        var object = hasDefaultSession ? Self.status(of: runtime.sessions[0]) : [:]
        object["open_connections"] = runtime.openConnections.load(ordering: .relaxed)
        if runtime.namesSessions {
            object["default_session"] = hasDefaultSession ? runtime.sessions[0].name : JSONNull()
            var sessions: [String: Any] = [:]
            for session in runtime.shownSessions {
                var fields = Self.status(of: session)
                fields["mount"] = session.settings.mount ?? JSONNull()
                let listeners = self.server.sessionListeners(session)
                fields["listen"] = listeners.isEmpty ? JSONNull() : listeners.joined(separator: ", ")
                sessions[session.name] = fields
            }
            object["sessions"] = sessions
        }
        return JSONText.text(of: object, pretty: true) + "\n"
    }

    /// A session's `/status` fields: never a token.
    private static func status(of session: NamedSession) -> [String: Any] {
        let status = session.tokens.status
        var object: [String: Any] = [
            "state": status.state,
            "token_generation": status.generation,
            "parked_requests": status.parked,
            "upstream": session.settings.upstream?.description ?? "",
        ]
        object["token_expires_in_s"] = status.expiresInSeconds.map { ($0 * 10).rounded() / 10 } ?? JSONNull()
        object["token_expires_at"] =
            status.expiresInSeconds.map { formatTimestamp(wallClockSeconds() + $0) } ?? JSONNull()
        // What started it and how long it took: the token endpoint's latency as this proxy saw it
        // (what `bearer-bench --config` reports per refresh).
        object["last_refresh"] =
            status.lastRefreshOutcome.map { outcome -> Any in
                [
                    "outcome": outcome, "at": status.lastRefreshWallTime.map(formatTimestamp) ?? "",
                    "trigger": status.lastRefreshTrigger ?? JSONNull(),
                    "duration_s": status.lastRefreshSeconds.map { ($0 * 1000).rounded() / 1000 } ?? JSONNull(),
                    "waiting_requests": status.lastRefreshWaiting ?? JSONNull(),
                ] as [String: Any]
            } ?? JSONNull()
        // Where refreshes go (a URL, or that a command makes the tokens, never the command's words).
        object["token_endpoint"] =
            session.settings.tokenURL?.description
            ?? (session.settings.tokenCommand == nil ? JSONNull() : "token_command")
        object["failure"] = status.failure ?? JSONNull()
        // Which store keeps the refresh token (file or secret-service), never what it holds.
        object["credential_store"] = session.refreshTokenStoreName ?? JSONNull()
        // The key's thumbprint is public (RFC 7638): what a server binds tokens to, never the key.
        object["dpop"] =
            session.dpop.map {
                ["enabled": true, "key_file": $0.keyFile, "thumbprint": $0.thumbprint] as [String: Any]
            }
            ?? ["enabled": false]
        if let store = session.tokens.sessionStore?.status {
            // The store's URL with its password as <redacted>: enough to tell which Redis, nothing to log in with.
            object["session_store"] =
                [
                    "store": store.store, "name": store.name, "state": store.state, "subscribed": store.isSubscribed,
                    "generation": store.generation, "last_error": store.lastError ?? JSONNull(),
                ] as [String: Any]
        }
        return object
    }

    /// `parks`: `?park=1`, requests wait for the new token meanwhile, as after a 401 (an expiry storm
    /// on demand: what `bearer-bench --config` forces).
    private func refresh(_ session: NamedSession, parks: Bool) {
        let loop = self.stream.loop
        let this = UnsafeTransfer(self)
        self.isBusy = true
        let started = session.tokens.forceRefresh(trigger: parks ? "admin-park" : "admin", parks: parks) { outcome in
            loop.execute {
                let connection = this.value
                connection.isBusy = false
                switch outcome {
                case .succeeded(let generation):
                    connection.respond(
                        200,
                        #"{"outcome":"ok","token_generation":\#(generation)}"# + "\n",
                        contentType: "application/json"
                    )
                case .failed(let failure):
                    let body = ["outcome": "failed", "error": failure.shortName, "message": failure.message]
                    connection.respond(
                        failure.status,
                        JSONText.text(of: body) + "\n",
                        contentType: "application/json"
                    )
                }
            }
        }
        if !started {
            self.isBusy = false
            let whose = session.index == 0 ? "" : " in [session \(session.name)]"
            self.respond(
                409,
                "bearer-proxy: there is nothing to refresh with (set token_url or token_command\(whose))\n"
            )
        }
    }

    private func logOut(_ session: NamedSession) {
        let loop = self.stream.loop
        let this = UnsafeTransfer(self)
        let refreshToken = session.tokens.logOut()
        guard let revocation = session.tokens.revocation, let refreshToken else {
            self.respond(200, #"{"logged_out":true,"revoked":false}"# + "\n", contentType: "application/json")
            return
        }
        self.isBusy = true
        revocation.revoke(refreshToken) { result in
            loop.execute {
                let connection = this.value
                connection.isBusy = false
                switch result {
                case .success:
                    connection.respond(
                        200,
                        #"{"logged_out":true,"revoked":true}"# + "\n",
                        contentType: "application/json"
                    )
                case .failure(let reason):
                    let body: [String: Any] = [
                        "logged_out": true, "revoked": false, "revocation_error": reason.description,
                    ]
                    connection.respond(
                        502,
                        JSONText.text(of: body) + "\n",
                        contentType: "application/json"
                    )
                }
            }
        }
    }

    private func respond(
        _ status: Int,
        _ body: String,
        contentType: String = "text/plain; charset=utf-8",
        extraHeaders: String = ""
    ) {
        guard !self.stream.isClosed else { return }
        let close = self.closes
        self.stream.withOutbound { buffer in
            buffer.writeString("HTTP/1.1 \(status) \(reasonPhrase(status))\r\nContent-Type: \(contentType)\r\n")
            buffer.writeString(extraHeaders)
            buffer.writeString("Content-Length: \(body.utf8.count)\r\nCache-Control: no-store\r\n")
            if close { buffer.writeString("Connection: close\r\n") }
            buffer.writeString("\r\n")
            buffer.writeString(body)
        }
        if close {
            self.stream.closeAfterFlush()
        } else {
            self.stream.flush()
            if !self.stream.inbound.isEmpty { self.process() }
        }
    }
}

@available(*, unavailable)
extension AdminConnection: Sendable {}
