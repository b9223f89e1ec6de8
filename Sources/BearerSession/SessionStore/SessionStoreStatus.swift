/// The store as an operator sees it.
package struct SessionStoreStatus: Sendable {
    /// The store's URL with its password as `<redacted>`.
    package var store: String
    package var name: String
    package var state = "connecting"
    package var isSubscribed = false
    /// The store's generation this proxy last saw.
    package var generation = 0
    package var lastError: String?
    /// Commands by kind (`operationNames`) and their failures.
    package var operations: [String: Int] = [:]
    package var errors: [String: Int] = [:]

    init(store: String, name: String) {
        self.store = store
        self.name = name
    }

    /// The kinds of commands the fleet protocol sends (bounded metric labels).
    package static let operationNames = ["lock", "read", "write", "release"]
}
