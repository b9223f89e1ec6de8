/// A configuration mistake, said in one line that names the place, the key, and what was expected.
///
/// Values of secret keys are never repeated in the message.
package struct ConfigurationError: ConfigurationFinding, Error, Equatable, Sendable {
    /// `proxy.conf:12`, `command line (--listen)`, or a file name alone.
    package var place: String
    package var key: String?
    package var message: String

    package init(place: String, key: String?, message: String) {
        self.place = place
        self.key = key
        self.message = message
    }
}
