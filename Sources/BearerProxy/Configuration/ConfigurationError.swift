/// A configuration mistake, said in one line that names the place, the key, and what was expected.
///
/// Values of secret keys are never repeated in the message.
package struct ConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `proxy.conf:12`, `command line (--listen)`, or a file name alone.
    package var place: String
    package var key: String?
    package var message: String

    package init(place: String, key: String?, message: String) {
        self.place = place
        self.key = key
        self.message = message
    }

    package var description: String {
        if let key { return "\(self.place): \(key): \(self.message)" }
        return "\(self.place): \(self.message)"
    }
}
