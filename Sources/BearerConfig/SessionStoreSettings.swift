/// The shared session of a fleet of proxies: `session_store`, `session_name`, `session_store_fallback`.
package struct SessionStoreSettings: Sendable {
    /// Where the session lives; nil keeps it in the process.
    package var endpoint: RedisEndpoint?
    /// Names the session in the store, so several accounts can share one Redis.
    package var name = "default"
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
