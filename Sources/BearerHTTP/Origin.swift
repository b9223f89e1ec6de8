/// Where an upstream connection goes: scheme, host and port. Connections are pooled per origin.
package struct Origin: Hashable, Sendable, CustomStringConvertible {
    package var isHTTPS: Bool
    /// Lower-cased, without brackets for IPv6.
    package var host: String
    package var port: Int

    package init(isHTTPS: Bool, host: String, port: Int) {
        self.isHTTPS = isHTTPS
        self.host = host
        self.port = port
    }

    /// `host:port` (IPv6 bracketed), for messages and logs.
    package var description: String {
        self.host.contains(":") ? "[\(self.host)]:\(self.port)" : "\(self.host):\(self.port)"
    }

    /// The `Host` value for requests to this origin: the port is left out when it is the scheme's default.
    package var authority: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return self.port == (self.isHTTPS ? 443 : 80) ? host : "\(host):\(self.port)"
    }
}
