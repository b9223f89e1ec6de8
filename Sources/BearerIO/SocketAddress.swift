import Glibc

/// An address to listen on or connect to: IPv4, IPv6, or a unix socket path.
package enum SocketAddress: Equatable, Sendable, CustomStringConvertible {
    case ipv4(sockaddr_in)
    case ipv6(sockaddr_in6)
    case unix(path: String)

    package static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        lhs.description == rhs.description
    }

    /// The IP address literal `host` (without brackets) and `port`, or nil if `host` is not a literal.
    package init?(ipAddress host: String, port: Int) {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr = v4
            self = .ipv4(address)
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            address.sin6_addr = v6
            self = .ipv6(address)
            return
        }
        return nil
    }

    package var port: Int? {
        switch self {
        case .ipv4(let address): Int(UInt16(bigEndian: address.sin_port))
        case .ipv6(let address): Int(UInt16(bigEndian: address.sin6_port))
        case .unix: nil
        }
    }

    package var isUnix: Bool {
        if case .unix = self { return true }
        return false
    }

    package var family: Int32 {
        switch self {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        case .unix: AF_UNIX
        }
    }

    /// The text before the first NUL of a C string buffer.
    private static func string(fromCString buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The host part as text (`127.0.0.1`, `::1`), nil for unix sockets.
    package var hostText: String? {
        switch self {
        case .ipv4(var address):
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
            return Self.string(fromCString: text)
        case .ipv6(var address):
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count))
            return Self.string(fromCString: text)
        case .unix:
            return nil
        }
    }

    /// `127.0.0.1:8080`, `[::1]:8080`, `unix:/path`: the form the configuration accepts.
    package var description: String {
        switch self {
        case .ipv4: "\(self.hostText!):\(self.port!)"
        case .ipv6: "[\(self.hostText!)]:\(self.port!)"
        case .unix(let path): "unix:\(path)"
        }
    }

    /// Calls `body` with this address as a `sockaddr` and its length.
    package func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result) rethrows -> Result
    {
        switch self {
        case .ipv4(var address):
            return try withUnsafePointer(to: &address) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .ipv6(var address):
            return try withUnsafePointer(to: &address) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        case .unix(let path):
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let pathBytes = Array(path.utf8)
            precondition(pathBytes.count < MemoryLayout.size(ofValue: address.sun_path), "unix socket path too long")
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: pathBytes)
                raw[pathBytes.count] = 0
            }
            return try withUnsafePointer(to: &address) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
    }

    /// Reads an address filled in by the kernel (accept, getsockname).
    package init?(storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            self = withUnsafeBytes(of: &storage) { .ipv4($0.load(as: sockaddr_in.self)) }
        case AF_INET6:
            self = withUnsafeBytes(of: &storage) { .ipv6($0.load(as: sockaddr_in6.self)) }
        case AF_UNIX:
            let path = withUnsafeBytes(of: &storage) { raw -> String in
                let address = raw.load(as: sockaddr_un.self)
                return withUnsafeBytes(of: address.sun_path) { pathBytes in
                    let bytes = pathBytes.prefix { $0 != 0 }
                    return String(decoding: bytes, as: UTF8.self)
                }
            }
            self = .unix(path: path)
        default:
            return nil
        }
    }
}

/// What an address option looked like when it was not one: `HOST:PORT`, `[IPv6]:PORT` or `unix:/path`.
package enum AddressParseError: Error, Equatable, Sendable, CustomStringConvertible {
    case missingPort(String)
    case invalidPort(String)
    case emptyUnixPath
    case unixPathTooLong(String)
    case invalidHost(String)

    package var description: String {
        switch self {
        case .missingPort(let text): "'\(text)' has no port (expected HOST:PORT, [IPv6]:PORT or unix:/path)"
        case .invalidPort(let text): "'\(text)' has an invalid port (expected 0-65535)"
        case .emptyUnixPath: "unix: needs a socket path (expected unix:/path)"
        case .unixPathTooLong(let path): "unix socket path '\(path)' is longer than 107 bytes"
        case .invalidHost(let text): "'\(text)' is not an IP address or host name"
        }
    }
}

/// A listen address as written: a host (name or literal) and port, or a unix path.
package enum ListenAddressSpec: Equatable, Sendable, CustomStringConvertible {
    case hostPort(host: String, port: Int)
    case unix(path: String)

    package static func parse(_ text: String) throws(AddressParseError) -> ListenAddressSpec {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            guard !path.isEmpty else { throw .emptyUnixPath }
            guard path.utf8.count < 108 else { throw .unixPathTooLong(path) }
            return .unix(path: path)
        }
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .invalidHost(text) }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw .missingPort(text) }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw .missingPort(text) }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { throw .invalidHost(text) }
        }
        guard !host.isEmpty else { throw .invalidHost(text) }
        guard let port = Int(portText), (0...65535).contains(port) else { throw .invalidPort(text) }
        return .hostPort(host: String(host), port: port)
    }

    /// The loopback address a client on this machine reaches a listener on `host` at, when `host`
    /// means "every address" of its family; nil for any other host.
    package static func loopback(reachingWildcard host: String) -> String? {
        switch host {
        case "0.0.0.0": "127.0.0.1"
        case "::": "::1"
        default: nil
        }
    }

    package var description: String {
        switch self {
        case .hostPort(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        }
    }
}
