/// TLS interception for the inject hosts: `tls_intercept` and `ca_dir` (docs/https-interception.md, "HTTPS clients").
package struct InterceptSettings: Sendable {
    /// `tls_intercept = on`: a CONNECT to an inject host is answered 200 and its TLS terminated with a
    /// leaf from the local CA.
    package var isEnabled = false
    /// Where the local CA lives; nil until the loader puts in the default (or when there is none).
    package var caDirectory: String?

    package init() {}

    /// `$XDG_DATA_HOME/bearer-proxy/ca`, else `~/.local/share/bearer-proxy/ca`; nil without either (the
    /// XDG Base Directory spec ignores a relative XDG_DATA_HOME).
    package static func defaultCADirectory(environment: [String: String]) -> String? {
        if let base = environment["XDG_DATA_HOME"], base.hasPrefix("/") { return base + "/bearer-proxy/ca" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.local/share/bearer-proxy/ca"
    }
}
