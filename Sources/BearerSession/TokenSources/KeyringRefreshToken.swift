import BearerConfig
import BearerCore
import BearerKeyring

/// A session's refresh token as one Secret Service item (the contract's "Where credentials are
/// kept"): label `bearer-proxy: NAME refresh token`, attributes `application = bearer-proxy`,
/// `session = NAME` (the fleet name), `kind = refresh_token`, and `issuer` when known, so that
/// `secret-tool lookup application bearer-proxy session NAME kind refresh_token` finds it.
package struct KeyringRefreshToken: Sendable {
    package let items: SecretServiceItems
    /// The session's fleet name (`session_name`).
    package let session: String
    package let issuer: String?

    package init(items: SecretServiceItems, session: String, issuer: String?) {
        self.items = items
        self.session = session
        self.issuer = issuer
    }

    /// What finds the item: never the issuer, which a later discovery may change.
    var attributes: [(String, String)] {
        [("application", "bearer-proxy"), ("session", self.session), ("kind", "refresh_token")]
    }

    /// The item's secret; nil when there is no item (or it is empty).
    func read() throws(RefreshTokenStore.StoreError) -> Secret<String>? {
        do throws(KeyringError) {
            guard let bytes = try self.items.read(self.attributes) else { return nil }
            let text = String(decoding: bytes.reveal(), as: UTF8.self).trimmingWhitespace()
            return text.isEmpty ? nil : Secret(text)
        } catch {
            throw RefreshTokenStore.StoreError(description: "credential_store = secret-service: \(error)")
        }
    }

    /// Replaces the item with `token`.
    func write(_ token: Secret<String>) throws(RefreshTokenStore.StoreError) {
        do throws(KeyringError) {
            try self.items.write(
                Secret(Array(token.reveal().utf8)),
                label: "bearer-proxy: \(self.session) refresh token",
                attributes: self.attributes,
                extra: self.issuer.map { [("issuer", $0)] } ?? []
            )
        } catch {
            throw RefreshTokenStore.StoreError(
                description: "credential_store = secret-service: cannot store the refresh token: \(error)"
            )
        }
    }

    /// Deletes the item; whether there was one.
    func delete() throws(RefreshTokenStore.StoreError) -> Bool {
        do throws(KeyringError) {
            return try self.items.delete(self.attributes)
        } catch {
            throw RefreshTokenStore.StoreError(description: "credential_store = secret-service: \(error)")
        }
    }

    /// Where the item is, for messages: never its secret.
    package var description: String {
        "the Secret Service item application=bearer-proxy session=\(self.session) kind=refresh_token (on \(self.items.address))"
    }
}
