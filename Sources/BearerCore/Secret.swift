/// A value that must never be printed: access tokens, refresh tokens, client secrets, passwords.
///
/// Every way Swift turns a value into text (`description`, `debugDescription`, string interpolation,
/// `dump`, `Mirror`) yields `<redacted>`, so a secret that slips into a log line or an error message
/// leaks nothing. The only way to the value is `reveal()`, which is easy to grep for.
package struct Secret<Value: Sendable & Equatable>: Sendable, Equatable {
    private let value: Value

    package init(_ value: Value) {
        self.value = value
    }

    package func reveal() -> Value {
        self.value
    }
}

extension Secret: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package var description: String { "<redacted>" }
    package var debugDescription: String { "<redacted>" }
    package var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
