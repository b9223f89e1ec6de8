import BearerCore

/// The fleet's session as the store holds it: one Redis hash, `bearer-proxy:{name}:session`.
///
/// The expiry is wall-clock time (milliseconds since 1970): proxies on other machines share it, and
/// monotonic clocks mean nothing across machines.
package struct StoredSession: Equatable, Sendable {
    /// Goes up by at least one with every token written; a proxy follows the store when it differs.
    package var generation: Int
    package var accessToken: Secret<String>
    package var expiresAtMilliseconds: Int64?
    package var refreshToken: Secret<String>?

    package init(
        generation: Int,
        accessToken: Secret<String>,
        expiresAtMilliseconds: Int64? = nil,
        refreshToken: Secret<String>? = nil
    ) {
        self.generation = generation
        self.accessToken = accessToken
        self.expiresAtMilliseconds = expiresAtMilliseconds
        self.refreshToken = refreshToken
    }

    /// A token endpoint's answer as the store keeps it: the expiry from expires_in, else the JWT's exp;
    /// the refresh token the answer carries (the fleet's next one). Its generation is set when written.
    init(fetched: FetchedToken, wallMilliseconds: Int64) {
        var expiresAt: Int64?
        if let expiresIn = fetched.expiresIn {
            expiresAt = wallMilliseconds + Int64(expiresIn.milliseconds)
        } else if let exp = JWTExpiry.expiry(of: fetched.accessToken.reveal()) {
            expiresAt = Int64(exp * 1000)
        }
        self.init(
            generation: 0,
            accessToken: fetched.accessToken,
            expiresAtMilliseconds: expiresAt,
            refreshToken: fetched.refreshToken
        )
    }

    /// Whether the access token can still be sent at `wallMilliseconds`.
    package func isUsable(at wallMilliseconds: Int64) -> Bool {
        guard let expiresAtMilliseconds else { return true }
        return expiresAtMilliseconds > wallMilliseconds
    }

    /// The same access token as `other`: nothing to adopt, whatever the generations say.
    func isSameToken(as other: StoredSession?) -> Bool {
        self.accessToken == other?.accessToken
    }

    /// The hash's fields, in the order `HMGET` asks for them.
    static let fields = ["generation", "access_token", "expires_at", "refresh_token"]

    /// Reads an `HMGET` reply: nil when the store holds no session (a fresh or restarted Redis).
    static func decode(_ reply: RESPValue) -> Result<StoredSession?, RedisError> {
        guard case .array(let values?) = reply, values.count == Self.fields.count else {
            return .failure(.malformed("HMGET answered something else than \(Self.fields.count) fields"))
        }
        guard !values[0].isNull else { return .success(nil) }
        guard let generation = values[0].integer, generation >= 1,
            let accessToken = values[1].text, !accessToken.isEmpty
        else {
            return .failure(.malformed("the stored session has no valid generation or access token"))
        }
        var expiresAt: Int64?
        if let text = values[2].text, !text.isEmpty {
            guard let value = Int64(text) else { return .failure(.malformed("the stored expiry is not a number")) }
            expiresAt = value
        }
        let refreshToken = values[3].text.flatMap { $0.isEmpty ? nil : Secret($0) }
        return .success(
            StoredSession(
                generation: Int(generation),
                accessToken: Secret(accessToken),
                expiresAtMilliseconds: expiresAt,
                refreshToken: refreshToken
            )
        )
    }
}
