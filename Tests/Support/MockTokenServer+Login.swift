import BearerCore
import BearerDemo
import COpenSSL
import Foundation

/// What `bearer-proxy login` talks to: an authorization endpoint that redirects at once with a code
/// (RFC 6749 §4.1, the user "logs in" instantly) and checks PKCE when the code is redeemed (RFC 7636),
/// and a device authorization endpoint (RFC 8628) whose approval a test triggers.
extension MockTokenServer {
    package static let authorizePath = "/oauth/authorize"
    package static let devicePath = "/oauth/device"
    static let deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

    package var authorizationURL: String { self.server.baseURL + Self.authorizePath }
    package var deviceAuthorizationURL: String { self.server.baseURL + Self.devicePath }

    /// How the login endpoints behave.
    package struct LoginSettings: Sendable, Equatable {
        /// The authorization endpoint redirects with error=access_denied instead of a code.
        package var deniesAuthorization = false
        /// `interval` of device authorizations, in seconds.
        package var deviceInterval = 1
        /// `expires_in` of device codes, in seconds.
        package var deviceCodeLifetime = 600
        /// Polls (counted from 1 per device code) answered `slow_down`.
        package var slowDownPolls: Set<Int> = []
        /// The scope granted when the request names none.
        package var defaultScope = "read"

        package init() {}
    }

    struct LoginGrants: Sendable {
        struct Code: Sendable {
            var challenge: String
            var redirectURI: String
            var scope: String
        }
        enum DeviceStatus: Sendable { case pending, approved, denied, redeemed }
        struct Device: Sendable {
            var userCode: String
            var status: DeviceStatus
            var expiresAt: Instant
            var polls = 0
            var scope: String
        }
        var codes: [String: Code] = [:]
        var devices: [String: Device] = [:]
        /// The query of every authorization request, for assertions.
        var authorizationRequests: [[String: String]] = []
        /// The `resource` parameters of each authorization and device authorization request.
        var authorizationResources: [[String]] = []
        var deviceAuthorizationResources: [[String]] = []
    }

    /// The `resource` parameters of each authorization request, in order.
    package var authorizationResources: [[String]] { self.loginGrants.withLock { $0.authorizationResources } }

    /// The `resource` parameters of each device authorization request, in order.
    package var deviceAuthorizationResources: [[String]] {
        self.loginGrants.withLock { $0.deviceAuthorizationResources }
    }

    /// The queries the authorization endpoint received.
    package var authorizationRequests: [[String: String]] { self.loginGrants.withLock { $0.authorizationRequests } }

    /// User codes of device authorizations still waiting for the user.
    package var pendingUserCodes: [String] {
        self.loginGrants.withLock { $0.devices.values.filter { $0.status == .pending }.map(\.userCode) }
    }

    /// The user approves (or denies) the device login showing `userCode`.
    package func decideDeviceLogin(userCode: String, approve: Bool) {
        self.loginGrants.withLock { grants in
            for (code, device) in grants.devices where device.userCode == userCode {
                grants.devices[code]?.status = approve ? .approved : .denied
            }
        }
    }

    /// The device code of the login showing `userCode` expires now, whatever its expires_in said (a
    /// server that ends codes early): the next poll is answered `expired_token`.
    package func expireDeviceCode(userCode: String) {
        self.loginGrants.withLock { grants in
            for (code, device) in grants.devices where device.userCode == userCode {
                grants.devices[code]?.expiresAt = Instant.now()
            }
        }
    }

    /// How many times the token endpoint was polled for the device login showing `userCode`.
    package func devicePolls(userCode: String) -> Int {
        self.loginGrants.withLock { $0.devices.values.first { $0.userCode == userCode }?.polls ?? 0 }
    }

    // MARK: Authorization code + PKCE

    func authorize(_ request: MockRequest) -> MockResponse {
        let query = Self.parseForm(String(request.target.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""))
        let settings = self.settings.withLock { $0 }
        let queryText = request.target.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
        let resources = Self.formValues("resource", in: Array(queryText.utf8))
        self.loginGrants.withLock {
            $0.authorizationRequests.append(query)
            $0.authorizationResources.append(resources)
        }
        guard query["response_type"] == "code", let redirectURI = query["redirect_uri"],
            redirectURI.hasPrefix("http://127.0.0.1:"), let state = query["state"],
            let challenge = query["code_challenge"], query["code_challenge_method"] == "S256",
            settings.clientID == nil || query["client_id"] == settings.clientID
        else {
            return .text(400, "mock authorization endpoint: bad authorization request\n")
        }
        var location = redirectURI + "?state=" + Self.queryComponent(state)
        if settings.login.deniesAuthorization {
            location += "&error=access_denied&error_description=" + Self.queryComponent("The user said no")
        } else {
            let code = "code-\(UUID().uuidString.prefix(12))"
            self.loginGrants.withLock {
                $0.codes[code] = LoginGrants.Code(
                    challenge: challenge,
                    redirectURI: redirectURI,
                    scope: query["scope"] ?? settings.login.defaultScope
                )
            }
            location += "&code=" + Self.queryComponent(code)
        }
        return MockResponse(status: 302, headers: [("Location", location)])
    }

    /// RFC 7636 §4.6: the verifier must hash to the challenge the authorization request carried.
    func redeemAuthorizationCode(_ form: [String: String], _ settings: Settings) -> MockResponse {
        let grant = self.loginGrants.withLock { grants in form["code"].flatMap { grants.codes.removeValue(forKey: $0) }
        }
        guard let grant, form["redirect_uri"] == grant.redirectURI else {
            return .json(400, #"{"error":"invalid_grant","error_description":"Unknown or spent authorization code"}"#)
        }
        guard let verifier = form["code_verifier"], Self.s256(verifier) == grant.challenge else {
            return .json(400, #"{"error":"invalid_grant","error_description":"PKCE verification failed"}"#)
        }
        return self.oauth2TokenResponse(settings, refreshToken: self.issueRefreshToken(), scope: grant.scope)
    }

    package static func s256(_ verifier: String) -> String {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        let bytes = Array(verifier.utf8)
        _ = SHA256(bytes, bytes.count, &digest)
        return Data(digest).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    // MARK: Device authorization

    func startDeviceAuthorization(_ request: MockRequest) -> MockResponse {
        let form = Self.parseForm(String(decoding: request.body, as: UTF8.self))
        let settings = self.settings.withLock { $0 }
        if let expectedID = settings.clientID, Self.clientCredentials(request, form).0 != expectedID {
            return .json(401, #"{"error":"invalid_client"}"#)
        }
        if let refusal = self.checkSignedCredentials(request, form, settings) { return refusal }
        self.loginGrants.withLock {
            $0.deviceAuthorizationResources.append(Self.formValues("resource", in: request.body))
        }
        let deviceCode = "dc-\(UUID().uuidString)"
        let digits = String(UInt32.random(in: 0..<100_000_000)).leftPadded(to: 8)
        let userCode = "\(digits.prefix(4))-\(digits.suffix(4))"
        self.loginGrants.withLock {
            $0.devices[deviceCode] = LoginGrants.Device(
                userCode: userCode,
                status: .pending,
                expiresAt: Instant.now() + .seconds(settings.login.deviceCodeLifetime),
                scope: form["scope"] ?? settings.login.defaultScope
            )
        }
        let object: [String: Any] = [
            "device_code": deviceCode, "user_code": userCode,
            "verification_uri": "\(self.server.baseURL)/device",
            "verification_uri_complete": "\(self.server.baseURL)/device?user_code=\(userCode)",
            "expires_in": settings.login.deviceCodeLifetime, "interval": settings.login.deviceInterval,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return .json(200, String(decoding: data, as: UTF8.self))
    }

    /// RFC 8628 §3.5: pending, slow_down, access_denied, expired_token, or the tokens.
    func pollDeviceAuthorization(_ form: [String: String], _ settings: Settings) -> MockResponse {
        let now = Instant.now()
        let device = self.loginGrants.withLock { grants -> LoginGrants.Device? in
            guard let code = form["device_code"], var device = grants.devices[code] else { return nil }
            device.polls += 1
            grants.devices[code] = device
            if device.status == .approved { grants.devices[code]?.status = .redeemed }
            return device
        }
        guard let device else {
            return .json(400, #"{"error":"invalid_grant","error_description":"Unknown device code"}"#)
        }
        if now >= device.expiresAt { return .json(400, #"{"error":"expired_token"}"#) }
        if settings.login.slowDownPolls.contains(device.polls) { return .json(400, #"{"error":"slow_down"}"#) }
        switch device.status {
        case .pending: return .json(400, #"{"error":"authorization_pending"}"#)
        case .denied: return .json(400, #"{"error":"access_denied","error_description":"The user denied the request"}"#)
        case .approved:
            return self.oauth2TokenResponse(settings, refreshToken: self.issueRefreshToken(), scope: device.scope)
        case .redeemed:
            return .json(400, #"{"error":"invalid_grant","error_description":"The device code was used already"}"#)
        }
    }

    static func queryComponent(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? text
    }
}
