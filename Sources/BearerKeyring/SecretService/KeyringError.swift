/// Why the desktop's keyring could not keep or give a credential: one line naming what failed and
/// the fix. Never holds a secret: the bus's own error texts are about objects, not their contents.
package enum KeyringError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The session bus failed (cannot connect, did not answer in time, closed, spoke nonsense).
    case bus(DBusError)
    /// Nothing owns `org.freedesktop.secrets` on the bus.
    case noService
    /// Unlocking `object` needs a prompt, which a proxy has nowhere to show.
    case locked(object: String)
    /// There is no default collection to create the item in (making one needs a prompt).
    case noDefaultCollection
    /// The service answered a call with an error of its own.
    case service(call: String, DBusError)

    package static let fix =
        "unlock the keyring (log in to the desktop session, or run gnome-keyring-daemon --unlock), or set credential_store = file"

    package var description: String {
        switch self {
        case .bus(let error): "\(error) (or set credential_store = file)"
        case .noService:
            "no Secret Service on the D-Bus session bus (nothing owns org.freedesktop.secrets): start one (gnome-keyring, KeePassXC), or set credential_store = file"
        case .locked(let object):
            "the Secret Service's \(object) is locked and unlocking it needs a prompt bearer-proxy cannot show: \(Self.fix)"
        case .noDefaultCollection:
            "the Secret Service has no default collection (the login keyring): create it by logging in to the desktop session, or set credential_store = file"
        case .service(let call, let error): "the Secret Service refused \(call): \(error)"
        }
    }
}
