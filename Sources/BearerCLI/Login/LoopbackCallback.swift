import BearerCore
import BearerSession

/// Judges a request that reached the loopback redirect listener (RFC 8252 §7.3): the one callback
/// that belongs to this login ends it; anything else is refused and the listener keeps waiting, so
/// a stray request or a forged callback (another `state`) cannot end or hijack the login.
struct LoopbackCallback: Sendable {
    static let path = "/callback"
    let expectedState: String

    enum Verdict: Equatable {
        /// The authorization server sent this login's code: answer the success page, stop listening.
        case accept(code: String)
        /// The authorization server said no for this login (error=access_denied …): say so, stop.
        case deny(code: String, description: String?)
        /// Not this login's callback (another path, a wrong or missing state): refuse it, keep waiting.
        case refuse(status: Int, reason: String)
    }

    func judge(method: String, target: String) -> Verdict {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.first.map(String.init) == Self.path else {
            return .refuse(status: 404, reason: "This is bearer-proxy's login listener; there is nothing here.")
        }
        guard method == "GET" else { return .refuse(status: 405, reason: "The login callback is a GET.") }
        let query = parts.count > 1 ? Self.parseQuery(String(parts[1])) : [:]
        guard let state = query["state"], state == self.expectedState else {
            return .refuse(
                status: 400,
                reason: "This callback's state does not match the login in progress, so it was refused."
            )
        }
        if let error = query["error"] {
            return .deny(code: TokenEndpointResponse.errorCode(error), description: query["error_description"])
        }
        guard let code = query["code"], !code.isEmpty else {
            return .refuse(status: 400, reason: "The callback carries no authorization code.")
        }
        return .accept(code: code)
    }

    /// The page the browser shows for a verdict.
    static func page(for verdict: Verdict) -> (status: Int, html: String) {
        switch verdict {
        case .accept:
            (200, self.html("Logged in", "bearer-proxy has what it needs. You may close this window."))
        case .deny(let code, let description):
            (
                200,
                self.html(
                    "Login failed",
                    "The authorization server answered \(code)\(description.map { ": \($0)" } ?? ""). You may close this window."
                )
            )
        case .refuse(let status, let reason):
            (status, self.html("Not this login", reason))
        }
    }

    private static func html(_ title: String, _ text: String) -> String {
        """
        <!doctype html>
        <html><head><meta charset="utf-8"><title>bearer-proxy: \(escapeHTML(title))</title></head>
        <body style="font-family: sans-serif; margin: 3em"><h1>\(escapeHTML(title))</h1><p>\(escapeHTML(text))</p></body></html>

        """
    }

    /// `a=1&b=x%20y` with `+` as a space (HTML form encoding, which browsers use for queries).
    static func parseQuery(_ query: String) -> [String: String] {
        var values: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                PercentEncoding.decode($0.replacing("+", with: " ")) ?? String($0)
            }
            if values[parts[0]] == nil { values[parts[0]] = parts.count > 1 ? parts[1] : "" }
        }
        return values
    }
}

func escapeHTML(_ text: String) -> String {
    text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
        .replacing("\"", with: "&quot;")
}
