import BearerCore
import BearerIO
import FoundationEssentials

/// A client this proxy registered itself as (RFC 7591), kept beside refresh_token_file as
/// `NAME.client.json` (mode 0600; the contract's name beside `NAME.refresh-token`), or under the Secret Service store as its own item
/// (`KeyringRegisteredClient`), so that the proxy and later logins use the same client_id: a new
/// registration per login would leave the server a client per run, and the stored refresh token is
/// bound to the client that got it. Only the client_id is kept: the client is public
/// (token_endpoint_auth_method none), so a secret the server returned anyway is not used.
package struct RegisteredClient: Equatable, Sendable {
    package var clientID: String
    /// Where it was registered: a stored client is reused only with the same registration endpoint,
    /// so that another server's client_id is never sent.
    package var registrationEndpoint: String

    package init(clientID: String, registrationEndpoint: String) {
        self.clientID = clientID
        self.registrationEndpoint = registrationEndpoint
    }

    /// The file beside `refreshTokenFile`: `NAME.client.json` beside `NAME.refresh-token` (the state
    /// folder's name for it), else `FILE.client.json`.
    package static func path(besides refreshTokenFile: String) -> String {
        let suffix = ".refresh-token"
        let stem =
            refreshTokenFile.hasSuffix(suffix) ? String(refreshTokenFile.dropLast(suffix.count)) : refreshTokenFile
        return stem + ".client.json"
    }

    /// The client stored beside `refreshTokenFile` for `registrationEndpoint`; nil when there is none
    /// (or it was registered elsewhere, or cannot be read: then login registers again).
    package static func stored(besides refreshTokenFile: String, for registrationEndpoint: String) -> RegisteredClient?
    {
        guard let data = FileManager.default.contents(atPath: Self.path(besides: refreshTokenFile)) else { return nil }
        return Self(json: Array(data), for: registrationEndpoint)
    }

    /// The client in `json` (what `json` writes) when it was registered at `registrationEndpoint`.
    package init?(json: [UInt8], for registrationEndpoint: String) {
        guard let object = JSONText.object(json),
            let clientID = object["client_id"] as? String, !clientID.isEmpty,
            object["registration_endpoint"] as? String == registrationEndpoint
        else { return nil }
        self.init(clientID: clientID, registrationEndpoint: registrationEndpoint)
    }

    /// `{"client_id": …, "registration_endpoint": …}` and a newline: the file's, and the keyring item's secret.
    package var json: [UInt8] {
        let object = ["client_id": self.clientID, "registration_endpoint": self.registrationEndpoint]
        return Array(JSONText.text(of: object).utf8) + [0x0A]
    }

    /// Writes it beside `refreshTokenFile`, atomically, mode 0600.
    package func store(besides refreshTokenFile: String) throws(AtomicFile.WriteError) {
        let path = Self.path(besides: refreshTokenFile)
        try AtomicFile.replace(
            path,
            with: self.json,
            mode: 0o600,
            temporary: path + ".tmp"
        )
    }
}
