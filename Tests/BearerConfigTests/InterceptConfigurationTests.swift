import Foundation
import Testing

@testable import BearerConfig

@Suite struct InterceptConfigurationTests {
    func build(_ text: String) throws -> Configuration {
        try Configuration.build(
            from: try ConfigFileParser.parse(text, fileName: "p.conf", environment: ["HOME": "/home/u"])
        )
    }

    @Test(arguments: [("on", true), ("off", false), ("true", true), ("no", false)])
    func tlsInterceptIsOnOrOff(value: String, isEnabled: Bool) throws {
        #expect(try self.build("tls_intercept = \(value)").intercept.isEnabled == isEnabled)
    }

    @Test func theDefaultsAreOffAndTheXDGDataFolder() throws {
        let source = ConfigurationSource(
            overrides: [
                ConfigEntry(key: "upstream", value: "https://api.example.com", place: "command line (--upstream)")
            ]
        )
        let xdg = try ConfigurationLoader.load(source, environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/u"])
        #expect(!xdg.intercept.isEnabled)
        #expect(xdg.intercept.caDirectory == "/data/bearer-proxy/ca")
        // The XDG spec ignores a relative XDG_DATA_HOME.
        let home = try ConfigurationLoader.load(source, environment: ["XDG_DATA_HOME": "data", "HOME": "/home/u"])
        #expect(home.intercept.caDirectory == "/home/u/.local/share/bearer-proxy/ca")
        #expect(try ConfigurationLoader.load(source, environment: [:]).intercept.caDirectory == nil)
    }

    @Test func caDirIsAnAbsolutePathOrUnderHome() throws {
        let home = String(cString: getenv("HOME"))
        #expect(try self.build("ca_dir = /srv/ca/").intercept.caDirectory == "/srv/ca")
        #expect(try self.build("ca_dir = ~/ca").intercept.caDirectory == home + "/ca")
    }

    @Test(arguments: [
        ("tls_intercept = maybe", "p.conf:1: tls_intercept: expected on or off, got 'maybe'"),
        ("ca_dir = ca", "p.conf:1: ca_dir: expected an absolute path (or ~/…), got 'ca'"),
        ("ca_dir = ", "p.conf:1: ca_dir: expected an absolute path (or ~/…), got ''"),
    ])
    func badValuesNameTheKey(text: String, message: String) {
        do {
            _ = try self.build(text)
            Issue.record("expected an error")
        } catch {
            #expect("\(error)" == message)
        }
    }

    @Test func checkShowsBothKeys() throws {
        var config = try self.build("tls_intercept = on\nca_dir = /srv/ca")
        var report = ConfigurationLoader.report(config)
        #expect(report.contains("\ntls_intercept = on\n"))
        #expect(report.contains("\nca_dir = /srv/ca\n"))
        config.intercept.caDirectory = nil
        report = ConfigurationLoader.report(config)
        #expect(report.contains("\nca_dir = (none: set ca_dir, HOME or XDG_DATA_HOME)\n"))
    }
}
