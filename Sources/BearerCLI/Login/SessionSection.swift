import BearerConfig
import BearerCore
import BearerHTTP
import BearerIO
import BearerSession
import Glibc

/// The `[session NAME]` that `bearer-proxy login URL` adds to a config file: the API as upstream,
/// mounted at `/NAME`, where its token comes from (`resource_url` when the API's metadata is at its
/// well-known address, where the proxy finds it again at start; else the `issuer` and the `resource`
/// it named), and the refresh token file. It is appended, never merged: the rest of the file stays
/// byte for byte what its owner wrote.
struct SessionSection: Equatable {
    var name: String
    var upstream: HTTPURL
    var found: ResourceProbe.Found
    var refreshTokenFile: String
    var scope: String?

    /// `api.example.com:8443` → `api-example-com`: a section name (letters, digits, `-`, `_`).
    static func defaultName(for api: HTTPURL) -> String {
        String(api.host.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") ? $0 : "-" })
    }

    var text: String {
        var lines = [
            "# Added by 'bearer-proxy login \(self.upstream)'.",
            "[session \(self.name)]",
            "\(ConfigurationKey.upstream) = \(self.upstream)",
            "\(ConfigurationKey.mount) = /\(self.name)",
        ]
        if self.found.isAtWellKnownAddress {
            lines.append("\(ConfigurationKey.resourceURL) = \(self.found.resource)")
        } else {
            lines.append("\(ConfigurationKey.issuer) = \(self.found.authorizationServer.text)")
            lines.append("\(ConfigurationKey.resource) = \(self.found.resource)")
        }
        if let scope = self.scope { lines.append("\(ConfigurationKey.scope) = \(scope)") }
        lines.append("\(ConfigurationKey.refreshTokenFile) = \(self.refreshTokenFile)")
        return lines.joined(separator: "\n") + "\n"
    }

    /// What goes after `existing` (the file's text, nil when there is no file): a blank line first
    /// when the file has text.
    func addition(after existing: String?) -> String {
        guard let existing, !existing.isEmpty else { return self.text }
        return (existing.hasSuffix("\n") ? "\n" : "\n\n") + self.text
    }

    /// Appends the section to the file at `path` (its mode and every byte it had stay), or creates
    /// it, mode 0600, with its folders.
    func add(to path: String, after existing: String?) -> Result<Void, LoginError> {
        let bytes = Array(self.addition(after: existing).utf8)
        let flags = existing == nil ? O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC : O_WRONLY | O_APPEND | O_CLOEXEC
        if existing == nil {
            do throws(AtomicFile.WriteError) {
                try AtomicFile.createFolders(AtomicFile.folder(of: path))
            } catch {
                return .failure(.cannotStore("\(error.path): cannot create the directory: \(error.reason)"))
            }
        }
        do throws(SystemCallError) {
            let fd = try SystemCall.blocking("open") { open(path, flags, 0o600) }
            defer { close(fd) }
            try SystemCall.writeAll(fd, bytes)
            return .success(())
        } catch {
            return .failure(.cannotStore("\(path): cannot add [session \(self.name)]: \(error)"))
        }
    }
}
