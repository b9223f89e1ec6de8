extension Configuration {
    /// The keys of the shared session (a fleet of proxies on one Redis).
    static let sessionStoreKeys: [ConfigurationKey] = [
        // Its password is masked: a ${VAR} in it may be the password (`run` keeps them from its child).
        ConfigurationKey("session_store", carriesSecrets: true, show: { $0.sessionStore.endpoint?.description }) {
            value,
            config in
            switch RedisEndpoint.parse(value) {
            case .success(let endpoint):
                config.sessionStore.endpoint = endpoint
                return nil
            case .failure(let error):
                // The value is not repeated: it may hold the store's password.
                return "the URL \(error.reason) (expected redis://[user:password@]host:port[/db] or rediss://…)"
            }
        },
        ConfigurationKey("session_name", scope: .session, show: { $0.sessionStore.name }) { value, config in
            guard Self.isValidSessionName(value) else {
                return "expected 1 to 64 letters, digits, '.', '_' or '-', got '\(value)'"
            }
            config.sessionStore.name = value
            return nil
        },
        ConfigurationKey("session_store_fallback", show: { $0.sessionStore.fallback.rawValue }) { value, config in
            guard let fallback = SessionStoreFallback(rawValue: value) else {
                return "expected local or fail, got '\(value)'"
            }
            config.sessionStore.fallback = fallback
            return nil
        },
    ]

    /// Session names become part of Redis keys (`bearer-proxy:{name}:…`): no spaces, braces or colons.
    static func isValidSessionName(_ name: String) -> Bool {
        (1...64).contains(name.count)
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }
    }
}
