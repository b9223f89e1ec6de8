import BearerCore
import FoundationEssentials

/// An app backend's own JSON auth endpoints: `POST /api/auth/login` with a username and password,
/// `POST /api/auth/refresh` with a refresh token, `POST /api/auth/logout`, answering in camelCase or
/// snake_case, with or without a `{"data": …}` envelope.
extension MockTokenServer {
    /// How the JSON endpoints shape their answers.
    package struct JSONShape: Sendable, Equatable {
        package enum Casing: String, Sendable, CaseIterable {
            /// `access_token`, `refresh_token`, `expires_in`
            case snake
            /// `accessToken`, `refreshToken`, `expiresIn`
            case camel
        }

        /// How the expiry is said (the lifetime itself is `Settings.expiresIn`).
        package enum Expiry: String, Sendable, CaseIterable {
            /// `expiresIn`: seconds from now.
            case lifetime
            /// `expiresAt`: epoch seconds.
            case epochSeconds
            /// `expiresAt`: an RFC 3339 time.
            case rfc3339
        }

        package var casing: Casing = .camel
        /// Wrap the answer in `{"data": …}`.
        package var isEnveloped = false
        package var expiry: Expiry = .lifetime
        /// Answer `{"result": {"auth": {"jwt", "renew", "validUntil"}}}` instead: names no default
        /// search finds, for `token_field`, `refresh_token_field` and `expires_field`.
        package var usesCustomFields = false
        /// Issue a refresh token with each login.
        package var loginIssuesRefreshToken = true

        package init() {}
    }

    package static let jsonLoginPath = "/api/auth/login"
    package static let jsonRefreshPath = "/api/auth/refresh"
    package static let jsonLogoutPath = "/api/auth/logout"

    package var jsonLoginURL: String { self.server.baseURL + Self.jsonLoginPath }
    package var jsonRefreshURL: String { self.server.baseURL + Self.jsonRefreshPath }
    package var jsonLogoutURL: String { self.server.baseURL + Self.jsonLogoutPath }
    package var loginCallCount: Int { self.loginCalls.load(ordering: .relaxed) }
    package var refreshCallCount: Int { self.refreshCalls.load(ordering: .relaxed) }

    func handleJSON(_ request: MockRequest) -> MockResponse {
        let object = JSONText.object(request.body)
        let fields = (object ?? [:]).compactMapValues { $0 as? String }
        let presented = fields["refresh_token"] ?? fields["refreshToken"]
        if request.path == Self.jsonLogoutPath {
            if let presented { self.revoke(presented) }
            return .json(200, #"{"success":true}"#)
        }
        let isLogin = request.path == Self.jsonLoginPath
        if isLogin {
            self.loginCalls.add(1, ordering: .relaxed)
        } else {
            self.refreshCalls.add(1, ordering: .relaxed)
        }
        let (settings, failure) = self.beginTokenCall(request, fields: fields, isJSON: true)
        if let failure { return failure }
        guard request.method == "POST", request.header("content-type")?.hasPrefix("application/json") == true,
            object != nil
        else {
            return .json(400, #"{"statusCode":400,"message":"expected a JSON body"}"#)
        }
        var refreshToken: String?
        if isLogin {
            let username = fields["username"] ?? fields["email"] ?? ""
            guard let password = settings.users[username], fields["password"] == password else {
                return .json(401, #"{"statusCode":401,"message":"invalid username or password"}"#)
            }
            if settings.json.loginIssuesRefreshToken {
                refreshToken = self.issueRefreshToken(prefix: "rt-login-")
            }
        } else {
            if self.isReuse(presented, settings) {
                return .json(401, #"{"statusCode":401,"message":"refresh token reuse detected; session revoked"}"#)
            }
            guard let presented, settings.refreshTokens.contains(presented) else {
                return .json(401, #"{"statusCode":401,"message":"invalid refresh token"}"#)
            }
            refreshToken = self.rotate(presented, settings)
        }
        return self.jsonTokenResponse(settings, refreshToken: refreshToken)
    }

    private func jsonTokenResponse(_ settings: Settings, refreshToken: String?) -> MockResponse {
        let shape = settings.json
        let isCamel = shape.casing == .camel
        var answer: [String: Any] = [:]
        let accessToken = self.issueAccessToken(settings)
        var expiry: (name: String, value: Any)?
        if let lifetime = settings.expiresIn {
            let expiresAt = Date().addingTimeInterval(Double(lifetime))
            switch shape.expiry {
            case .lifetime: expiry = (isCamel ? "expiresIn" : "expires_in", lifetime)
            case .epochSeconds: expiry = (isCamel ? "expiresAt" : "expires_at", Int(expiresAt.timeIntervalSince1970))
            case .rfc3339:
                expiry = (isCamel ? "expiresAt" : "expires_at", expiresAt.ISO8601Format())
            }
        }
        if shape.usesCustomFields {
            var auth: [String: Any] = ["jwt": accessToken]
            if let refreshToken { auth["renew"] = refreshToken }
            if let expiry { auth["validUntil"] = expiry.value }
            answer = ["result": ["auth": auth], "ok": true]
        } else {
            answer[isCamel ? "accessToken" : "access_token"] = accessToken
            if let refreshToken { answer[isCamel ? "refreshToken" : "refresh_token"] = refreshToken }
            if let expiry { answer[expiry.name] = expiry.value }
            answer[isCamel ? "tokenType" : "token_type"] = "Bearer"
            if shape.isEnveloped { answer = ["data": answer, "success": true] }
        }
        return .json(200, JSONText.text(of: answer), headers: [("Cache-Control", "no-store")])
    }
}
