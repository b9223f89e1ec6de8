import BearerConfig
import BearerCore
import BearerKeyring

/// A registered client (RFC 7591) as a Secret Service item, under `credential_store =
/// secret-service` (the contract's "Where credentials are kept"): label `bearer-proxy: NAME client`,
/// attributes `application = bearer-proxy`, `session = NAME`, `kind = client`, and `issuer` when
/// known; its secret is `RegisteredClient.json`. Beside the refresh token's item, so that nothing of
/// the session is left in a plain file.
package struct KeyringRegisteredClient: Sendable {
    let item: SessionKeyringItem

    package init(items: SecretServiceItems, session: String, issuer: String?) {
        self.item = SessionKeyringItem(items: items, session: session, issuer: issuer, kind: "client", what: "client")
    }

    /// The item of `session` in `items` (the keyring its refresh token is kept in; nil: the file store).
    package init?(_ items: SecretServiceItems?, of session: SessionSettings) {
        guard let items else { return nil }
        self.init(items: items, session: session.sessionName, issuer: session.issuer?.text)
    }

    /// Fills `session`'s client_id from the item, for a session without one that discovery gave a
    /// registration endpoint (discovery itself reads only the file beside refresh_token_file).
    package func fill(_ session: inout SessionSettings) {
        guard session.clientID == nil, let endpoint = session.registrationURL,
            let registered = self.stored(for: endpoint.description)
        else { return }
        session.clientID = registered.clientID
    }

    /// The client kept for `registrationEndpoint`; nil when there is none, it was registered
    /// elsewhere, or the keyring cannot be read (then login registers again, and storing it says why).
    package func stored(for registrationEndpoint: String) -> RegisteredClient? {
        guard let secret = try? self.item.read() else { return nil }
        return RegisteredClient(json: secret.reveal(), for: registrationEndpoint)
    }

    /// Replaces the item with `client`.
    package func store(_ client: RegisteredClient) throws(RefreshTokenStore.StoreError) {
        do throws(KeyringError) {
            try self.item.write(Secret(client.json))
        } catch {
            throw RefreshTokenStore.StoreError(
                description: "credential_store = secret-service: cannot store the registered client: \(error)"
            )
        }
    }

    /// Deletes the item (logout); whether there was one.
    package func delete() throws(RefreshTokenStore.StoreError) -> Bool {
        do throws(KeyringError) {
            return try self.item.delete()
        } catch {
            throw RefreshTokenStore.StoreError(description: "credential_store = secret-service: \(error)")
        }
    }

    /// Where the item is, for messages.
    package var description: String { self.item.description }
}
