import BearerCore
import Glibc

/// What a token source produced: a token, or why not.
package enum TokenFetchOutcome: Sendable {
    case token(FetchedToken)
    case permanent(SessionFailure)
    case transient(reason: String, timedOut: Bool)
    case rateLimited(retryAfter: Duration)
}

extension TokenFetchOutcome {
    /// The outcome, where a DPoP-bound token (token_type DPoP, RFC 9449 §5) comes to a source that
    /// has no key to prove it with: not usable (requests would carry a token without its proof, and
    /// the API would refuse them), so a failure naming the fix. A source that proves keeps it.
    func requiringProof(canProve: Bool) -> TokenFetchOutcome {
        guard case .token(let fetched) = self, fetched.isDPoPBound, !canProve else { return self }
        return .transient(reason: "the token endpoint issued a DPoP-bound token; set dpop = on", timedOut: false)
    }
}

package struct FetchedToken: Sendable {
    package var accessToken: Secret<String>
    /// From `expires_in`.
    package var expiresIn: Duration?
    /// A rotated refresh token, when the endpoint sent one.
    package var refreshToken: Secret<String>?
    /// The granted scope, when the endpoint said (`bearer-proxy login` prints it).
    package var scope: String?
    /// `token_type` `DPoP` (RFC 9449 §5): the token is bound to the session's DPoP key, and every
    /// request carrying it needs a proof.
    package var isDPoPBound: Bool

    package init(
        accessToken: Secret<String>,
        expiresIn: Duration? = nil,
        refreshToken: Secret<String>? = nil,
        scope: String? = nil,
        isDPoPBound: Bool = false
    ) {
        self.accessToken = accessToken
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.scope = scope
        self.isDPoPBound = isDPoPBound
    }
}

/// Reads OAuth2 token endpoint answers (RFC 6749 §5.1 success, §5.2 error).
package enum TokenEndpointResponse {
    /// Interprets a whole HTTP response from the token endpoint.
    package static func interpret(_ response: EndpointResponse, now: Double = wallClockSeconds()) -> TokenFetchOutcome {
        self.interpret(
            response,
            now: now,
            endpoint: "the token endpoint",
            permanentStatuses: [400, 401],
            token: { self.parseTokenJSON($0) },
            withoutToken: "without a usable access_token",
            rejection: { body, status in
                let (code, description) = self.parseError(body) ?? ("http_\(status)", nil)
                return .rejected(code: code, description: description)
            }
        )
    }

    /// The status rules every token-issuing endpoint shares: 2xx carries a token, `permanentStatuses`
    /// refuse the credentials, 429/503 with Retry-After ask to wait, anything else is worth a retry.
    /// `endpoint` names who answered, in the reasons: the token endpoint, or a JSON backend's login.
    static func interpret(
        _ response: EndpointResponse,
        now: Double,
        endpoint: String,
        permanentStatuses: Set<Int>,
        token: ([UInt8]) -> FetchedToken?,
        withoutToken: String,
        rejection: ([UInt8], Int) -> SessionFailure
    ) -> TokenFetchOutcome {
        switch response.status {
        case 200..<300:
            guard let token = token(response.body) else {
                return .transient(
                    reason: "\(endpoint) answered \(response.status) \(withoutToken)",
                    timedOut: false
                )
            }
            return .token(token)
        case let status where permanentStatuses.contains(status):
            return .permanent(rejection(response.body, status))
        case 429, 503:
            if let retryAfter = response.header("retry-after").flatMap({ self.parseRetryAfter($0, now: now) }) {
                return .rateLimited(retryAfter: retryAfter)
            }
            return .transient(reason: "\(endpoint) answered \(response.status)", timedOut: false)
        default:
            return .transient(reason: "\(endpoint) answered \(response.status)", timedOut: false)
        }
    }

    /// `{"access_token": …, "token_type": "Bearer", "expires_in": 3600, "refresh_token": …}`; a
    /// `token_type` of `DPoP` marks a DPoP-bound token, any other than those two is not usable.
    package static func parseTokenJSON(_ body: [UInt8]) -> FetchedToken? {
        guard let object = JSONText.object(body),
            let accessToken = object["access_token"] as? String, !accessToken.isEmpty,
            !accessToken.contains(where: { $0.isWhitespace })
        else { return nil }
        let type = (object["token_type"] as? String)?.lowercased() ?? "bearer"
        guard type == "bearer" || type == "dpop" else { return nil }
        var expiresIn: Duration?
        // Past 10⁹ seconds (about 31 years, the JSON backend's bound too) is no expiry: a Duration in
        // milliseconds could not hold every number a server may write.
        if let seconds = JSONText.number(object["expires_in"]), seconds > 0, seconds < 1e9 {
            expiresIn = .milliseconds(Int64(seconds * 1000))
        }
        var refreshToken: Secret<String>?
        if let rotated = object["refresh_token"] as? String, !rotated.isEmpty { refreshToken = Secret(rotated) }
        return FetchedToken(
            accessToken: Secret(accessToken),
            expiresIn: expiresIn,
            refreshToken: refreshToken,
            scope: (object["scope"] as? String).map { oneLine($0) },
            isDPoPBound: type == "dpop"
        )
    }

    /// `{"error": "invalid_grant", "error_description": "…"}`
    static func parseError(_ body: [UInt8]) -> (String, String?)? {
        guard let object = JSONText.object(body),
            let code = object["error"] as? String, !code.isEmpty
        else { return nil }
        return (self.errorCode(code), (object["error_description"] as? String).map { oneLine($0) })
    }

    /// An endpoint's error code made safe for a log line and a response body: a bounded word.
    package static func errorCode(_ code: String) -> String {
        let safeCode = String(
            code.prefix(64).filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") }
        )
        return safeCode.isEmpty ? "error" : safeCode
    }

    /// Retry-After as delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
    static func parseRetryAfter(_ value: String, now: Double) -> Duration? {
        let trimmed = value.trimmingBlanks()
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        guard let date = self.parseHTTPDate(trimmed) else { return nil }
        return .milliseconds(Int64(max(0, date - now) * 1000))
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7) as seconds since 1970.
    static func parseHTTPDate(_ text: String) -> Double? {
        let days = ["Mon,", "Tue,", "Wed,", "Thu,", "Fri,", "Sat,", "Sun,"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let words = text.split(separator: " ")
        guard words.count == 6, days.contains(String(words[0])), words[5] == "GMT",
            let day = Int(words[1]), let month = months.firstIndex(of: String(words[2])),
            words[3].count == 4, let year = Int(words[3]), year >= 1000
        else { return nil }
        let time = words[4].split(separator: ":", omittingEmptySubsequences: false).compactMap { Int($0) }
        guard time.count == 3, (1...31).contains(day), (0...23).contains(time[0]), (0...59).contains(time[1]),
            (0...60).contains(time[2])
        else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(time[0])
        parts.tm_min = Int32(time[1])
        parts.tm_sec = Int32(time[2])
        return Double(timegm(&parts))
    }
}
