import BearerCore
import BearerHTTP

/// Where the session store is and how to log in to it: `session_store`.
///
/// `redis://[user:password@]host[:port][/db]` or `rediss://…` (TLS). It prints with its password
/// shown as `<redacted>`, so `/status`, `--check` and log lines can name the store safely.
package struct RedisEndpoint: Equatable, Sendable, CustomStringConvertible {
    package var usesTLS: Bool
    /// Lower-cased host, without brackets for IPv6.
    package var host: String
    package var port: Int
    /// An ACL user (Redis 6+); nil logs in as `default` with `AUTH password`.
    package var username: String?
    package var password: Secret<String>?
    package var database: Int

    package static let defaultPort = 6379

    package init(
        usesTLS: Bool = false,
        host: String,
        port: Int = RedisEndpoint.defaultPort,
        username: String? = nil,
        password: Secret<String>? = nil,
        database: Int = 0
    ) {
        self.usesTLS = usesTLS
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
    }

    /// `host:port`, bracketed when IPv6: what an operator looks for in a log line.
    package var address: String {
        "\(self.host.contains(":") ? "[\(self.host)]" : self.host):\(self.port)"
    }

    package var description: String {
        var userInfo = ""
        if let username = self.username {
            userInfo = PercentEncoding.encode(username, keeping: PercentEncoding.isUserAllowed)
            userInfo += self.password == nil ? "@" : ":<redacted>@"
        } else if self.password != nil {
            userInfo = ":<redacted>@"
        }
        let database = self.database == 0 ? "" : "/\(self.database)"
        return "\(self.usesTLS ? "rediss" : "redis")://\(userInfo)\(self.address)\(database)"
    }

    /// Parses `session_store`; the error says what is wrong without repeating the value (it may hold
    /// a password).
    package static func parse(_ text: String) -> Result<RedisEndpoint, URLParseError> {
        let usesTLS: Bool
        let rest: Substring
        if text.lowercased().hasPrefix("redis://") {
            usesTLS = false
            rest = text.dropFirst(8)
        } else if text.lowercased().hasPrefix("rediss://") {
            usesTLS = true
            rest = text.dropFirst(9)
        } else {
            return .failure(URLParseError("must start with redis:// or rediss://"))
        }
        guard !rest.contains(where: { $0 == "?" || $0 == "#" }) else {
            return .failure(URLParseError("must not have a query or fragment"))
        }
        let pathStart = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<pathStart]
        var username: String?
        var password: Secret<String>?
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            let colon = userInfo.firstIndex(of: ":")
            let user = userInfo[..<(colon ?? userInfo.endIndex)]
            guard let decodedUser = PercentEncoding.decode(user) else {
                return .failure(URLParseError("has an invalid percent-encoding in its user name"))
            }
            if let colon {
                guard let decoded = PercentEncoding.decode(userInfo[userInfo.index(after: colon)...]),
                    !decoded.isEmpty
                else {
                    return .failure(URLParseError("has an empty or badly percent-encoded password"))
                }
                password = Secret(decoded)
            }
            if !decodedUser.isEmpty { username = decodedUser }
            if username != nil && password == nil {
                return .failure(URLParseError("names a user but no password (write user:password@)"))
            }
        }
        guard let (host, port) = splitHostPort(authority) else {
            return .failure(URLParseError("has an invalid host or port"))
        }
        var database = 0
        let path = rest[pathStart...].dropFirst()
        if !path.isEmpty {
            guard let number = Int(path), (0...1_000_000).contains(number) else {
                return .failure(URLParseError("has an invalid database number (expected /0, /1, …)"))
            }
            database = number
        }
        return .success(
            RedisEndpoint(
                usesTLS: usesTLS,
                host: host,
                port: port ?? Self.defaultPort,
                username: username,
                password: password,
                database: database
            )
        )
    }
}
