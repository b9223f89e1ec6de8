/// Where a JSON backend's answer holds the tokens and their expiry (`token_field`,
/// `refresh_token_field`, `expires_field`); a nil path means "search the usual names".
package struct JSONTokenFields: Equatable, Sendable {
    package var token: JSONFieldPath?
    package var refreshToken: JSONFieldPath?
    package var expires: JSONFieldPath?

    package init(token: JSONFieldPath? = nil, refreshToken: JSONFieldPath? = nil, expires: JSONFieldPath? = nil) {
        self.token = token
        self.refreshToken = refreshToken
        self.expires = expires
    }
}
