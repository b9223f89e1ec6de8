extension ConfigurationKey {
    // The keys of the shared session (a fleet of proxies on one Redis): the store is the process's,
    // the name each session's.

    /// Its password is masked: a ${VAR} in it may be the password (`run` keeps them from its child).
    package static let sessionStore = ConfigurationKey(
        "session_store",
        of: ProcessSettings.self,
        carriesSecrets: true,
        show: { $0.sessionStore.endpoint?.description }
    ) { value, process in
        switch RedisEndpoint.parse(value) {
        case .success(let endpoint):
            process.sessionStore.endpoint = endpoint
            return nil
        case .failure(let error):
            // The value is not repeated: it may hold the store's password.
            return "the URL \(error.reason) (expected redis://[user:password@]host:port[/db] or rediss://…)"
        }
    }

    package static let sessionName = ConfigurationKey(
        "session_name",
        of: SessionSettings.self,
        show: { $0.sessionName }
    ) {
        value,
        session in
        guard Self.isValidSessionName(value) else {
            return "expected 1 to 64 letters, digits, '.', '_' or '-', got '\(value)'"
        }
        session.sessionName = value
        return nil
    }

    package static let sessionStoreFallback = choiceKey(
        "session_store_fallback",
        \ProcessSettings.sessionStore.fallback,
        expected: "local or fail"
    )

    /// Session names become part of Redis keys (`bearer-proxy:{name}:…`): no spaces, braces or colons.
    static func isValidSessionName(_ name: String) -> Bool {
        (1...64).contains(name.count)
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }
    }
}
