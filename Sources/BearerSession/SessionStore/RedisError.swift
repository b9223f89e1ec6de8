import BearerConfig
import BearerCore

/// Why a command to the session store got no usable answer, in words for a log line or a 502 body.
///
/// Never carries a command's arguments (they may be a token or a password): at most its name, and
/// Redis's own error text, which does not echo arguments.
package enum RedisError: Error, Equatable, Sendable {
    /// The connection could not be made (resolve, connect, TLS).
    case connect(OutboundError)
    /// Not connected now (waiting to reconnect); carries why the last attempt failed.
    case unavailable(String)
    /// The connection broke with the command unanswered: it may or may not have run.
    case connectionLost(String)
    /// No answer within the command timeout; the connection is dropped and made again.
    case noReply(after: Duration)
    /// Redis refused a login step (AUTH, SELECT, SUBSCRIBE).
    case refused(command: String, message: String)
    /// Redis answered the command with an error reply.
    case reply(String)
    /// Redis sent bytes that are not RESP, or a reply nothing asked for.
    case malformed(String)
    /// The connection was stopped on purpose (the proxy shuts down).
    case stopped

    package var reason: String {
        switch self {
        case .connect(let error): error.reason
        case .unavailable(let reason): "not connected (\(reason))"
        case .connectionLost(let reason): "connection lost: \(reason)"
        case .noReply(let after): "no reply within \(ValueParsers.format(after))"
        case .refused(let command, let message): "\(command) refused: \(oneLine(message))"
        case .reply(let message): oneLine(message)
        case .malformed(let reason): "malformed reply: \(reason)"
        case .stopped: "stopped"
        }
    }
}
