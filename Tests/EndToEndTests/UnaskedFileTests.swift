import Foundation
import Testing

/// `bearer-proxy ca`, `env` and `--check` create no file the config does not ask them to create
/// (issue 33): loading a config writes nothing, so a DPoP key that does not exist yet stays unmade
/// until the proxy starts or `login` runs. Each command runs with a fresh HOME and XDG folders, and
/// the tree under them (with the config's folder) is compared before and after.
@Suite struct UnaskedFileTests {
    /// A fresh home: HOME and every XDG base folder, empty, under one root.
    struct FreshHome {
        let root: String

        init() throws {
            self.root = temporaryDirectory()
            for folder in ["home", "config", "data", "state", "cache"] {
                try FileManager.default.createDirectory(
                    atPath: self.root + "/" + folder,
                    withIntermediateDirectories: true
                )
            }
        }

        var environment: [String: String] {
            [
                "HOME": self.root + "/home", "XDG_CONFIG_HOME": self.root + "/config",
                "XDG_DATA_HOME": self.root + "/data", "XDG_STATE_HOME": self.root + "/state",
                "XDG_CACHE_HOME": self.root + "/cache",
            ]
        }

        /// Every file and folder under the root, relative to it.
        var tree: Set<String> {
            Set(FileManager.default.subpaths(atPath: self.root) ?? [])
        }
    }

    /// A default session and a named one, both with dpop on and no key file yet (their default
    /// places, in the fresh XDG_DATA_HOME), a fixed port for `env`.
    static func config(in home: FreshHome) throws -> String {
        let path = home.root + "/config/proxy.conf"
        let text = """
            listen = 127.0.0.1:18089
            upstream = http://127.0.0.1:9/api
            token_url = http://127.0.0.1:9/token
            client_id = c
            client_secret = s
            dpop = on

            [session other]
            mount = /other
            upstream = http://127.0.0.2:9/other
            token_url = http://127.0.0.1:9/token
            client_id = c
            client_secret = s
            dpop = on

            """
        try #require(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        return path
    }

    @Test(arguments: [["--check"], ["env"]])
    func aCommandThatOnlyReadsCreatesNothing(_ command: [String]) throws {
        let home = try FreshHome()
        let config = try Self.config(in: home)
        let before = home.tree
        let arguments = command == ["--check"] ? ["--config", config, "--check"] : command + ["--config", config]
        let result = try ProxyProcess.run(arguments, environment: home.environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(home.tree.subtracting(before).sorted() == [], "\(command)")
    }

    /// `ca` makes the CA it is asked for (in ca_dir's default, under XDG_DATA_HOME), and nothing else.
    @Test func caCreatesTheCAAndNothingElse() throws {
        let home = try FreshHome()
        let config = try Self.config(in: home)
        let before = home.tree
        let result = try ProxyProcess.run(["ca", "--config", config], environment: home.environment)
        #expect(result.status == 0, "\(result.stderr)")
        let created = home.tree.subtracting(before)
        #expect(created.contains("data/bearer-proxy/ca/ca.pem"), "\(created.sorted())")
        let unasked = created.filter { $0 != "data/bearer-proxy" && !$0.hasPrefix("data/bearer-proxy/ca") }
        #expect(unasked.sorted() == [])
    }
}
