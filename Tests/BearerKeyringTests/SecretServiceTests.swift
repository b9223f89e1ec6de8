import BearerCore
import BearerKeyring
import BearerTestSupport
import Testing

private let attributes = [("application", "bearer-proxy"), ("session", "work"), ("kind", "refresh_token")]
private let lookup = ["lookup", "application", "bearer-proxy", "session", "work", "kind", "refresh_token"]

private func secret(_ text: String) -> Secret<[UInt8]> { Secret(Array(text.utf8)) }

/// `operation` fails with `locked`, whose line names both fixes.
private func expectLocked(_ operation: () throws(KeyringError) -> Void) {
    do throws(KeyringError) {
        try operation()
        Issue.record("a locked keyring was used")
    } catch {
        guard case .locked = error else {
            Issue.record("not the locked error: \(error)")
            return
        }
        #expect(error.description.contains("unlock the keyring"))
        #expect(error.description.contains("credential_store = file"))
    }
}

/// The Secret Service client against a real gnome-keyring-daemon on a private bus, with libsecret's
/// `secret-tool` reading what it wrote and writing what it reads.
@Suite(.requires(.dbusDaemon), .requires(.gnomeKeyring), .requires(.secretTool))
struct SecretServiceTests {
    /// A written item is found by secret-tool's lookup on the same attributes, with the label given.
    @Test func writtenItemsAreReadBySecretTool() throws {
        let bus = try SessionBus()
        try bus.startKeyring()
        let items = SecretServiceItems(address: bus.address, timeout: .seconds(5))
        try items.write(secret("rt-one"), label: "bearer-proxy: work refresh token", attributes: attributes)
        let read = try bus.secretTool(lookup)
        #expect(read.status == 0)
        #expect(read.standardOutput == "rt-one")
        let search = try bus.secretTool(["search", "--all", "application", "bearer-proxy"])
        #expect(search.standardOutput.contains("label = bearer-proxy: work refresh token"))
        #expect((search.standardOutput + search.standardError).contains("attribute.kind = refresh_token"))
    }

    /// Writing again replaces the item, also when an extra attribute (the issuer) changed: one item,
    /// the newest secret.
    @Test func writingAgainReplacesTheItem() throws {
        let bus = try SessionBus()
        try bus.startKeyring()
        let items = SecretServiceItems(address: bus.address, timeout: .seconds(5))
        try items.write(secret("rt-one"), label: "l", attributes: attributes, extra: [("issuer", "https://a")])
        try items.write(secret("rt-two"), label: "l", attributes: attributes, extra: [("issuer", "https://a")])
        try items.write(secret("rt-three"), label: "l", attributes: attributes, extra: [("issuer", "https://b")])
        let search = try bus.secretTool(["search", "--all", "application", "bearer-proxy"])
        #expect(search.standardOutput.split(separator: "\n").filter { $0.hasPrefix("label = ") }.count == 1)
        #expect(try bus.secretTool(lookup).standardOutput == "rt-three")
        #expect(try items.read(attributes)?.reveal() == Array("rt-three".utf8))
    }

    /// What secret-tool stored is what the client reads; nothing stored is nil.
    @Test func itemsSecretToolWroteAreRead() throws {
        let bus = try SessionBus()
        try bus.startKeyring()
        let items = SecretServiceItems(address: bus.address, timeout: .seconds(5))
        #expect(try items.read(attributes) == nil)
        let store = try bus.secretTool(["store", "--label", "by hand"] + lookup.dropFirst(), input: "rt-by-hand")
        #expect(store.status == 0, "\(store.standardError)")
        #expect(try items.read(attributes)?.reveal() == Array("rt-by-hand".utf8))
    }

    /// Delete removes the item (secret-tool finds nothing) and says whether there was one.
    @Test func deleteRemovesTheItem() throws {
        let bus = try SessionBus()
        try bus.startKeyring()
        let items = SecretServiceItems(address: bus.address, timeout: .seconds(5))
        try items.write(secret("rt-one"), label: "l", attributes: attributes)
        #expect(try items.delete(attributes))
        #expect(try bus.secretTool(lookup).status != 0)
        #expect(try !items.delete(attributes))
    }

    /// A locked keyring whose unlock needs a prompt is the named error (unlock it, or use the file),
    /// at once: no prompt is waited for.
    @Test func aLockedKeyringIsTheNamedError() throws {
        let bus = try SessionBus()
        try bus.startKeyring()
        let items = SecretServiceItems(address: bus.address, timeout: .seconds(5))
        try items.write(secret("rt-one"), label: "l", attributes: attributes)
        try bus.lockKeyring()
        let started = Instant.now()
        expectLocked { () throws(KeyringError) in _ = try items.read(attributes) }
        expectLocked { () throws(KeyringError) in try items.write(secret("rt-two"), label: "l", attributes: attributes)
        }
        #expect(Instant.now() - started < .seconds(4))
    }

    /// A bus without a Secret Service: the service is unavailable, and says so.
    @Test func aBusWithoutAServiceIsNoService() throws {
        let bus = try SessionBus()
        let items = SecretServiceItems(address: bus.address, timeout: .seconds(1))
        #expect(items.unavailability() == .noService)
        #expect(throws: KeyringError.noService) { try items.read(attributes) }
    }

    /// A bus that never answers is unavailable within the bound.
    @Test func aSilentBusIsUnavailableWithinTheBound() throws {
        let silent = try SilentSocket()
        let items = SecretServiceItems(address: .path(silent.path), timeout: .milliseconds(500))
        let started = Instant.now()
        guard case .bus(.timedOut) = items.unavailability() else {
            Issue.record("a silent bus was not a timeout")
            return
        }
        #expect(Instant.now() - started < .seconds(2))
    }
}
