import BearerCore

/// A JSON request body with `{{name}}` placeholders (`token_body`, `login_body`).
///
/// Each placeholder is replaced by the JSON-escaped value of a setting, so a password holding a quote
/// or a backslash cannot break out of its string (or inject a field). The template is checked once,
/// at load: unknown names and text that is not JSON once filled in are configuration errors, not
/// requests an endpoint refuses later.
package struct JSONTemplate: Equatable, Sendable {
    package let text: String
    /// The names it uses, in order of first appearance.
    package let placeholders: [String]

    /// The settings a template may name.
    package static let names = [Key.refreshToken, .username, .password, .clientID, .clientSecret, .scope].map(\.name)

    package static let defaultTokenBody = JSONTemplate(
        checked: #"{"refresh_token": "{{refresh_token}}"}"#,
        placeholders: ["refresh_token"]
    )
    package static let defaultLoginBody = JSONTemplate(
        checked: #"{"username": "{{username}}", "password": "{{password}}"}"#,
        placeholders: ["username", "password"]
    )

    private init(checked text: String, placeholders: [String]) {
        self.text = text
        self.placeholders = placeholders
    }

    /// Checks `text`; returns what is wrong in a sentence otherwise.
    package static func parse(_ text: String) -> Result<JSONTemplate, JSONTemplateError> {
        var names: [String] = []
        for piece in Self.pieces(text) {
            guard case .placeholder(let name) = piece else { continue }
            guard Self.names.contains(name) else {
                return .failure(
                    JSONTemplateError(
                        "unknown placeholder {{\(name)}} (expected one of \(Self.names.map { "{{\($0)}}" }.joined(separator: ", ")))"
                    )
                )
            }
            if !names.contains(name) { names.append(name) }
        }
        let template = JSONTemplate(checked: text, placeholders: names)
        let sample = template.render { _ in "x" }
        guard JSONText.object(sample) != nil else {
            return .failure(
                JSONTemplateError(
                    #"is not a JSON object once its placeholders are filled in (put them inside quotes: "{{refresh_token}}")"#
                )
            )
        }
        return .success(template)
    }

    /// The body: each placeholder replaced by the JSON-escaped `value(name)`, or by nothing when nil.
    /// Secret values are revealed here, on their way to the endpoint only.
    package func render(_ value: (String) -> String?) -> [UInt8] {
        var output = ""
        for piece in Self.pieces(self.text) {
            switch piece {
            case .literal(let text): output += text
            case .placeholder(let name): output += jsonEscaped(value(name) ?? "")
            }
        }
        return Array(output.utf8)
    }

    /// The template for `--check`: a string value that is anything but placeholders may be a secret
    /// written into the template by hand, so it shows as `<redacted>`; keys and placeholders show.
    package var maskedDescription: String {
        var output = ""
        var rest = Substring(self.text)
        while let quote = rest.firstIndex(of: "\"") {
            output += rest[..<quote]
            rest = rest[rest.index(after: quote)...]
            var end = rest.startIndex
            while end < rest.endIndex && rest[end] != "\"" {
                end =
                    rest[end] == "\\" && rest.index(after: end) < rest.endIndex
                    ? rest.index(end, offsetBy: 2) : rest.index(after: end)
            }
            let content = rest[..<min(end, rest.endIndex)]
            rest = end < rest.endIndex ? rest[rest.index(after: end)...] : ""
            let isKey = rest.first(where: { !$0.isWhitespace }) == ":"
            let isOnlyPlaceholders = Self.pieces(String(content)).allSatisfy {
                if case .literal(let text) = $0 { return text.isEmpty }
                return true
            }
            output += "\"" + (isKey || isOnlyPlaceholders ? String(content) : "<redacted>") + "\""
        }
        return output + rest
    }

    private enum Piece {
        case literal(String)
        case placeholder(String)
    }

    /// Splits at `{{name}}` (blanks inside the braces allowed).
    private static func pieces(_ text: String) -> [Piece] {
        var pieces: [Piece] = []
        var rest = Substring(text)
        while let open = rest.firstRange(of: "{{"), let close = rest[open.upperBound...].firstRange(of: "}}") {
            pieces.append(.literal(String(rest[..<open.lowerBound])))
            pieces.append(.placeholder(rest[open.upperBound..<close.lowerBound].trimmingBlanks()))
            rest = rest[close.upperBound...]
        }
        pieces.append(.literal(String(rest)))
        return pieces
    }
}

package struct JSONTemplateError: Error, Equatable, Sendable {
    package var description: String
    init(_ description: String) { self.description = description }
}

/// `text` as the inside of a JSON string (RFC 8259 §7): quote, backslash and control characters escaped.
func jsonEscaped(_ text: String) -> String {
    var escaped = ""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": escaped += "\\\""
        case "\\": escaped += "\\\\"
        case "\n": escaped += "\\n"
        case "\r": escaped += "\\r"
        case "\t": escaped += "\\t"
        case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
            escaped += "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4)
        default: escaped.unicodeScalars.append(scalar)
        }
    }
    return escaped
}
