import BearerCore

/// The freedesktop Secret Service API over one bus connection (Secret Service API 0.2): a `plain`
/// session, and the calls a credential store needs.
///
/// `plain` sends secrets unencrypted over the session bus, which only this user's processes reach
/// (the bus checked our uid with SASL EXTERNAL); the `dh-ietf1024` algorithm would protect them from
/// nobody who can read this process's memory or the bus's. Every unlock that would need a prompt is
/// `KeyringError.locked`: a proxy has no window to show it in, and waiting for one would hang.
/// Blocking and bounded by the connection's timeout: call off the event loops.
package final class SecretServiceClient {
    private let connection: DBusConnection
    private let session: String

    static let service = "org.freedesktop.secrets"
    static let servicePath = "/org/freedesktop/secrets"
    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    /// What a Secret Service returns for "no prompt needed" and "no object".
    static let none = "/"

    /// Connects to the bus at `address` and opens a `plain` session; each call within `timeout`.
    package init(address: DBusAddress, timeout: Duration) throws(KeyringError) {
        do throws(DBusError) {
            self.connection = try DBusConnection(address: address, timeout: timeout)
        } catch {
            throw .bus(error)
        }
        let reply = try Self.call(
            self.connection,
            path: Self.servicePath,
            interface: Self.serviceInterface,
            member: "OpenSession",
            body: [.string("plain"), .variant(.string(""))]
        )
        guard reply.count == 2, let session = reply[1].stringValue else {
            throw .service(call: "OpenSession", .unexpectedReply("signature \(reply.map(\.type.signature).joined())"))
        }
        self.session = session
    }

    /// The items whose attributes include all of `attributes`: those unlocked, and those locked.
    package func searchItems(
        _ attributes: [(String, String)]
    ) throws(KeyringError) -> (
        unlocked: [String], locked: [String]
    ) {
        let reply = try self.serviceCall("SearchItems", [.stringDictionary(attributes)])
        guard reply.count == 2, let unlocked = reply[0].objectPathValues, let locked = reply[1].objectPathValues else {
            throw .service(call: "SearchItems", .unexpectedReply("signature \(reply.map(\.type.signature).joined())"))
        }
        return (unlocked, locked)
    }

    /// Unlocks `objects` (items or collections) where that needs no prompt; `locked` otherwise.
    package func unlock(_ objects: [String]) throws(KeyringError) {
        guard !objects.isEmpty else { return }
        let reply = try self.serviceCall("Unlock", [.objectPaths(objects)])
        guard reply.count == 2, let prompt = reply[1].stringValue else {
            throw .service(call: "Unlock", .unexpectedReply("signature \(reply.map(\.type.signature).joined())"))
        }
        guard prompt == Self.none else { throw .locked(object: objects[0]) }
    }

    /// Locks `objects` (what a user's "lock the keyring" does; the tests lock one with it).
    package func lock(_ objects: [String]) throws(KeyringError) {
        _ = try self.serviceCall("Lock", [.objectPaths(objects)])
    }

    /// The secret of an unlocked item.
    package func secret(of item: String) throws(KeyringError) -> Secret<[UInt8]> {
        let reply = try Self.call(
            self.connection,
            path: item,
            interface: Self.itemInterface,
            member: "GetSecret",
            body: [.objectPath(self.session)]
        )
        guard reply.count == 1, let fields = reply[0].elements, fields.count == 4, let value = fields[2].byteValues
        else {
            throw .service(call: "GetSecret", .unexpectedReply("signature \(reply.map(\.type.signature).joined())"))
        }
        return Secret(value)
    }

    /// The collection the alias `default` names (the login keyring), unlocked.
    package func defaultCollection() throws(KeyringError) -> String {
        let reply = try self.serviceCall("ReadAlias", [.string("default")])
        guard let collection = reply.first?.stringValue else {
            throw .service(call: "ReadAlias", .unexpectedReply("no path"))
        }
        guard collection != Self.none else { throw .noDefaultCollection }
        try self.unlock([collection])
        return collection
    }

    /// Creates an item in `collection`, replacing one with the same attributes; returns its path.
    package func createItem(
        in collection: String,
        label: String,
        attributes: [(String, String)],
        secret: Secret<[UInt8]>,
        contentType: String = "text/plain"
    ) throws(KeyringError) -> String {
        let properties: DBusValue = .array(
            .dictEntry(key: .string, value: .variant),
            [
                .dictEntry(.string("org.freedesktop.Secret.Item.Label"), .variant(.string(label))),
                .dictEntry(.string("org.freedesktop.Secret.Item.Attributes"), .variant(.stringDictionary(attributes))),
            ]
        )
        let value: DBusValue = .structure([
            .objectPath(self.session), .bytes([]), .bytes(secret.reveal()), .string(contentType),
        ])
        let reply = try Self.call(
            self.connection,
            path: collection,
            interface: Self.collectionInterface,
            member: "CreateItem",
            body: [properties, value, .boolean(true)]
        )
        guard reply.count == 2, let item = reply[0].stringValue, let prompt = reply[1].stringValue else {
            throw .service(call: "CreateItem", .unexpectedReply("signature \(reply.map(\.type.signature).joined())"))
        }
        guard prompt == Self.none, item != Self.none else { throw .locked(object: collection) }
        return item
    }

    /// Deletes an unlocked item.
    package func delete(_ item: String) throws(KeyringError) {
        let reply = try Self.call(self.connection, path: item, interface: Self.itemInterface, member: "Delete")
        guard reply.first?.stringValue == Self.none else { throw .locked(object: item) }
    }

    private func serviceCall(_ member: String, _ body: [DBusValue]) throws(KeyringError) -> [DBusValue] {
        try Self.call(
            self.connection,
            path: Self.servicePath,
            interface: Self.serviceInterface,
            member: member,
            body: body
        )
    }

    /// One call to the service; the bus's "nobody owns that name" is `noService`, the service's
    /// "is locked" is `locked`.
    private static func call(
        _ connection: DBusConnection,
        path: String,
        interface: String,
        member: String,
        body: [DBusValue] = []
    ) throws(KeyringError) -> [DBusValue] {
        do throws(DBusError) {
            return try connection.call(
                destination: Self.service,
                path: path,
                interface: interface,
                member: member,
                body: body
            )
        } catch {
            switch error {
            case .errorReply(let name, _)
            where name == "org.freedesktop.DBus.Error.ServiceUnknown"
                || name == "org.freedesktop.DBus.Error.NameHasNoOwner":
                throw .noService
            case .errorReply(let name, _) where name == "org.freedesktop.Secret.Error.IsLocked":
                throw .locked(object: path)
            case .errorReply: throw .service(call: member, error)
            default: throw .bus(error)
            }
        }
    }
}
