/// A dotted path into a JSON answer: `data.accessToken`, `result.tokens.0.value` (a number indexes
/// an array). Set by `token_field`, `refresh_token_field` and `expires_field`.
package struct JSONFieldPath: Equatable, Sendable, CustomStringConvertible {
    package let components: [String]

    /// Nil when a component is empty or holds anything but letters, digits, `_` and `-`.
    package init?(_ text: String) {
        let components = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let isValid = components.allSatisfy { component in
            !component.isEmpty
                && component.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
        }
        guard isValid else { return nil }
        self.components = components
    }

    package var description: String { self.components.joined(separator: ".") }

    /// The value at this path in a parsed JSON value, or nil when any step is missing.
    package func value(in json: Any) -> Any? {
        var current: Any = json
        for component in self.components {
            if let object = current as? [String: Any], let next = object[component] {
                current = next
            } else if let array = current as? [Any], let index = Int(component), array.indices.contains(index) {
                current = array[index]
            } else {
                return nil
            }
        }
        return current
    }
}
