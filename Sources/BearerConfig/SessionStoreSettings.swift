/// The store a fleet of proxies shares its sessions in: `session_store` and `session_store_fallback`,
/// process-wide (each session's name in it is its `session_name`, `SessionSettings.sessionName`).
package struct SessionStoreSettings: Sendable {
    /// Where the sessions live; nil keeps them in the process.
    package var endpoint: RedisEndpoint?
    package var fallback: SessionStoreFallback = .local

    package init() {}
}

/// What a proxy does about a refresh while the store cannot be reached.
package enum SessionStoreFallback: String, Equatable, Sendable {
    /// Refresh in the process, with a warning: traffic keeps flowing, at the risk of a second refresh
    /// elsewhere (which rotation with reuse detection punishes).
    case local
    /// Answer 502 naming the store: never refresh outside the fleet's lock.
    case fail
}
