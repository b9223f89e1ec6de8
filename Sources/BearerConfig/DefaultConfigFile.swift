import Glibc

/// Where the proxy finds its config when `--config` is not given: the XDG Base Directory place,
/// `$XDG_CONFIG_HOME/bearer-proxy/proxy.conf`, else `~/.config/bearer-proxy/proxy.conf`.
///
/// Used only when the file exists (and never with `--demo`), so that a proxy run every day needs no
/// flag at all, and a first run without any file still gets the plain "upstream: required" error.
package enum DefaultConfigFile {
    /// The path the spec gives, whether or not a file is there; nil without a usable HOME.
    package static func path(environment: [String: String]) -> String? {
        // The spec: an unset, empty or relative XDG_CONFIG_HOME is ignored.
        if let base = environment["XDG_CONFIG_HOME"], base.hasPrefix("/") {
            return base + "/bearer-proxy/proxy.conf"
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.config/bearer-proxy/proxy.conf"
    }

    /// The default path when something is there (a file, or a FIFO someone prepared).
    static func existingPath(environment: [String: String]) -> String? {
        guard let path = Self.path(environment: environment) else { return nil }
        var info = stat()
        return stat(path, &info) == 0 ? path : nil
    }
}
