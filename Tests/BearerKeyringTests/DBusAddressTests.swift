import BearerKeyring
import Testing

@Suite struct DBusAddressTests {
    /// The first unix socket among the entries, path or abstract, percent-decoded; other keys and
    /// transports passed over.
    @Test(arguments: [
        ("unix:path=/run/user/1000/bus", DBusAddress.path("/run/user/1000/bus")),
        ("unix:path=/tmp/x,guid=0123abcd", .path("/tmp/x")),
        ("unix:abstract=/tmp/dbus-AbC,guid=1", .abstract("/tmp/dbus-AbC")),
        ("tcp:host=localhost,port=1;unix:path=/a%20b", .path("/a b")),
        ("unix:guid=1,abstract=name", .abstract("name")),
    ])
    func socketAddressesAreRead(_ text: String, _ expected: DBusAddress) throws {
        #expect(try DBusAddress.parse(text) == expected)
    }

    /// No variable (or an empty one) is no session bus; one naming no socket we speak is an error
    /// that says which transports are spoken.
    @Test func noBusOrNoUsableSocket() throws {
        #expect(try DBusAddress.sessionBus(environment: [:]) == nil)
        #expect(try DBusAddress.sessionBus(environment: ["DBUS_SESSION_BUS_ADDRESS": ""]) == nil)
        for text in ["unix:tmpdir=/tmp", "tcp:host=localhost,port=4", "launchd:env=X", "unix:path="] {
            #expect(throws: DBusAddress.ParseError.self) { try DBusAddress.parse(text) }
        }
        #expect(
            try DBusAddress.sessionBus(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/b"]) == .path("/b")
        )
    }
}
