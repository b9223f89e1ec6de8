import BearerCore
import BearerHTTP
import BearerSession
import FoundationEssentials
import Glibc

/// The OAuth2 device authorization grant (RFC 8628): the user enters a short code on another
/// device while this one polls the token endpoint, for machines without a browser.
struct DeviceLogin {
    let context: LoginContext
    let deviceAuthorizationURL: HTTPURL
    let tokenURL: HTTPURL

    /// RFC 8628 §3.4: the grant type of the polls.
    static let grantType = "urn:ietf:params:oauth:grant-type:device_code"

    /// What the device authorization endpoint answered (§3.2). The device code is a credential: it
    /// is never printed.
    struct Authorization {
        var deviceCode: Secret<String>
        var userCode: String
        var verificationURI: String
        var verificationURIComplete: String?
        var expiresIn: Duration
        var interval: Duration?
    }

    func run() -> Result<FetchedToken, LoginError> {
        let builder = TokenRequestBuilder(
            settings: self.context.settings,
            credentials: self.context.credentials,
            url: self.tokenURL
        )
        var fields: [(String, String)] = []
        if let scope = self.context.settings.scope { fields.append(("scope", scope)) }
        if let audience = self.context.settings.audience { fields.append(("audience", audience)) }
        fields += builder.resourceFields
        let authorization: Authorization
        switch self.context.send(
            builder.formPost(fields, to: self.deviceAuthorizationURL),
            endpoint: "device authorization endpoint"
        ).flatMap(Self.parseAuthorization) {
        case .success(let answer): authorization = answer
        case .failure(let error): return .failure(error)
        }
        self.context.console.say(
            "To log in, open \(authorization.verificationURI) on any device and enter the code\n\n    \(authorization.userCode)\n"
                + (authorization.verificationURIComplete.map { "\n(or open \($0) directly)\n" } ?? "")
        )
        self.context.console.say("Waiting for the login to be approved …")
        // Built for each poll: a private_key_jwt client assertion is good for one request (its jti).
        let poll = {
            builder.tokenRequest([("grant_type", Self.grantType), ("device_code", authorization.deviceCode.reveal())])
        }
        var poller = DeviceAuthorizationPoller(
            interval: authorization.interval,
            expiresIn: authorization.expiresIn,
            loginDeadline: self.context.deadline,
            loginTimeout: self.context.settings.login.timeout,
            now: Instant.now()
        )
        var action = poller.started(now: Instant.now())
        var token: FetchedToken?
        while true {
            switch action {
            case .succeed:
                return token.map { .success($0) } ?? .failure(.unreachable("the token endpoint sent no token"))
            case .fail(let error):
                return .failure(error)
            case .poll(let delay):
                pause(delay)
                let answer: DeviceAuthorizationPoller.Answer
                (answer, token) = self.answer(to: poll())
                action = poller.answered(answer, now: Instant.now())
            }
        }
    }

    /// One poll of the token endpoint, read as RFC 8628 §3.5 says.
    private func answer(to poll: EndpointRequest) -> (DeviceAuthorizationPoller.Answer, FetchedToken?) {
        let response: EndpointResponse
        switch self.context.send(poll, endpoint: "token endpoint") {
        case .success(let answer): response = answer
        case .failure(let error): return (.unavailable(reason: error.description), nil)
        }
        switch TokenEndpointResponse.interpret(response) {
        case .token(let token):
            return (.approved, token)
        case .permanent(let failure):
            guard case .rejected(let code, let description, _) = failure else { return (.refused(failure), nil) }
            switch code {
            case "authorization_pending": return (.pending, nil)
            case "slow_down": return (.slowDown, nil)
            case "access_denied": return (.denied(description: description), nil)
            case "expired_token": return (.expired(description: description), nil)
            default: return (.refused(failure), nil)
            }
        case .transient(let reason, _):
            return (.unavailable(reason: reason), nil)
        case .rateLimited:
            return (.slowDown, nil)
        }
    }

    static func parseAuthorization(_ response: EndpointResponse) -> Result<Authorization, LoginError> {
        guard (200..<300).contains(response.status) else {
            if case .permanent(let failure) = TokenEndpointResponse.interpret(response) {
                return .failure(.refused(failure))
            }
            return .failure(.unreachable("the device authorization endpoint answered \(response.status)"))
        }
        guard let object = JSONText.object(response.body),
            let deviceCode = object["device_code"] as? String,
            let userCode = object["user_code"] as? String,
            // Some providers (Google) say verification_url.
            let verificationURI = (object["verification_uri"] ?? object["verification_url"]) as? String
        else {
            return .failure(
                .unreachable(
                    "the device authorization endpoint answered without device_code, user_code and verification_uri"
                )
            )
        }
        let expiresIn = JSONText.number(object["expires_in"]) ?? 600
        return .success(
            Authorization(
                deviceCode: Secret(deviceCode),
                userCode: oneLine(userCode),
                verificationURI: oneLine(verificationURI),
                verificationURIComplete: (object["verification_uri_complete"] as? String).map { oneLine($0) },
                expiresIn: .milliseconds(Int64(max(expiresIn, 1) * 1000)),
                interval: JSONText.number(object["interval"]).map {
                    .milliseconds(Int64(max($0, 0) * 1000))
                }
            )
        )
    }
}

/// Sleeps the calling thread (the command line's, never an event loop's) for `duration`.
func pause(_ duration: Duration) {
    var request = timespec(
        tv_sec: Int(duration.nanoseconds / 1_000_000_000),
        tv_nsec: Int(duration.nanoseconds % 1_000_000_000)
    )
    var remaining = timespec()
    // Interrupted by a signal, it sleeps on for what was left.
    _ = try? SystemCall.blocking("nanosleep") {
        let result = nanosleep(&request, &remaining)
        request = remaining
        return result
    }
}
