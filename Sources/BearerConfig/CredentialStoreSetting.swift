/// `credential_store`: where a session's refresh token is kept (the contract's "Where credentials
/// are kept").
package enum CredentialStoreSetting: String, Equatable, Sendable {
    /// The Secret Service when a session bus answers within a second, else the file.
    case auto
    /// The freedesktop Secret Service over the D-Bus session bus.
    case secretService = "secret-service"
    /// `refresh_token_file` (or the inline `refresh_token`, kept in memory).
    case file
}
