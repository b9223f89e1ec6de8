import BearerCore
import BearerHTTP
import BearerIO

/// One event loop's audit log lines: one JSON object per exchange saying who used which session's
/// credential for what, and what became of it, gathered and written once per loop turn as the access
/// log's are (`AccessLogBuffer`). Confined to its loop.
///
/// A line holds facts about the request, never a value that could be a secret: no header, no body, no
/// token (only its generation), and the query's values replaced by `…` (an API key in a query string
/// is a secret too). It is made with `JSONText`, a dictionary a line: the audit log is off unless asked
/// for, and a reader of it wants every field spelled out more than the last percent of throughput.
final class AuditLogBuffer {
    /// What the rules and the sessions made of a request (the line's `decision`).
    enum Decision {
        /// Sent on, with the session's token if its host has one.
        case allowed
        /// Refused with 403 by the session's `allow` or `deny`.
        case refused(session: NamedSession, rule: String)
        /// For a host of no session: sent on (or refused by `other_hosts`) without a token.
        case otherHost
        /// The session had no usable token, and the proxy answered itself.
        case noToken
    }

    /// Who sent the request: its address, or for a unix socket the process and user (SO_PEERCRED).
    enum Client {
        case address(String)
        case process(pid: Int32, uid: UInt32)
        case unknown

        /// The client of the connection over `socket` (nil: an in-memory one, in tests).
        init(socket: Int32?, isUnix: Bool) {
            guard let socket else {
                self = .unknown
                return
            }
            if isUnix {
                self = Socket.peerCredentials(socket).map { .process(pid: $0.pid, uid: $0.uid) } ?? .unknown
            } else {
                self = Socket.peerAddress(socket).map { .address($0.description) } ?? .unknown
            }
        }

        var json: Any {
            switch self {
            case .address(let address): address
            case .process(let pid, let uid): ["pid": Int(pid), "uid": Int(uid)] as [String: Any]
            case .unknown: JSONNull()
            }
        }
    }

    /// The batching, the access log's.
    private let lines: AccessLogBuffer
    /// The last lines, for the admin page.
    private let recent: RecentExchanges

    /// `loop` outlives its buffer (the loop context holds both).
    init(sink: LogSink, loop: EventLoop, recent: RecentExchanges) {
        self.lines = AccessLogBuffer(sink: sink, loop: loop)
        self.recent = recent
    }

    /// `{"time":"…Z", …}`: the time first, the other fields in the order of their names.
    func append(
        _ record: ClientConnectionStateMachine.RequestRecord,
        client: Client,
        status: Int,
        bytesOut: Int,
        duration: Duration,
        replayed: Bool,
        decision: Decision,
        isHTTP2: Bool
    ) {
        var fields = Self.requestFields(record.head, target: record.target, isHTTP2: isHTTP2)
        let session: NamedSession? =
            if case .refused(let session, _) = decision { session } else { record.target?.session }
        fields["session"] = session.map(\.name) ?? JSONNull()
        fields["client"] = client.json
        fields["status"] = status
        fields["bytes_in"] = record.bodyBytesIn
        fields["bytes_out"] = max(bytesOut, 0)
        fields["duration_ms"] = Double(max(duration.nanoseconds, 0) / 10_000) / 100
        fields["token_generation"] = record.tokenGeneration ?? JSONNull()
        fields["refreshed"] = record.waitedForToken
        fields["replayed"] = replayed
        switch decision {
        case .allowed: fields["decision"] = "allowed"
        case .refused(_, let rule):
            fields["decision"] = "refused"
            fields["rule"] = rule
        case .otherHost: fields["decision"] = "other_host"
        case .noToken: fields["decision"] = "no_token"
        }
        let rest = JSONText.text(of: fields).dropFirst()
        self.recent.append("{\"time\":\"\(formatTimestamp(wallClockSeconds()))\"," + rest)
        self.lines.appendLine { buffer, timestamp in
            buffer.writeStaticString("{\"time\":\"")
            timestamp.write(into: &buffer)
            buffer.writeStaticString("\",")
            buffer.writeString(String(rest))
            buffer.writeByte(UInt8(ascii: "\n"))
        }
    }

    /// Writes what has gathered.
    func flush() {
        self.lines.flush()
    }

    /// `method`, `scheme`, `host`, `path`, `protocol`: what the request asked for, where it went. An
    /// HTTP/2 stream's head is the HTTP/1.1 one its exchange was handed: its protocol is `HTTP/2`.
    private static func requestFields(_ head: RequestHead?, target: Target?, isHTTP2: Bool) -> [String: Any] {
        var fields: [String: Any] = [:]
        let scheme: Bool? =
            if let target { target.origin.isHTTPS } else if case .absolute(let url) = head?.targetForm {
                url.isHTTPS
            } else { nil }
        fields["scheme"] = scheme.map { $0 ? "https" : "http" } ?? JSONNull()
        if let target {
            fields["host"] = target.origin.description
        } else if let head, case .authority = head.targetForm {
            fields["host"] = head.string(head.target)
        } else if let head, let authority = head.hostAuthority {
            fields["host"] = head.string(authority.host)
        } else {
            fields["host"] = JSONNull()
        }
        guard let head else {
            for name in ["method", "path", "protocol"] { fields[name] = JSONNull() }
            return fields
        }
        fields["method"] = head.string(head.methodRange)
        fields["protocol"] = isHTTP2 ? "HTTP/2" : head.version == .http10 ? "HTTP/1.0" : "HTTP/1.1"
        switch head.targetForm {
        case .origin: fields["path"] = Self.withoutQueryValues(head.string(head.target))
        case .absolute(let url):
            let path = head.string(url.pathAndQuery)
            fields["path"] = Self.withoutQueryValues(path.hasPrefix("/") ? path : "/" + path)
        case .authority, .asterisk: fields["path"] = head.string(head.target)
        }
        return fields
    }

    /// `path?a=…&b=…`: the query's names kept, its values (tokens, keys, personal data) not; cut to
    /// `AccessLogBuffer.pathLimit` characters with `…`.
    static func withoutQueryValues(_ target: String) -> String {
        var shown = target
        if let question = target.firstIndex(of: "?") {
            let query = target[target.index(after: question)...]
            let parameters = query.split(separator: "&", omittingEmptySubsequences: false)
            let names = parameters.map { parameter in
                guard let equals = parameter.firstIndex(of: "=") else { return String(parameter) }
                return parameter[..<equals] + "=…"
            }
            shown = target[...question] + names.joined(separator: "&")
        }
        guard shown.count > AccessLogBuffer.pathLimit else { return shown }
        return shown.prefix(AccessLogBuffer.pathLimit) + "…"
    }
}

@available(*, unavailable)
extension AuditLogBuffer: Sendable {}
