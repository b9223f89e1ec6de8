import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerConfig

@Suite struct DefaultConfigFileTests {
    @Test(arguments: [
        (["XDG_CONFIG_HOME": "/x/config", "HOME": "/home/u"], "/x/config/bearer-proxy/proxy.conf"),
        (["XDG_CONFIG_HOME": "", "HOME": "/home/u"], "/home/u/.config/bearer-proxy/proxy.conf"),
        (["XDG_CONFIG_HOME": "relative/config", "HOME": "/home/u"], "/home/u/.config/bearer-proxy/proxy.conf"),
        (["HOME": "/home/u"], "/home/u/.config/bearer-proxy/proxy.conf"),
        ([:], nil),
    ])
    func followsTheXDGBaseDirectorySpec(environment: [String: String], expected: String?) {
        #expect(DefaultConfigFile.path(environment: environment) == expected)
    }

    /// A home with `.config/bearer-proxy/proxy.conf` holding `text`, or nothing.
    func home(with text: String?) throws -> String {
        let home = try ScratchSpace.newDirectory("home")
        try FileManager.default.createDirectory(
            atPath: home + "/.config/bearer-proxy",
            withIntermediateDirectories: true
        )
        if let text {
            try text.write(toFile: home + "/.config/bearer-proxy/proxy.conf", atomically: true, encoding: .utf8)
        }
        return home
    }

    @Test func isReadWhenItExistsAndNeitherConfigNorDemoIsGiven() throws {
        let home = try self.home(with: "upstream = http://from-home.example\n")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let config = try ConfigurationLoader.load(ConfigurationSource(), environment: ["HOME": home])
        #expect(config.upstream?.description == "http://from-home.example")

        let demo = ConfigurationSource(isDemo: true)
        #expect(try ConfigurationLoader.load(demo, environment: ["HOME": home]).upstream == nil)

        let explicit = ConfigurationSource(
            configPath: "/dev/null",
            overrides: [ConfigEntry(key: "upstream", value: "http://flag.example", place: "command line")]
        )
        #expect(
            try ConfigurationLoader.load(explicit, environment: ["HOME": home]).upstream?.description
                == "http://flag.example"
        )
    }

    @Test func withoutAnyFileTheErrorNamesTheDefaultPath() throws {
        let home = try self.home(with: nil)
        defer { try? FileManager.default.removeItem(atPath: home) }
        #expect(
            throws: ConfigurationErrors([
                ConfigurationError(
                    place: "configuration",
                    key: "upstream",
                    message:
                        "required: no config file was given (--config FILE) and \(home)/.config/bearer-proxy/proxy.conf does not exist; pass --upstream URL, or try --demo"
                )
            ])
        ) {
            try ConfigurationLoader.load(ConfigurationSource(), environment: ["HOME": home])
        }
    }

    @Test func errorsInTheDefaultFileNameIt() throws {
        let home = try self.home(with: "upstream = http://h\nworkers = many\n")
        defer { try? FileManager.default.removeItem(atPath: home) }
        #expect(
            throws: ConfigurationErrors([
                ConfigurationError(
                    place: "\(home)/.config/bearer-proxy/proxy.conf:2",
                    key: "workers",
                    message: "expected a number from 1 to 256, got 'many'"
                )
            ])
        ) {
            try ConfigurationLoader.load(ConfigurationSource(), environment: ["HOME": home])
        }
    }
}
