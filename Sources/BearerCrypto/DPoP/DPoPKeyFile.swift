import BearerIO
import Glibc

/// A session's DPoP key file (docs/token-sources.md, "Sender-constrained tokens: DPoP"): EC P-256, PEM, mode 0600,
/// made on first need (by the proxy's start or `login`, never by loading a config) and never
/// replaced.
///
/// A key that exists is read as it is: another kind of key, an encrypted one or a mode wider than
/// 0600 is an error naming the file, never a reason to make a new one (tokens and refresh tokens are
/// bound to the key: a silent new key would end the session). A new key is written in full to a
/// temporary file, then linked into place, so two proxies starting at once end up with one key, and
/// no crash leaves half a key. Blocking: used at start and by `login`, never on an event loop.
package enum DPoPKeyFile {
    /// The key at `path`, made first (with its folder, 0700) when there is no file: for the
    /// start-ups that prove (the proxy, `login`).
    package static func loadOrCreate(_ path: String) throws(PEMPrivateKey.LoadError) -> SigningKey {
        if let key = try Self.loadIfPresent(path) { return key }
        try Self.create(path)
        return try Self.load(path)
    }

    /// The key at `path`, checked as `loadOrCreate` checks it; nil when there is no file yet. Makes
    /// nothing: loading a config reads the key through here, so that `--check`, `ca` and `env`
    /// leave no file behind.
    package static func loadIfPresent(_ path: String) throws(PEMPrivateKey.LoadError) -> SigningKey? {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            guard errno == ENOENT else {
                throw PEMPrivateKey.LoadError(path: path, reason: "cannot read it: \(errnoDescription())")
            }
            return nil
        }
        return try Self.load(path)
    }

    private static func load(_ path: String) throws(PEMPrivateKey.LoadError) -> SigningKey {
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & 0o077 != 0 {
            throw PEMPrivateKey.LoadError(
                path: path,
                reason:
                    "mode \(String(status.st_mode & 0o777, radix: 8)) is wider than 0600: the DPoP key must be the"
                    + " owner's alone (chmod 600 it)"
            )
        }
        let key = try SigningKey.load(file: path)
        guard key.algorithm == .es256 else {
            throw PEMPrivateKey.LoadError(path: path, reason: "holds an \(key) key; a DPoP key is EC P-256 (ES256)")
        }
        return key
    }

    private static func create(_ path: String) throws(PEMPrivateKey.LoadError) {
        guard let key = PEMPrivateKey.generateP256() else {
            throw PEMPrivateKey.LoadError(path: path, reason: "OpenSSL could not make a P-256 key")
        }
        var pem = key.pem
        defer { wipe(&pem) }
        let temporary = "\(path).new-\(getpid())"
        do throws(LocalCAError) {
            try CAFiles.createDirectory(AtomicFile.folder(of: path))
        } catch {
            throw PEMPrivateKey.LoadError(path: path, reason: "cannot make the DPoP key: \(error)")
        }
        do throws(AtomicFile.WriteError) {
            try AtomicFile.writeFlushed(pem, to: temporary, mode: 0o600)
        } catch {
            throw PEMPrivateKey.LoadError(
                path: path,
                reason: "cannot make the DPoP key: \(error.path): \(error.reason)"
            )
        }
        defer { unlink(temporary) }
        // link(2) fails when the file exists: a key another process made meanwhile is kept, not replaced.
        if link(temporary, path) != 0 && errno != EEXIST {
            throw PEMPrivateKey.LoadError(path: path, reason: "cannot make the DPoP key: \(errnoDescription())")
        }
    }

    /// `$XDG_DATA_HOME/bearer-proxy/dpop-key.pem`, else `~/.local/share/bearer-proxy/dpop-key.pem`;
    /// a named session's is `dpop-key-NAME.pem`. Nil without XDG_DATA_HOME or HOME.
    package static func defaultPath(session: String?, environment: [String: String]) -> String? {
        let name = session.map { "dpop-key-\($0).pem" } ?? "dpop-key.pem"
        if let base = environment["XDG_DATA_HOME"], base.hasPrefix("/") { return "\(base)/bearer-proxy/\(name)" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return "\(home)/.local/share/bearer-proxy/\(name)"
    }
}
