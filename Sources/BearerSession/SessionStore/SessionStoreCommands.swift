import BearerCore

/// The Redis keys and commands of one shared session: `bearer-proxy:{name}:session` (a hash),
/// `bearer-proxy:{name}:lock` and the channel `bearer-proxy:{name}:refreshed`.
///
/// The braces are a Redis Cluster hash tag: every key of one session lands on the same node, which
/// the write script (two keys) needs there.
struct SessionStoreCommands: Sendable {
    let sessionKey: String
    let lockKey: String
    let channel: String
    /// How long the refresh lock lives when its holder dies (refresh_timeout).
    let lockTimeout: Duration

    init(name: String, lockTimeout: Duration) {
        let prefix = "bearer-proxy:{\(name)}:"
        self.sessionKey = prefix + "session"
        self.lockKey = prefix + "lock"
        self.channel = prefix + "refreshed"
        self.lockTimeout = lockTimeout
    }

    /// Takes the lock if nobody holds it: `+OK`, or a null reply when it is held.
    func lock(_ value: String) -> RESPCommand {
        RESPCommand("SET", self.lockKey, value, "NX", "PX", String(max(1, Int(self.lockTimeout.milliseconds))))
    }

    /// How long the lock lives yet, in milliseconds (negative: no lock).
    func lockTimeLeft() -> RESPCommand {
        RESPCommand("PTTL", self.lockKey)
    }

    func read() -> RESPCommand {
        RESPCommand("HMGET", [self.sessionKey] + StoredSession.fields)
    }

    /// Deletes the lock only if it still holds `value`: a holder whose lock expired and was taken by
    /// another proxy must not release that proxy's lock.
    func release(_ value: String) -> RESPCommand {
        RESPCommand("EVAL", Self.releaseScript, "1", self.lockKey, value)
    }

    /// Writes `session` unless another proxy wrote since `base` (the generation this proxy read; an
    /// empty store, after a Redis restart, also takes it), releases the lock if `lockValue` still
    /// holds it, and publishes the new generation — atomically. Answers `{1, generation}` when
    /// written, `{0, stored generation}` when not.
    func write(_ session: StoredSession, base: Int, lockValue: String?) -> RESPCommand {
        RESPCommand(
            "EVAL",
            Self.writeScript,
            "2",
            self.sessionKey,
            self.lockKey,
            String(base),
            String(session.generation),
            session.accessToken.reveal(),
            session.expiresAtMilliseconds.map(String.init) ?? "",
            session.refreshToken?.reveal() ?? "",
            lockValue ?? "",
            self.channel
        )
    }

    static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """

    /// ARGV: base generation, lowest new generation, access token, expiry (ms, or empty), refresh token
    /// (empty keeps the stored one), lock value (or empty), channel.
    static let writeScript = """
        local current = tonumber(redis.call('HGET', KEYS[1], 'generation') or '0')
        if current ~= 0 and current ~= tonumber(ARGV[1]) then return {0, current} end
        local generation = math.max(current + 1, tonumber(ARGV[2]))
        redis.call('HSET', KEYS[1], 'generation', generation, 'access_token', ARGV[3], 'expires_at', ARGV[4])
        if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'refresh_token', ARGV[5]) end
        if ARGV[6] ~= '' and redis.call('GET', KEYS[2]) == ARGV[6] then redis.call('DEL', KEYS[2]) end
        redis.call('PUBLISH', ARGV[7], generation)
        return {1, generation}
        """

    /// Reads the write script's answer: the generation written, or nil with the one found instead.
    static func decodeWrite(_ reply: RESPValue) -> Result<(written: Bool, generation: Int), RedisError> {
        guard case .array(let values?) = reply, values.count == 2, let flag = values[0].integer,
            let generation = values[1].integer
        else { return .failure(.malformed("the write script answered something unexpected")) }
        return .success((flag == 1, Int(generation)))
    }
}
