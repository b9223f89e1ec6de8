import BearerConfig
import BearerCore
import BearerKeyring

/// A session's refresh token as one Secret Service item (the contract's "Where credentials are
/// kept"): label `bearer-proxy: NAME refresh token`, attributes `application = bearer-proxy`,
/// `session = NAME` (the fleet name), `kind = refresh_token`, and `issuer` when known, so that
/// `secret-tool lookup application bearer-proxy session NAME kind refresh_token` finds it.
package struct KeyringRefreshToken: Sendable {
    let item: SessionKeyringItem

    package init(items: SecretServiceItems, session: String, issuer: String?) {
        self.item = SessionKeyringItem(
            items: items,
            session: session,
            issuer: issuer,
            kind: "refresh_token",
            what: "refresh token"
        )
    }

    package var items: SecretServiceItems { self.item.items }
    package var session: String { self.item.session }
    package var issuer: String? { self.item.issuer }

    /// The item's secret; nil when there is no item (or it is empty).
    func read() throws(RefreshTokenStore.StoreError) -> Secret<String>? {
        do throws(KeyringError) {
            guard let bytes = try self.item.read() else { return nil }
            let text = String(decoding: bytes.reveal(), as: UTF8.self).trimmingWhitespace()
            return text.isEmpty ? nil : Secret(text)
        } catch {
            throw RefreshTokenStore.StoreError(description: "credential_store = secret-service: \(error)")
        }
    }

    /// Replaces the item with `token`.
    func write(_ token: Secret<String>) throws(RefreshTokenStore.StoreError) {
        do throws(KeyringError) {
            try self.item.write(Secret(Array(token.reveal().utf8)))
        } catch {
            throw RefreshTokenStore.StoreError(
                description: "credential_store = secret-service: cannot store the refresh token: \(error)"
            )
        }
    }

    /// Deletes the item; whether there was one.
    func delete() throws(RefreshTokenStore.StoreError) -> Bool {
        do throws(KeyringError) {
            return try self.item.delete()
        } catch {
            throw RefreshTokenStore.StoreError(description: "credential_store = secret-service: \(error)")
        }
    }

    /// Where the item is, for messages: never its secret.
    package var description: String { self.item.description }
}
