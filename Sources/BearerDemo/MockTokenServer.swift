import BearerCore
import BearerIO
import FoundationEssentials
import Synchronization

/// A mock OAuth2 token endpoint (RFC 6749): refresh_token, client_credentials and password grants,
/// client_secret_basic and client_secret_post, rotation of refresh tokens, and failures on demand.
/// It also plays an app backend's JSON login, refresh and logout endpoints (`MockTokenServer+JSON`).
package final class MockTokenServer: Sendable {
    package let server: MockHTTPServer
    package let authority: MockTokenAuthority
    package let settings: Locked<Settings>
    private let recorded = Locked<[TokenCall]>([])
    package let calls = Atomic<Int>(0)
    private let answered = Atomic<Int>(0)
    private let callTimes = Locked<[Instant]>([])
    private let revoked = Locked<[String]>([])
    private let issuedRefreshTokens = Locked<[String]>([])
    /// Refresh tokens already exchanged for a rotated one.
    private let spentRefreshTokens = Locked<Set<String>>([])
    /// How often a spent refresh token came back (each time the whole family was revoked).
    package let reuseDetections = Atomic<Int>(0)
    /// Calls to the JSON login endpoint, and to the JSON refresh endpoint.
    package let loginCalls = Atomic<Int>(0)
    package let refreshCalls = Atomic<Int>(0)
    /// What a test adds to the endpoint (BearerTestSupport: the login endpoints, the checks of signed
    /// credentials); nil for the demo.
    package let additions: (any MockTokenServerAdditions)?

    package struct Settings: Sendable {
        /// `expires_in` of issued tokens; nil leaves it out.
        package var expiresIn: Int?
        /// Refresh tokens accepted for the refresh_token grant.
        package var refreshTokens: Set<String> = []
        /// Issue a new refresh token with each access token (and stop accepting the spent one).
        package var rotatesRefreshTokens = false
        /// With rotation: a spent refresh token presented again revokes the whole token family (every
        /// refresh token, and every access token issued so far), as identity providers with reuse
        /// detection do (OAuth 2.0 Security BCP, refresh token rotation).
        package var detectsRefreshTokenReuse = false
        /// Client credentials accepted; nil accepts any.
        package var clientID: String?
        package var clientSecret: String?
        package var failure: Failure = .none
        /// Delay before answering (simulates a slow endpoint).
        package var delay: Duration = .zero
        /// Issue JWT-shaped tokens with this many seconds until `exp`.
        package var jwtLifetime: Int?
        /// How the JSON endpoints shape their answers.
        package var json = JSONShape()
        /// Username → password accepted by the JSON login endpoint.
        package var users: [String: String] = [:]
        /// DPoP (RFC 9449): token requests must carry a valid proof; tokens are issued as
        /// token_type DPoP, bound to the proof's key.
        package var dpop: (any MockDPoPCheck)?
        /// The settings of the `additions`, by their type (BearerTestSupport's `login` and
        /// `assertions`), which this module does not know.
        package var additionSettings = MockAdditionSettings()

        package init() {}

        /// A refresh_token grant for one client, starting from `seed`, with tokens valid for an hour;
        /// with `rotation`, refresh tokens rotate and a reused one revokes the family (a fleet's
        /// worst case: every extra refresh would end the session).
        package static func refreshTokenGrant(
            seed: String,
            clientID: String,
            clientSecret: String,
            rotation: Bool = true
        ) -> Settings {
            var settings = Settings()
            settings.clientID = clientID
            settings.clientSecret = clientSecret
            settings.refreshTokens = [seed]
            settings.rotatesRefreshTokens = rotation
            settings.detectsRefreshTokenReuse = rotation
            settings.expiresIn = 3600
            return settings
        }
    }

    package enum Failure: Sendable, Equatable {
        case none
        case invalidGrant
        case serverError
        case rateLimited(retryAfterSeconds: Int)
        case hang
    }

    /// What a call to the endpoint carried, for assertions.
    package struct TokenCall: Sendable {
        /// The form fields, or the top-level string fields of a JSON body.
        package var form: [String: String]
        package var authorization: String?
        package var path: String = "/oauth/token"
        package var contentType: String?
        /// Every `resource` parameter, in order (RFC 8707 allows several).
        package var resources: [String] = []

        /// The refresh token it spent, in either casing.
        package var presentedRefreshToken: String? { self.form["refresh_token"] ?? self.form["refreshToken"] }
    }

    /// `additions`: what a test adds (BearerTestSupport's initializer without this argument adds the
    /// tests' endpoints); nil, the endpoint alone.
    package init(
        group: EventLoopGroup,
        authority: MockTokenAuthority = MockTokenAuthority(),
        settings: Settings = Settings(),
        tls: TLSContext? = nil,
        network: any StreamNetwork = SocketNetwork(),
        additions: (any MockTokenServerAdditions)?
    ) {
        self.authority = authority
        self.settings = Locked(settings)
        self.additions = additions
        let box = Box()
        self.server = MockHTTPServer(group: group, tls: tls, network: network) { request in box.server!.handle(request)
        }
        box.server = self
    }

    private final class Box: @unchecked Sendable {
        weak var server: MockTokenServer?
    }

    @discardableResult
    package func start(
        on address: SocketAddress = SocketAddress(ipAddress: "127.0.0.1", port: 0)!
    ) throws(IOError) -> SocketAddress {
        try self.server.start(on: address)
    }
    package func stop() { self.server.stop() }
    package var url: String { "\(self.server.baseURL)/oauth/token" }
    package var recordedCalls: [TokenCall] { self.recorded.withLock { $0 } }
    package var callCount: Int { self.calls.load(ordering: .relaxed) }
    /// Token calls whose answer is decided (the token it carries issued, though a delayed answer may
    /// not be sent yet): a test that revokes "everything issued so far" waits for this, not for
    /// `callCount`, which counts arrivals.
    package var answeredCallCount: Int { self.answered.load(ordering: .relaxed) }

    package func update(_ change: (inout Settings) -> Void) {
        self.settings.withLock { change(&$0) }
    }

    /// When each call arrived (monotonic clock).
    package var callInstants: [Instant] { self.callTimes.withLock { $0 } }

    /// Every refresh token this server handed out (rotations, logins, authorization codes).
    package var issuedRefreshTokenList: [String] { self.issuedRefreshTokens.withLock { $0 } }

    /// A new refresh token, accepted from now on.
    package func issueRefreshToken(prefix: String = "rt-") -> String {
        let token = "\(prefix)\(UUID().uuidString.prefix(8))"
        self.issuedRefreshTokens.withLock { $0.append(token) }
        self.update { $0.refreshTokens.insert(token) }
        return token
    }

    /// Refresh tokens revoked through `/oauth/revoke` (RFC 7009) or the JSON logout endpoint.
    package var revokedTokens: [String] { self.revoked.withLock { $0 } }
    package var revocationURL: String { "\(self.server.baseURL)/oauth/revoke" }

    func handle(_ request: MockRequest) -> MockResponse {
        switch request.path {
        case "/oauth/revoke":
            let form = Self.parseForm(String(decoding: request.body, as: UTF8.self))
            if let token = form["token"] { self.revoke(token) }
            return MockResponse(status: 200)
        case Self.jsonLogoutPath:
            return self.handleJSON(request)
        case Self.jsonLoginPath, Self.jsonRefreshPath:
            return self.finishTokenCall(self.handleJSON(request))
        default:
            if let answer = self.additions?.answer(request, server: self) { return answer }
            return self.finishTokenCall(self.handleForm(request))
        }
    }

    /// What every token call's decided answer gets: counted as answered, and sent after the
    /// configured `delay` (a slow endpoint).
    private func finishTokenCall(_ response: MockResponse) -> MockResponse {
        self.answered.add(1, ordering: .relaxed)
        var response = response
        response.delay = self.settings.withLock { $0.delay }
        return response
    }

    /// Makes a refresh token unusable and remembers it was revoked.
    func revoke(_ token: String) {
        self.revoked.withLock { $0.append(token) }
        self.settings.withLock { _ = $0.refreshTokens.remove(token) }
    }

    /// What every token-issuing call shares: counting and recording it, and the configured failure
    /// (answered in the endpoint's own dialect). Nil: go on and answer.
    func beginTokenCall(_ request: MockRequest, fields: [String: String], isJSON: Bool) -> (Settings, MockResponse?) {
        self.calls.add(1, ordering: .relaxed)
        self.callTimes.withLock { $0.append(Instant.now()) }
        self.recorded.withLock {
            $0.append(
                TokenCall(
                    form: fields,
                    authorization: request.header("authorization"),
                    path: request.path,
                    contentType: request.header("content-type"),
                    resources: isJSON ? [] : Self.formValues("resource", in: request.body)
                )
            )
        }
        let settings = self.settings.withLock { $0 }
        switch settings.failure {
        case .none:
            return (settings, nil)
        case .invalidGrant:
            return (
                settings,
                isJSON
                    ? .json(401, #"{"statusCode":401,"message":"invalid refresh token"}"#)
                    : .json(
                        400,
                        #"{"error":"invalid_grant","error_description":"The refresh token is expired or revoked"}"#
                    )
            )
        case .serverError:
            return (settings, .json(500, isJSON ? #"{"message":"internal error"}"# : #"{"error":"server_error"}"#))
        case .rateLimited(let seconds):
            return (settings, .json(429, #"{"error":"slow_down"}"#, headers: [("Retry-After", "\(seconds)")]))
        case .hang:
            return (settings, MockResponse(status: 200, body: .none))
        }
    }

    /// A new access token (JWT-shaped when asked), valid for the configured lifetime.
    func issueAccessToken(_ settings: Settings) -> String {
        let token = self.authority.issue(lifetime: (settings.expiresIn ?? settings.jwtLifetime).map { .seconds($0) })
        if let lifetime = settings.jwtLifetime { return Self.jwt(subject: token, expiresIn: lifetime) }
        return token
    }

    /// Replaces `presented` by a new refresh token when the server rotates them; returns the new one.
    func rotate(_ presented: String, _ settings: Settings) -> String? {
        guard settings.rotatesRefreshTokens else { return nil }
        self.update { _ = $0.refreshTokens.remove(presented) }
        self.spentRefreshTokens.withLock { _ = $0.insert(presented) }
        return self.issueRefreshToken()
    }

    /// Whether `presented` was spent before, under reuse detection; if so the family is revoked now.
    func isReuse(_ presented: String?, _ settings: Settings) -> Bool {
        guard settings.detectsRefreshTokenReuse, let presented,
            self.spentRefreshTokens.withLock({ $0.contains(presented) })
        else { return false }
        self.reuseDetections.add(1, ordering: .relaxed)
        self.update { $0.refreshTokens.removeAll() }
        self.authority.revokeAll()
        return true
    }

    private func handleForm(_ request: MockRequest) -> MockResponse {
        let form = Self.parseForm(String(decoding: request.body, as: UTF8.self))
        let (settings, failure) = self.beginTokenCall(request, fields: form, isJSON: false)
        if let failure { return failure }
        guard request.method == "POST",
            request.header("content-type")?.hasPrefix("application/x-www-form-urlencoded") == true
        else {
            return .json(400, #"{"error":"invalid_request","error_description":"expected a form POST"}"#)
        }
        if let refusal = self.additions?.refusal(of: request, form: form, settings: settings, server: self) {
            return refusal
        }
        var thumbprint: String?
        if let rules = settings.dpop {
            let scheme = self.server.baseURL.hasPrefix("https") ? "https" : "http"
            let targetURI = "\(scheme)://\(request.header("host") ?? "")\(request.path)"
            switch rules.check(
                request.header("dpop"),
                method: request.method,
                targetURI: targetURI,
                accessToken: nil,
                boundTo: nil
            ) {
            case .accepted(let proofThumbprint):
                thumbprint = proofThumbprint
            case .needsNonce(let nonce):
                return .json(
                    400,
                    #"{"error":"use_dpop_nonce","error_description":"Authorization server requires nonce in DPoP proof"}"#,
                    headers: [("DPoP-Nonce", nonce)]
                )
            case .refused(let reason):
                return .json(400, #"{"error":"invalid_dpop_proof","error_description":"\#(reason)"}"#)
            }
        }
        if let expectedID = settings.clientID {
            let (id, secret) = Self.clientCredentials(request, form)
            guard id == expectedID, settings.clientSecret == nil || secret == settings.clientSecret else {
                return .json(401, #"{"error":"invalid_client","error_description":"Client authentication failed"}"#)
            }
        }
        var refreshToken: String?
        switch form["grant_type"] {
        case "refresh_token":
            if self.isReuse(form["refresh_token"], settings) {
                return .json(
                    400,
                    #"{"error":"invalid_grant","error_description":"Refresh token reuse detected; the session is revoked"}"#
                )
            }
            guard let presented = form["refresh_token"], settings.refreshTokens.contains(presented) else {
                return .json(400, #"{"error":"invalid_grant","error_description":"Unknown refresh token"}"#)
            }
            refreshToken = self.rotate(presented, settings)
        case "client_credentials", "password":
            break
        default:
            if let grant = form["grant_type"],
                let answer = self.additions?.answer(
                    grant: grant,
                    form: form,
                    settings: settings,
                    thumbprint: thumbprint,
                    server: self
                )
            {
                return answer
            }
            return .json(400, #"{"error":"unsupported_grant_type"}"#)
        }
        return self.oauth2TokenResponse(settings, refreshToken: refreshToken, boundTo: thumbprint)
    }

    /// An RFC 6749 §5.1 answer with a new access token.
    /// `boundTo`: the thumbprint of a DPoP key; the token is then bound to it and of type DPoP.
    package func oauth2TokenResponse(
        _ settings: Settings,
        refreshToken: String?,
        scope: String? = nil,
        boundTo thumbprint: String? = nil
    ) -> MockResponse {
        let accessToken = self.issueAccessToken(settings)
        var object: [String: Any] = ["access_token": accessToken, "token_type": "Bearer"]
        if let thumbprint {
            self.authority.bind(accessToken, to: thumbprint)
            object["token_type"] = "DPoP"
        }
        if let expiresIn = settings.expiresIn { object["expires_in"] = expiresIn }
        if let refreshToken { object["refresh_token"] = refreshToken }
        if let scope { object["scope"] = scope }
        return .json(200, JSONText.text(of: object), headers: [("Cache-Control", "no-store")])
    }

    package static func clientCredentials(_ request: MockRequest, _ form: [String: String]) -> (String?, String?) {
        if let header = request.header("authorization"), header.hasPrefix("Basic "),
            let decoded = Data(base64Encoded: String(header.dropFirst(6))).map({ String(decoding: $0, as: UTF8.self) }),
            let colon = decoded.firstIndex(of: ":")
        {
            let id = PercentEncoding.decode(decoded[..<colon])
            let secret = PercentEncoding.decode(decoded[decoded.index(after: colon)...])
            return (id, secret)
        }
        return (form["client_id"], form["client_secret"])
    }

    /// Every value of a form field that may repeat (`resource`).
    package static func formValues(_ name: String, in body: [UInt8]) -> [String] {
        String(decoding: body, as: UTF8.self).split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts[0] == name else { return nil }
            return parts.count > 1 ? PercentEncoding.decode(parts[1].replacing("+", with: " ")) : ""
        }
    }

    package static func parseForm(_ body: String) -> [String: String] {
        var form: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            let decode = { (text: String) in
                PercentEncoding.decode(text.replacing("+", with: " ")) ?? text
            }
            form[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return form
    }

    /// An unsigned JWT whose payload carries `sub` (the authority's token) and `exp`.
    package static func jwt(subject: String, expiresIn: Int) -> String {
        func encode(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_")
                .replacing("=", with: "")
        }
        let exp = Int(Date().timeIntervalSince1970) + expiresIn
        return encode(#"{"alg":"none","typ":"JWT"}"#) + "." + encode(#"{"sub":"\#(subject)","exp":\#(exp)}"#) + ".sig"
    }
}
