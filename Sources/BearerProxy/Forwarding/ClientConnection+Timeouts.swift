import BearerCore
import BearerIO

/// What a client connection is waiting for when its deadline passes.
enum DeadlineKind {
    /// Between requests (client_idle_timeout): close quietly.
    case idle
    /// Inside a request head (client_header_timeout): 408.
    case requestHead
    /// Connecting upstream (upstream_connect_timeout): 504.
    case upstreamConnect
    /// Waiting for upstream bytes (upstream_timeout): 504, or a cut response once it started.
    case upstreamResponse
    /// Parked for a token: a safety net behind the session's own refresh_timeout.
    case token
    /// Between two reads of a request body (client_idle_timeout): 408, or a cut response.
    case requestBody
}

extension ClientConnection {
    /// Sets the one deadline the connection has. (Timers hold the connection strongly: cleanUp cancels
    /// them, and a weak reference would put every retain of the connection on the slow path.) Moving a deadline later costs nothing; a timer is
    /// scheduled only when the deadline moves earlier than the pending one. (Keep-alive traffic
    /// moves deadlines on every request; a heap operation each time would cost more than the request.)
    func setDeadline(_ kind: DeadlineKind, after duration: Duration) {
        let deadline = self.loop.now + duration
        self.deadline = deadline
        self.deadlineKind = kind
        if let scheduled = self.timerDeadline, scheduled <= deadline { return }
        if let timer = self.timer { self.loop.cancel(timer) }
        self.timerDeadline = deadline
        self.timer = self.loop.schedule(at: deadline) { self.timerFired() }
    }

    /// Moves the deadline of the same kind later (upstream bytes arrived).
    func extendDeadline(_ kind: DeadlineKind, after duration: Duration) {
        self.deadline = self.loop.now + duration
        self.deadlineKind = kind
    }

    func clearDeadline() {
        self.deadline = nil
    }

    private func timerFired() {
        self.timer = nil
        self.timerDeadline = nil
        guard !self.isClosed, let deadline = self.deadline else { return }
        if self.loop.now < deadline {
            self.timerDeadline = deadline
            self.timer = self.loop.schedule(at: deadline) { self.timerFired() }
            return
        }
        self.deadline = nil
        self.deadlineExpired(self.deadlineKind)
    }

    private func deadlineExpired(_ kind: DeadlineKind) {
        switch kind {
        case .idle:
            self.runtime.logger.debug("closing idle client connection")
            self.stream.close()
            self.cleanUp()
        case .requestHead:
            self.closesAfterExchange = true
            self.respond(with: .requestHeadTimeout)
        case .upstreamConnect:
            guard let exchange = self.exchange else { return }
            let origin = exchange.target.origin.description
            exchange.connectAttempt?.cancel()
            exchange.connectAttempt = nil
            exchange.upstream?.close()
            exchange.upstream = nil
            self.respond(with: .upstreamConnectTimeout(origin: origin))
        case .upstreamResponse:
            guard let exchange = self.exchange else { return }
            let origin = exchange.target.origin.description
            self.respond(with: .upstreamTimeout(origin: origin))
        case .requestBody:
            self.closesAfterExchange = true
            self.respond(with: .requestBodyTimeout)
        case .token:
            guard let exchange = self.exchange, let id = exchange.waiterID else { return }
            self.runtime.session.cancel(id)
            exchange.waiterID = nil
            self.respond(with: .session(.timedOut(reason: "no new token within refresh_timeout")))
        }
    }
}
