/// A parsed request head: the received bytes and where each part lies in them.
///
/// The proxy forwards most of the head byte for byte, so the head keeps its bytes and describes them
/// with ranges instead of copying each part into a `String`. A class: a head is passed around (the
/// connection's state, its actions, the access log) far more often than it is made, and copying a
/// pointer costs less than copying two hundred bytes and retaining what they hold. Immutable.
package final class RequestHead: ParsedHead, Sendable {
    package let bytes: [UInt8]
    package let method: HTTPMethod
    package let methodRange: Range<Int>
    package let target: Range<Int>
    package let targetForm: RequestTargetForm
    package let version: HTTPVersion
    package let fields: [HTTPField]
    package let framing: RequestFraming
    /// Index into `fields` of the Host field, if any.
    package let hostField: Int?
    /// The Host field's value parsed as an authority (nil when absent or empty).
    package let hostAuthority: Authority?
    package let connectionClose: Bool
    package let keepAliveRequested: Bool
    /// `Connection` names fields other than close/keep-alive: they must be removed when forwarding.
    package let nominatesOtherFields: Bool
    package let expectsContinue: Bool
    /// `Connection: upgrade` with `Upgrade: websocket` on an HTTP/1.1 GET (RFC 6455 §4.1).
    package let upgradesToWebSocket: Bool
    /// An `Idempotency-Key` field: the client says the request may be sent again safely.
    package let hasIdempotencyKey: Bool

    package init(
        bytes: [UInt8],
        method: HTTPMethod,
        methodRange: Range<Int>,
        target: Range<Int>,
        targetForm: RequestTargetForm,
        version: HTTPVersion,
        fields: [HTTPField],
        framing: RequestFraming,
        hostField: Int?,
        hostAuthority: Authority?,
        connectionClose: Bool,
        keepAliveRequested: Bool,
        nominatesOtherFields: Bool,
        expectsContinue: Bool,
        upgradesToWebSocket: Bool,
        hasIdempotencyKey: Bool
    ) {
        self.bytes = bytes
        self.method = method
        self.methodRange = methodRange
        self.target = target
        self.targetForm = targetForm
        self.version = version
        self.fields = fields
        self.framing = framing
        self.hostField = hostField
        self.hostAuthority = hostAuthority
        self.connectionClose = connectionClose
        self.keepAliveRequested = keepAliveRequested
        self.nominatesOtherFields = nominatesOtherFields
        self.expectsContinue = expectsContinue
        self.upgradesToWebSocket = upgradesToWebSocket
        self.hasIdempotencyKey = hasIdempotencyKey
    }

    /// Whether sending the request twice cannot act twice: an idempotent method (RFC 9110 §9.2.2) or
    /// an `Idempotency-Key`.
    package var isSafeToResend: Bool { self.method.isIdempotent || self.hasIdempotencyKey }

    /// Whether the client wants the connection kept open after this exchange (RFC 9112 §9.3).
    package var wantsKeepAlive: Bool {
        switch self.version {
        case .http11: !self.connectionClose
        case .http10: self.keepAliveRequested && !self.connectionClose
        }
    }
}

/// Public, with a public inlinable `==`, as `HTTPVersion` is: compared on every request from the
/// proxy's module.
public enum RequestFraming: Equatable, Sendable {
    case none
    case contentLength(Int)
    case chunked

    @inlinable
    public static func == (lhs: RequestFraming, rhs: RequestFraming) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none), (.chunked, .chunked): true
        case (.contentLength(let left), .contentLength(let right)): left == right
        case (.none, _), (.contentLength, _), (.chunked, _): false
        }
    }

    @inlinable
    public static func != (lhs: RequestFraming, rhs: RequestFraming) -> Bool { !(lhs == rhs) }
}

package enum RequestTargetForm: Equatable, Sendable {
    /// `/path?query`
    case origin
    /// `http://host:port/path?query`
    case absolute(AbsoluteTarget)
    /// `host:port`, for CONNECT.
    case authority(Authority)
    /// `*`, for OPTIONS.
    case asterisk
}

package struct AbsoluteTarget: Equatable, Sendable {
    package var isHTTPS: Bool
    package var authority: Range<Int>
    package var parsedAuthority: Authority
    /// Path and query; empty or starting with `?` when the URI had no path (forwarded as `/…`).
    package var pathAndQuery: Range<Int>
}

func forEachListElementIgnoringErrors(
    _ bytes: UnsafeRawBufferPointer,
    _ value: Range<Int>,
    _ body: (Range<Int>) -> Void
) {
    try? forEachListElement(bytes, value) { element in body(element) }
}

/// Heads are equal when their bytes are: everything else is parsed from them.
extension RequestHead: Equatable {
    package static func == (lhs: RequestHead, rhs: RequestHead) -> Bool { lhs.bytes == rhs.bytes }
}
