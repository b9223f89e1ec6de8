import BearerCore

/// Why a call on the bus failed, in a person's words: what was asked of whom, and what happened.
package enum DBusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The socket could not be made or connected (`errno`'s words).
    case cannotConnect(address: String, reason: String)
    /// The bus did not answer `step` within the bound.
    case timedOut(address: String, step: String, after: Duration)
    /// The bus closed the connection.
    case closed(address: String)
    /// SASL EXTERNAL was refused.
    case authenticationRejected(address: String)
    /// Bytes that are not a D-Bus message: the connection is dropped.
    case malformed(DBusDecodeError)
    /// The callee answered with an error message: its name (`org.freedesktop.DBus.Error.ServiceUnknown`)
    /// and its text.
    case errorReply(name: String, message: String)
    /// A reply of another shape than the method's.
    case unexpectedReply(String)

    package var description: String {
        switch self {
        case .cannotConnect(let address, let reason): "cannot connect to the D-Bus session bus at \(address): \(reason)"
        case .timedOut(let address, let step, let after):
            "the D-Bus session bus at \(address) did not answer \(step) within \(Self.spoken(after))"
        case .closed(let address): "the D-Bus session bus at \(address) closed the connection"
        case .authenticationRejected(let address):
            "the D-Bus session bus at \(address) refused this user (SASL EXTERNAL)"
        case .malformed(let error): error.description
        case .errorReply(let name, let message): message.isEmpty ? name : "\(name): \(message)"
        case .unexpectedReply(let what): "unexpected D-Bus reply: \(what)"
        }
    }

    /// `1s`, `300ms`: the bound as the configuration would spell it.
    private static func spoken(_ duration: Duration) -> String {
        let milliseconds = duration.nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
    }
}
