import BearerConfig
import BearerCore
import FoundationEssentials

/// Reads the answers of JSON login and refresh endpoints: `{"accessToken": …, "refreshToken": …,
/// "expiresIn": …}` in camelCase or snake_case, at the top level or inside `{"data": …}`.
///
/// 400, 401 and 403 refuse the credentials (permanent); 429 and 5xx are worth a retry, as for OAuth2.
package enum JSONTokenResponse {
    static let tokenNames = ["access_token", "accessToken", "token"]
    static let refreshTokenNames = ["refresh_token", "refreshToken"]
    /// Seconds from now.
    static let lifetimeNames = ["expires_in", "expiresIn"]
    /// Epoch seconds (or milliseconds) or an RFC 3339 time.
    static let expiryNames = ["expires_at", "expiresAt"]

    package static func interpret(
        _ response: EndpointResponse,
        fields: JSONTokenFields,
        isLogin: Bool,
        now: Double = wallClockSeconds()
    ) -> TokenFetchOutcome {
        TokenEndpointResponse.interpret(
            response,
            now: now,
            endpoint: isLogin ? "the login endpoint" : "the token endpoint",
            permanentStatuses: [400, 401, 403],
            token: { self.parseToken($0, fields: fields, now: now) },
            withoutToken: "without an access token ("
                + (fields.token.map { "nothing at \($0)" }
                    ?? "no \(self.tokenNames.joined(separator: ", ")) at the top level or under data; set token_field")
                + ")",
            rejection: { body, status in
                let (code, description) = self.parseError(body)
                let named = code ?? "http_\(status)"
                return isLogin
                    ? .loginRejected(code: named, description: description)
                    : .rejected(code: named, description: description)
            }
        )
    }

    static func parseToken(_ body: [UInt8], fields: JSONTokenFields, now: Double) -> FetchedToken? {
        guard let json = JSONText.parse(body),
            let accessToken = self.string(at: fields.token, names: self.tokenNames, in: json),
            !accessToken.contains(where: { $0.isWhitespace })
        else { return nil }
        var lifetime: Duration?
        if let path = fields.expires {
            lifetime = path.value(in: json).flatMap { self.lifetime($0, isExpiry: nil, now: now) }
        } else {
            lifetime = self.defaultLifetime(in: json, now: now)
        }
        return FetchedToken(
            accessToken: Secret(accessToken),
            expiresIn: lifetime,
            refreshToken: self.string(at: fields.refreshToken, names: self.refreshTokenNames, in: json).map {
                Secret($0)
            },
            scope: self.string(at: nil, names: ["scope"], in: json).map { oneLine($0) }
        )
    }

    /// The objects searched when no path is set: the top level, then `data`.
    private static func containers(_ json: Any) -> [[String: Any]] {
        guard let top = json as? [String: Any] else { return [] }
        return [top] + ((top["data"] as? [String: Any]).map { [$0] } ?? [])
    }

    private static func string(at path: JSONFieldPath?, names: [String], in json: Any) -> String? {
        if let path {
            guard let text = path.value(in: json) as? String, !text.isEmpty else { return nil }
            return text
        }
        for container in self.containers(json) {
            for name in names {
                if let text = container[name] as? String, !text.isEmpty { return text }
            }
        }
        return nil
    }

    private static func defaultLifetime(in json: Any, now: Double) -> Duration? {
        for container in self.containers(json) {
            for name in self.lifetimeNames + self.expiryNames {
                if let value = container[name] {
                    return self.lifetime(value, isExpiry: self.expiryNames.contains(name), now: now)
                }
            }
        }
        return nil
    }

    /// A lifetime from an `expires…` value. `isExpiry` nil (a configured `expires_field`) guesses by
    /// size: numbers from 10⁹ on are epoch times (from 10¹² on, in milliseconds), smaller ones are
    /// seconds from now. A time already past is no expiry at all (a clock apart, not a dead token).
    static func lifetime(_ value: Any, isExpiry: Bool?, now: Double) -> Duration? {
        var seconds: Double?
        if let number = JSONText.number(value) {
            if isExpiry == false || (isExpiry == nil && number < 1e9) {
                seconds = number
            } else {
                seconds = (number >= 1e12 ? number / 1000 : number) - now
            }
        } else if let text = value as? String, let date = self.rfc3339(text) {
            seconds = date.timeIntervalSince1970 - now
        }
        guard let seconds, seconds > 0, seconds < 1e9 else { return nil }
        return .milliseconds(Int64(seconds * 1000))
    }

    static func rfc3339(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }

    /// `error` (a code), then `error_description` or `message`, at the top level, under `data`, or
    /// inside an `error` object.
    static func parseError(_ body: [UInt8]) -> (code: String?, description: String?) {
        guard let json = JSONText.parse(body) else { return (nil, nil) }
        var code: String?
        var description: String?
        var containers = self.containers(json)
        if let nested = (json as? [String: Any])?["error"] as? [String: Any] { containers.append(nested) }
        for container in containers {
            if code == nil, let text = (container["error"] ?? container["code"]) as? String, !text.isEmpty {
                code = TokenEndpointResponse.errorCode(text)
            }
            if description == nil,
                let text = (container["error_description"] ?? container["message"]) as? String, !text.isEmpty
            {
                description = oneLine(text)
            }
        }
        return (code, description)
    }
}
