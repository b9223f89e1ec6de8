import BearerCore
import BearerCrypto
import BearerHTTP
import BearerIO
import Glibc

/// A Google-style service-account key file (`"type": "service_account"`): who the account is, the
/// key it signs with, and where it gets tokens. All a config needs for a JWT bearer grant: iss =
/// `client_email`, kid = `private_key_id`, aud = `token_uri` (docs/token-sources.md, "Service accounts").
///
/// Read once at start; the key never leaves the process, and nothing of it is shown but the
/// account's e-mail, the key's id and its kind.
package struct ServiceAccountKey: Sendable {
    package var clientEmail: String
    package var privateKeyID: String?
    package var tokenURI: HTTPURL
    package var key: SigningKey

    /// Reads the file at `path`; a problem is one line naming the file and the field.
    package static func load(file path: String) throws(PEMPrivateKey.LoadError) -> ServiceAccountKey {
        var bytes: [UInt8]
        do throws(IOError) {
            bytes = try readWholeFile(path)
        } catch {
            let reason = error.errnoCode == ENOENT ? "no such file" : "cannot read it: \(error.reason)"
            throw PEMPrivateKey.LoadError(path: path, reason: reason)
        }
        defer { wipe(&bytes) }
        return try Self.parse(bytes, path: path)
    }

    /// The key in `bytes` (a key file's contents; `path` names it in errors).
    package static func parse(_ bytes: [UInt8], path: String) throws(PEMPrivateKey.LoadError) -> ServiceAccountKey {
        func failure(_ reason: String) -> PEMPrivateKey.LoadError {
            PEMPrivateKey.LoadError(path: path, reason: reason)
        }
        guard let object = JSONText.object(bytes) else {
            throw failure("is not a JSON object (expected a service-account key file as the console downloads it)")
        }
        guard let type = object["type"] as? String, type == "service_account" else {
            let found = (object["type"] as? String).map { "\"type\" is \"\(oneLine($0, limit: 40))\"" } ?? "no \"type\""
            throw failure("is not a service-account key: \(found) (expected \"service_account\")")
        }
        guard let email = object["client_email"] as? String, !email.isEmpty else {
            throw failure("has no client_email")
        }
        guard let pem = object["private_key"] as? String, !pem.isEmpty else {
            throw failure("has no private_key")
        }
        guard let tokenURIText = object["token_uri"] as? String else {
            throw failure("has no token_uri (set \(Key.tokenURL))")
        }
        let tokenURI: HTTPURL
        switch HTTPURL.parse(tokenURIText) {
        case .success(let url): tokenURI = url
        case .failure(let error):
            throw failure("token_uri '\(oneLine(HTTPURL.quotable(tokenURIText), limit: 100))' \(error.reason)")
        }
        var pemBytes = Array(pem.utf8)
        defer { wipe(&pemBytes) }
        let parsed: PEMPrivateKey
        do throws(PEMPrivateKey.ParseError) {
            parsed = try PEMPrivateKey.parse(pem: pemBytes)
        } catch {
            throw failure("private_key \(error.reason)")
        }
        let key: SigningKey
        do throws(SigningKey.UnsupportedKey) {
            key = try SigningKey(parsed)
        } catch {
            throw failure("private_key \(error.reason)")
        }
        return ServiceAccountKey(
            clientEmail: email,
            privateKeyID: (object["private_key_id"] as? String).flatMap { $0.isEmpty ? nil : $0 },
            tokenURI: tokenURI,
            key: key
        )
    }

    /// What `--check` shows: the account, the key's id and kind. Never the key.
    package var summary: String {
        "client_email=\(self.clientEmail)" + (self.privateKeyID.map { ", private_key_id=\($0)" } ?? "")
            + "; \(self.key)"
    }
}
