import BearerCore
import BearerKeyring

/// One of a session's Secret Service items (the contract's "Where credentials are kept"): label
/// `bearer-proxy: NAME WHAT`, attributes `application = bearer-proxy`, `session = NAME` (the fleet
/// name), `kind = KIND`, and `issuer` when known, so that `secret-tool lookup application
/// bearer-proxy session NAME kind KIND` finds it.
package struct SessionKeyringItem: Sendable {
    package let items: SecretServiceItems
    /// The session's fleet name (`session_name`).
    package let session: String
    package let issuer: String?
    /// `refresh_token` or `client`.
    let kind: String
    /// What the label calls it: `refresh token`, `client`.
    let what: String

    /// What finds the item: never the issuer, which a later discovery may change.
    var attributes: [(String, String)] {
        [("application", "bearer-proxy"), ("session", self.session), ("kind", self.kind)]
    }

    func read() throws(KeyringError) -> Secret<[UInt8]>? {
        try self.items.read(self.attributes)
    }

    /// Replaces the item with `secret`.
    func write(_ secret: Secret<[UInt8]>) throws(KeyringError) {
        try self.items.write(
            secret,
            label: "bearer-proxy: \(self.session) \(self.what)",
            attributes: self.attributes,
            extra: self.issuer.map { [("issuer", $0)] } ?? []
        )
    }

    /// Deletes the item; whether there was one.
    func delete() throws(KeyringError) -> Bool {
        try self.items.delete(self.attributes)
    }

    /// Where the item is, for messages: never its secret.
    package var description: String {
        "the Secret Service item application=bearer-proxy session=\(self.session) kind=\(self.kind) (on \(self.items.address))"
    }
}
