/// A session's `allow` and `deny` rules: which requests may use its token (docs/untrusted-programs.md).
///
/// With `allow` set, a request none of its patterns matches is refused; a request a `deny` pattern
/// matches is refused whatever `allow` says. Both compare the method case-sensitively (RFC 9110
/// §9.1) and the path as `RequestPath` normalises it.
package struct RequestRules: Equatable, Sendable {
    /// Nil: everything is allowed (unless denied).
    package var allow: [RequestPattern]?
    package var deny: [RequestPattern] = []

    package init(allow: [RequestPattern]? = nil, deny: [RequestPattern] = []) {
        self.allow = allow
        self.deny = deny
    }

    /// Whether there is a rule at all: without one no request is looked at.
    package var isEmpty: Bool { self.allow == nil && self.deny.isEmpty }

    /// Nil when `method path` may go, else the rule that refuses it: `allow = …` (the whole list)
    /// or `deny = PATTERN` (the pattern that matched).
    package func refusal(method: String, path: RequestPath) -> String? {
        if let denied = self.deny.first(where: { $0.matches(method: method, path: path) }) {
            return "deny = \(denied)"
        }
        if let allow = self.allow, !allow.contains(where: { $0.matches(method: method, path: path) }) {
            return "allow = " + allow.map(\.description).joined(separator: ", ")
        }
        return nil
    }
}

/// One `METHOD PATH` pattern: `GET /v1/*`, `* /healthz`, `GET /v1/**`.
///
/// `*` as the method is any method; in the path `*` is one segment and `**` any number of them (none
/// too). A segment holding an encoded slash never matches a wildcard, only its own spelling.
package struct RequestPattern: Equatable, Sendable, CustomStringConvertible {
    enum Segment: Equatable, Sendable {
        case literal(String)
        case one
        case any
    }

    /// Nil: any method.
    let method: String?
    let segments: [Segment]
    /// As written, for messages and `--check`.
    package let description: String

    /// The methods a pattern names without a did-you-mean: RFC 9110's and PATCH.
    static let knownMethods = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

    /// `text` as a pattern, or what is wrong with it.
    package static func parse(_ text: String) -> Result<RequestPattern, RequestPatternError> {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count == 2 else { return .failure(.notMethodAndPath(text)) }
        let method = String(parts[0])
        let path = String(parts[1])
        if method != "*" && !Self.knownMethods.contains(method) {
            let suggestion =
                Self.knownMethods.contains(method.uppercased())
                ? method.uppercased() : closestName(to: method, among: Self.knownMethods)
            if let suggestion { return .failure(.unknownMethod(method, suggestion: suggestion)) }
            guard method.allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "-" || $0 == "_") }) else {
                return .failure(.unknownMethod(method, suggestion: nil))
            }
        }
        guard path.hasPrefix("/"), !path.contains("?") else { return .failure(.badPath(text)) }
        let segments = RequestPath(path).segments.map { segment -> Segment in
            switch segment {
            case "*": .one
            case "**": .any
            default: .literal(segment)
            }
        }
        return .success(
            RequestPattern(method: method == "*" ? nil : method, segments: segments, description: "\(method) \(path)")
        )
    }

    package func matches(method: String, path: RequestPath) -> Bool {
        if let expected = self.method, expected != method { return false }
        return Self.matches(self.segments[...], path.segments[...])
    }

    private static func matches(_ pattern: ArraySlice<Segment>, _ path: ArraySlice<String>) -> Bool {
        guard let first = pattern.first else { return path.isEmpty }
        switch first {
        case .literal(let literal):
            return path.first == literal && Self.matches(pattern.dropFirst(), path.dropFirst())
        case .one:
            guard let segment = path.first, !RequestPath.containsEncodedSlash(segment) else { return false }
            return Self.matches(pattern.dropFirst(), path.dropFirst())
        case .any:
            var rest = path
            while true {
                if Self.matches(pattern.dropFirst(), rest) { return true }
                guard let segment = rest.first, !RequestPath.containsEncodedSlash(segment) else { return false }
                rest = rest.dropFirst()
            }
        }
    }
}

/// A pattern `allow` or `deny` cannot read.
package enum RequestPatternError: Error, Equatable, Sendable, CustomStringConvertible {
    case notMethodAndPath(String)
    case unknownMethod(String, suggestion: String?)
    case badPath(String)

    package var description: String {
        switch self {
        case .notMethodAndPath(let text):
            "invalid pattern '\(text)' (expected METHOD PATH, e.g. GET /v1/*)"
        case .unknownMethod(let method, let suggestion?):
            "unknown method '\(method)' (did you mean '\(suggestion)'? methods are case-sensitive)"
        case .unknownMethod(let method, nil):
            "invalid method '\(method)' (expected a method such as GET, or * for any)"
        case .badPath(let text):
            "invalid path in '\(text)' (expected a path starting with /, without a query; * is one segment, ** any number)"
        }
    }
}
