import BearerCore

/// Where the session bus listens, from `DBUS_SESSION_BUS_ADDRESS` (D-Bus specification, "Server
/// Addresses"): the first `unix:path=` or `unix:abstract=` among its `;`-separated entries.
///
/// Other transports (tcp, launchd, `unix:tmpdir=`, which only a server listens on) are passed over;
/// values are percent-decoded, as the specification escapes them.
package enum DBusAddress: Equatable, Sendable, CustomStringConvertible {
    /// A socket file.
    case path(String)
    /// A name in Linux's abstract socket namespace.
    case abstract(String)

    package struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// `DBUS_SESSION_BUS_ADDRESS` parsed; nil when it is unset or empty (no session bus).
    package static func sessionBus(environment: [String: String]) throws(ParseError) -> DBusAddress? {
        guard let text = environment["DBUS_SESSION_BUS_ADDRESS"], !text.isEmpty else { return nil }
        return try Self.parse(text)
    }

    package static func parse(_ text: String) throws(ParseError) -> DBusAddress {
        for entry in text.split(separator: ";") {
            guard let colon = entry.firstIndex(of: ":"), entry[..<colon] == "unix" else { continue }
            for pair in entry[entry.index(after: colon)...].split(separator: ",") {
                guard let equals = pair.firstIndex(of: "=") else { continue }
                let key = pair[..<equals]
                guard let value = PercentEncoding.decode(pair[pair.index(after: equals)...]), !value.isEmpty
                else { continue }
                if key == "path" { return .path(value) }
                if key == "abstract" { return .abstract(value) }
            }
        }
        throw ParseError(
            description:
                "DBUS_SESSION_BUS_ADDRESS names no unix:path= or unix:abstract= socket, the transports bearer-proxy speaks"
        )
    }

    package var description: String {
        switch self {
        case .path(let path): "unix:path=\(path)"
        case .abstract(let name): "unix:abstract=\(name)"
        }
    }
}
