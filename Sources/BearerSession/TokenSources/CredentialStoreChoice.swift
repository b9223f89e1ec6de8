import BearerConfig
import BearerCore
import BearerKeyring

/// Where a session's refresh token is kept, chosen from `credential_store` (the contract's "Where
/// credentials are kept"), and why: the start-up line and `--check` say both.
///
/// `auto` asks the session bus only for a session that would keep a refresh token and names no
/// place for it (neither `refresh_token_file` nor an inline `refresh_token`): a file the
/// configuration names stays where its user put it. Asking is bounded (a second): a bus that does
/// not answer is the file, never a hang. Blocking: off the event loops.
package struct CredentialStoreChoice: Sendable {
    /// The keyring, or nil for the file.
    package let keyring: SecretServiceItems?
    /// The file (nil: an inline token kept in memory); under the keyring, what the lock file sits beside.
    package let file: String?
    /// Why this store, for the start-up line and `--check`.
    package let reason: String

    /// How long `auto` waits for the Secret Service to answer before it takes the file.
    package static let probeTimeout: Duration = .seconds(1)
    /// Every later call's bound (the contract: 5 s at most).
    package static let callTimeout: Duration = .seconds(5)

    package var name: String { self.keyring == nil ? "file" : "secret-service" }

    /// `credential_store = secret-service (…)`, `file ~/.local/state/…: no D-Bus session bus`.
    package var summary: String {
        let place = self.keyring.map { " on \($0.address)" } ?? self.file.map { " \($0)" } ?? " (in memory)"
        return "\(self.name)\(place): \(self.reason)"
    }

    package static func choose(
        for settings: SessionSettings,
        environment: [String: String],
        probeTimeout: Duration = Self.probeTimeout
    ) throws(RefreshTokenStore.StoreError) -> CredentialStoreChoice {
        let defaultFile = Self.stateFile(session: settings.sessionName, environment: environment)
        let named = settings.refreshTokenFile
        func file(_ reason: String) -> CredentialStoreChoice {
            let path = named ?? (settings.refreshToken == nil ? defaultFile : nil)
            return CredentialStoreChoice(keyring: nil, file: path, reason: reason)
        }
        let address: DBusAddress?
        switch settings.credentialStore {
        case .file:
            return CredentialStoreChoice(keyring: nil, file: named, reason: "credential_store = file")
        case .secretService:
            do throws(DBusAddress.ParseError) {
                address = try DBusAddress.sessionBus(environment: environment)
            } catch {
                throw .init(description: "credential_store = secret-service: \(error.description)")
            }
            guard let address else {
                throw .init(
                    description:
                        "credential_store = secret-service needs the D-Bus session bus, and DBUS_SESSION_BUS_ADDRESS is not set: run the proxy in the desktop session, or set credential_store = file"
                )
            }
            let items = SecretServiceItems(address: address, timeout: Self.callTimeout)
            return CredentialStoreChoice(
                keyring: items,
                file: named ?? defaultFile,
                reason: "credential_store = secret-service"
            )
        case .auto:
            guard settings.effectiveGrantType == .refreshToken else {
                return CredentialStoreChoice(keyring: nil, file: nil, reason: "the session keeps no refresh token")
            }
            if named != nil { return file("credential_store = auto, and refresh_token_file is set") }
            if settings.refreshToken != nil { return file("credential_store = auto, and refresh_token is set inline") }
            do throws(DBusAddress.ParseError) {
                address = try DBusAddress.sessionBus(environment: environment)
            } catch {
                return file("credential_store = auto: \(error.description)")
            }
            guard let address else {
                return file("credential_store = auto: no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
            }
            if let why = SecretServiceItems(address: address, timeout: probeTimeout).unavailability() {
                return file("credential_store = auto: no Secret Service answered: \(why)")
            }
            let items = SecretServiceItems(address: address, timeout: Self.callTimeout)
            return CredentialStoreChoice(
                keyring: items,
                file: defaultFile,
                reason: "credential_store = auto, and the Secret Service answered"
            )
        }
    }

    /// The store: the keyring item (read now), or the file (read now, its folder required).
    package func open(for settings: SessionSettings) throws(RefreshTokenStore.StoreError) -> RefreshTokenStore {
        if let keyring = self.keyring {
            let item = KeyringRefreshToken(items: keyring, session: settings.sessionName, issuer: settings.issuer?.text)
            return try RefreshTokenStore(
                keyring: item,
                lockFile: RefreshTokenStore.lockPath(for: self.file ?? ""),
                origin: self.summary
            )
        }
        let store = try RefreshTokenStore(token: settings.refreshToken, path: self.file, origin: self.summary)
        if settings.refreshTokenFile != nil { try store.requireFolder() }
        return store
    }

    /// `$XDG_STATE_HOME/bearer-proxy/NAME.refresh-token`, else `~/.local/state/…` (the XDG Base
    /// Directory spec's state): where the file store keeps a session's token when the configuration
    /// names no file, and the file `login URL` writes into the session it adds. Nil without an
    /// absolute XDG_STATE_HOME or HOME: no place to keep it.
    package static func stateFile(session: String, environment: [String: String]) -> String? {
        let file = "/bearer-proxy/\(session).refresh-token"
        if let base = environment["XDG_STATE_HOME"], base.hasPrefix("/") { return base + file }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.local/state" + file
    }
}
