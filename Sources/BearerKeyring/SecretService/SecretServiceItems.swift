import BearerCore

/// Items of the Secret Service found by their attributes: read, written (replacing), deleted, each
/// over a connection of its own that lives for that one operation.
///
/// A connection per operation: these happen at start, at a refresh, at login and logout, rarely
/// enough that a few milliseconds of connecting cost nothing, and no connection is left to go stale
/// when the bus restarts (a desktop session ending and another starting). Blocking and bounded by
/// `timeout` per call: call off the event loops.
package struct SecretServiceItems: Sendable {
    package let address: DBusAddress
    package let timeout: Duration

    package init(address: DBusAddress, timeout: Duration) {
        self.address = address
        self.timeout = timeout
    }

    /// The secret of the first item whose attributes include `attributes`; nil when there is none.
    /// A locked item is unlocked first, or `locked` when that needs a prompt.
    package func read(_ attributes: [(String, String)]) throws(KeyringError) -> Secret<[UInt8]>? {
        let client = try SecretServiceClient(address: self.address, timeout: self.timeout)
        let found = try client.searchItems(attributes)
        if let item = found.unlocked.first { return try client.secret(of: item) }
        guard let item = found.locked.first else { return nil }
        try client.unlock([item])
        return try client.secret(of: item)
    }

    /// Keeps `secret` in the one item matching `attributes`: created in the default collection, with
    /// `extra` attributes beside them (the issuer), replacing every other item that matches.
    package func write(
        _ secret: Secret<[UInt8]>,
        label: String,
        attributes: [(String, String)],
        extra: [(String, String)] = []
    ) throws(KeyringError) {
        let client = try SecretServiceClient(address: self.address, timeout: self.timeout)
        let collection = try client.defaultCollection()
        let item = try client.createItem(
            in: collection,
            label: label,
            attributes: attributes + extra,
            secret: secret
        )
        // `replace` replaces only an item with exactly these attributes: one written under another
        // issuer would be left behind, and a later read could find it first.
        let found = try client.searchItems(attributes)
        try client.unlock(found.locked)
        for other in found.unlocked + found.locked where other != item { try client.delete(other) }
    }

    /// Deletes every item matching `attributes`; whether there was one.
    @discardableResult
    package func delete(_ attributes: [(String, String)]) throws(KeyringError) -> Bool {
        let client = try SecretServiceClient(address: self.address, timeout: self.timeout)
        let found = try client.searchItems(attributes)
        try client.unlock(found.locked)
        for item in found.unlocked + found.locked { try client.delete(item) }
        return !(found.unlocked.isEmpty && found.locked.isEmpty)
    }

    /// Whether a Secret Service answers on the bus within `timeout` (the `auto` setting's question):
    /// nil when it does, else why not.
    package func unavailability() -> KeyringError? {
        do throws(KeyringError) {
            _ = try SecretServiceClient(address: self.address, timeout: self.timeout)
            return nil
        } catch {
            return error
        }
    }
}
