import Foundation
import Testing

@testable import BearerConfig

/// `proxy.conf.example`: what a new user copies first. It must be a working proxy as it stands
/// (upstream and a static token, nothing that reaches for a token endpoint), and document every key.
@Suite struct ExampleConfigTests {
    static let text: String = {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("proxy.conf.example").path
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }()

    /// `(key, value, the comment paragraph above it)` for each `key = value` and `# key = value` line.
    static var documentedKeys: [(key: String, value: String, comment: String, isActive: Bool)] {
        var result: [(String, String, String, Bool)] = []
        var paragraph: [String] = []
        for line in Self.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let isActive = !line.hasPrefix("#") && line.contains(" = ")
            let commented = line.hasPrefix("# ") ? String(line.dropFirst(2)) : nil
            if let setting = isActive ? line : commented, let equals = setting.range(of: " = "),
                setting[..<equals.lowerBound].allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "_" })
            {
                let key = String(setting[..<equals.lowerBound])
                result.append((key, String(setting[equals.upperBound...]), paragraph.joined(separator: " "), isActive))
            } else if line.hasPrefix("#") {
                paragraph.append(line)
            } else {
                paragraph = []
            }
        }
        return result
    }

    @Test func isTheSmallestWorkingConfigurationAsItStands() throws {
        let active = Self.documentedKeys.filter(\.isActive)
        #expect(active.map(\.key) == ["upstream", "access_token"], "only upstream and a static token are switched on")
        let (config, found) = ConfigurationLoader.read(
            Self.text,
            fileName: "proxy.conf",
            environment: ["API_TOKEN": "tok-from-env"]
        )
        #expect(found.errors.isEmpty, "\(found.errors)")
        #expect(config.accessToken?.reveal() == "tok-from-env")
        #expect(!config.canRefresh, "a static token: nothing asks a token endpoint, so a 401 reaches the client")
        // What is left for the user to do, and nothing else.
        #expect(
            config.warnings.map(\.description) == [
                "proxy.conf:19: upstream: api.example.com is a placeholder (example.com is reserved for documentation): put the real host here"
            ]
        )
    }

    /// The commented two-API example (the `#     ` lines from its first section), switched on below the
    /// file as it stands: two named sessions beside the default one, no error, the routes it promises.
    @Test func theTwoAPIExampleWorksAsWritten() throws {
        let lines = Self.text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("#     [session ") })
        let end = try #require(lines[start...].firstIndex { $0.hasPrefix("# Then curl") })
        let example = lines[start..<end].filter { $0.hasPrefix("#     ") }.map { $0.dropFirst(6) }
            .joined(separator: "\n")
        #expect(example.contains("[session billing]") && example.contains("[session shop]"))
        let (config, found) = ConfigurationLoader.read(
            Self.text + "\n" + example + "\n",
            fileName: "proxy.conf",
            environment: ["API_TOKEN": "t", "BILLING_CLIENT_SECRET": "b", "SHOP_PASSWORD": "p"]
        )
        #expect(found.errors.isEmpty, "\(found.errors)")
        #expect(config.namedSessions.map(\.name) == ["billing", "shop"])
        let billing = try #require(config.session(named: "billing"))
        #expect(billing.mount == "/billing" && billing.upstream?.description == "https://billing.example.com/v1")
        #expect(billing.canRefresh && billing.clientSecret?.reveal() == "b")
        let shop = try #require(config.session(named: "shop"))
        #expect(shop.listen == [.hostPort(host: "127.0.0.1", port: 8081)] && shop.tokenFormat == .json)
        #expect(shop.password?.reveal() == "p")
    }

    @Test func withoutTheTokenVariableTheErrorNamesIt() {
        let (_, found) = ConfigurationLoader.read(Self.text, fileName: "proxy.conf", environment: [:])
        #expect(
            found.sortedErrors.map(\.description) == [
                "proxy.conf:26: access_token: environment variable API_TOKEN is not set"
            ]
        )
    }

    @Test func documentsEveryKeyOnceWithItsDefault() {
        let documented = Self.documentedKeys
        for key in Configuration.keys {
            let lines = documented.filter { $0.key == key.name }
            #expect(lines.count == 1, "proxy.conf.example documents \(key.name) \(lines.count) times")
            guard let line = lines.first else { continue }
            #expect(!line.comment.isEmpty, "\(key.name) has no explanation")
            // The value shown is the default (as --check prints it), or the explanation names the default.
            let defaults = Configuration()
            let shownDefault = key.show(defaults.process, defaults.defaultSession)
            var written = defaults
            let isDefault =
                key.apply(line.value, to: &written.process, &written.sessions[0]) == nil
                && key.show(written.process, written.defaultSession) == shownDefault
            #expect(
                isDefault || line.comment.contains("Default") || line.comment.contains("Required"),
                "\(key.name) = \(line.value): neither its default (\(shownDefault ?? "none")) nor a 'Default:' note"
            )
        }
        #expect(documented.count == Configuration.keys.count, "a documented key that does not exist")
    }

    /// Uncommenting any one line (beside the upstream) gives a value its key accepts.
    @Test func everyDocumentedValueParses() {
        let environment = [
            "API_TOKEN": "t", "CLIENT_SECRET": "s", "API_PASSWORD": "p", "REFRESH_TOKEN": "r", "REDIS_PASSWORD": "rp",
        ]
        for line in Self.documentedKeys where line.key != "upstream" {
            var diagnostics = ConfigurationDiagnostics()
            // A key of [session NAME] sections only is tried in one.
            let isNamedSessionKey = Configuration.keys.first { $0.name == line.key }?.scope == .namedSession
            let section = isNamedSessionKey ? "[session example]\nupstream = https://api.example.com\n" : ""
            let entries = ConfigFileParser.parse(
                "\(section)\(line.key) = \(line.value)",
                fileName: "proxy.conf",
                environment: environment,
                into: &diagnostics
            )
            _ = Configuration.build(from: entries, into: &diagnostics)
            #expect(diagnostics.errors.isEmpty, "\(line.key) = \(line.value): \(diagnostics.errors)")
        }
    }
}
