import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `bearer-proxy ca` and a start with tls_intercept on, against the built binary.
@Suite struct InterceptCATests {
    /// A folder of its own for the CA, the config and the child's temporary files.
    let base: String = {
        let path = temporaryDirectory()
        try? FileManager.default.createDirectory(atPath: path + "/tmp", withIntermediateDirectories: true)
        return path
    }()
    var caDirectory: String { self.base + "/ca" }
    var rootFile: String { self.caDirectory + "/ca.pem" }

    func config(injectHosts: String, _ extra: String = "") -> String {
        let path = self.base + "/proxy-\(UInt32.random(in: 0...UInt32.max)).conf"
        let text = """
            listen = 127.0.0.1:0
            upstream = https://api.example.com
            inject_hosts = \(injectHosts)
            ca_dir = \(self.caDirectory)
            \(extra)

            """
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    func ca(
        _ arguments: [String],
        environment: [String: String] = [:]
    ) throws -> (status: Int32?, stdout: String, stderr: String) {
        var environment = environment
        environment["TMPDIR"] = environment["TMPDIR"] ?? self.base + "/tmp"
        return try ProxyProcess.run(["ca"] + arguments, environment: environment)
    }

    func text(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    @Test func caMakesTheCAOnceAndPrintsTheAbsolutePathOfCaPem() throws {
        let config = self.config(injectHosts: "api.example.com, 127.0.0.1")
        let first = try self.ca(["--config", config])
        #expect(first.status == 0)
        #expect(first.stdout == self.rootFile + "\n")
        #expect(
            first.stderr
                == "Made a new local CA in \(self.caDirectory) for api.example.com, 127.0.0.1: clients must trust its ca.pem.\n"
        )
        let root = self.text(self.rootFile)
        let second = try self.ca(["--config", config])
        #expect(second.status == 0)
        #expect(second.stdout == self.rootFile + "\n")
        #expect(second.stderr == "")
        #expect(self.text(self.rootFile) == root)
    }

    @Test func withoutCaDirTheCALivesUnderXDGDataHome() throws {
        let config = self.base + "/plain.conf"
        _ = FileManager.default.createFile(
            atPath: config,
            contents: Data("upstream = https://api.example.com\n".utf8)
        )
        let result = try self.ca(["--config", config], environment: ["XDG_DATA_HOME": self.base + "/data"])
        #expect(result.status == 0)
        #expect(result.stdout == self.base + "/data/bearer-proxy/ca/ca.pem\n")
    }

    /// Made by the binary, with its temporary files in a folder of the test's: no file anywhere there
    /// (nor in the system's temporary folder) holds the root's key; the one key in ca_dir is the
    /// intermediate's, mode 0600.
    @Test func noRootKeyIsOnDiskAfterTheBinaryMadeTheCA() throws {
        let result = try self.ca(["--config", self.config(injectHosts: "api.example.com")])
        #expect(result.status == 0)
        let root = try #require(CertificateInspection.Certificate(file: self.rootFile))
        let intermediate = try #require(CertificateInspection.Certificate(file: self.caDirectory + "/intermediate.pem"))
        let inFolder = CertificateInspection.privateKeyFiles(under: self.caDirectory)
        #expect(inFolder.map(\.path) == [self.caDirectory + "/intermediate-key.pem"])
        #expect(inFolder.allSatisfy { intermediate.isCertified(byKeyPEM: $0.text) })
        let scanned =
            inFolder + CertificateInspection.privateKeyFiles(under: self.base + "/tmp")
            + CertificateInspection.privateKeyFiles(under: NSTemporaryDirectory(), depth: 3)
        for (path, key) in scanned { #expect(!root.isCertified(byKeyPEM: key), "the root's key is in \(path)") }
        #expect(fileMode(self.caDirectory) == 0o700)
        #expect(fileMode(self.caDirectory + "/intermediate-key.pem") == 0o600)
        #expect(fileMode(self.rootFile) == 0o644)
        #expect(fileMode(self.caDirectory + "/intermediate.pem") == 0o644)
    }

    @Test func anInjectHostOutsideTheCAStopsTheStartUntilRenew() throws {
        // At log_level warn too: the line is said once in the CA's life, and clients cannot do without it.
        let config = self.config(injectHosts: "api.example.com", "tls_intercept = on\nlog_level = warn")
        let first = try ProxyProcess(["--config", config])
        #expect(first.waitUntilListening() != nil)
        first.signal(SIGTERM)
        #expect(first.waitForExit() == 0)
        #expect(
            first.standardError.contains(
                " info made a local CA; clients must trust its ca.pem ca_dir=\(self.caDirectory) permits=api.example.com trust_with=\"bearer-proxy ca --config \(config) --bundle\"\n"
            ),
            "\(first.standardError)"
        )
        let oldRoot = self.text(self.rootFile)

        let widened = self.config(injectHosts: "api.example.com, other.example.com", "tls_intercept = on")
        let refused = try ProxyProcess.run(["--config", widened])
        #expect(refused.status == 1)
        #expect(
            refused.stderr
                == "Error: inject host other.example.com is outside the local CA's name constraints (\(self.rootFile) permits DNS:api.example.com, IP:0.0.0.0/32, IP:::/128): the CA in that folder was made for other inject hosts (another config using it?): give this config a ca_dir of its own, or run `bearer-proxy ca --renew` to replace it with one for the current inject_hosts, then trust the new ca.pem\n"
        )
        #expect(self.text(self.rootFile) == oldRoot)

        let renewed = try self.ca(["--config", widened, "--renew"])
        #expect(renewed.status == 0)
        #expect(renewed.stdout == self.rootFile + "\n")
        #expect(
            renewed.stderr
                == "Made a new local CA in \(self.caDirectory) for api.example.com, other.example.com: clients must trust the new ca.pem, and running proxies be restarted.\n"
        )
        let root = try #require(CertificateInspection.Certificate(file: self.rootFile))
        let intermediate = try #require(CertificateInspection.Certificate(file: self.caDirectory + "/intermediate.pem"))
        #expect(self.text(self.rootFile) != oldRoot)
        #expect(intermediate.issuer == root.subject)
        #expect(intermediate.isCertified(byKeyPEM: self.text(self.caDirectory + "/intermediate-key.pem")))
        #expect(root.extensions["nameConstraints"]?.lines.contains("DNS:other.example.com") == true)

        let started = try ProxyProcess(["--config", widened])
        #expect(started.waitUntilListening() != nil)
        started.signal(SIGTERM)
        #expect(started.waitForExit() == 0)
        #expect(!started.standardError.contains("made a local CA"))
    }

    @Test func bundleIsTheSystemStoreThenCaPem() throws {
        let config = self.config(injectHosts: "api.example.com")
        let systemStore = self.base + "/system.pem"
        let systemText = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
        _ = FileManager.default.createFile(atPath: systemStore, contents: Data(systemText.utf8))
        let result = try self.ca(["--config", config, "--bundle"], environment: ["SSL_CERT_FILE": systemStore])
        #expect(result.status == 0)
        #expect(result.stdout == self.caDirectory + "/bundle.pem\n")
        #expect(self.text(self.caDirectory + "/bundle.pem") == systemText + "\n" + self.text(self.rootFile))
        #expect(fileMode(self.caDirectory + "/bundle.pem") == 0o644)

        // --renew rewrites the bundle with the new root.
        let renewed = try self.ca(["--config", config, "--renew"], environment: ["SSL_CERT_FILE": systemStore])
        #expect(renewed.status == 0)
        #expect(self.text(self.caDirectory + "/bundle.pem") == systemText + "\n" + self.text(self.rootFile))
    }

    @Test(.requires(.systemCAStore))
    func theDebianSystemStoreIsFoundWithoutSSLCertFile() throws {
        let system = "/etc/ssl/certs/ca-certificates.crt"
        var environment = ProcessInfo.processInfo.environment
        environment["SSL_CERT_FILE"] = nil
        let config = self.config(injectHosts: "api.example.com")
        let child = try ProxyProcess(
            ["ca", "--config", config, "--bundle"],
            environment: environment.merging(["TMPDIR": self.base + "/tmp"]) { $1 },
            inheritsEnvironment: false
        )
        #expect(child.waitForExit() == 0)
        #expect(self.text(self.caDirectory + "/bundle.pem") == self.text(system) + self.text(self.rootFile))
    }

    /// `ca` uses no secret: one whose variable is not set in this shell (the service's EnvironmentFile
    /// has it) is no error, nor is a value that is nothing but that variable. A variable in a key
    /// `ca` reads still must be set, and the proxy itself still needs the secret.
    @Test func anUnsetVariableInASecretKeyIsNoErrorButOneInTheUpstreamIs() throws {
        let config = self.config(
            injectHosts: "api.example.com",
            "access_token = ${E2E_CA_UNSET_TOKEN}\npassword = x${E2E_CA_UNSET_PASSWORD}\nlogin_body = ${E2E_CA_UNSET_BODY}"
        )
        let result = try self.ca(["--config", config, "--bundle"])
        #expect(result.status == 0)
        #expect(result.stdout == self.caDirectory + "/bundle.pem\n")
        #expect(
            result.stderr
                == "Made a new local CA in \(self.caDirectory) for api.example.com: clients must trust its ca.pem.\n"
        )
        let again = try self.ca(["--config", config])
        #expect(again.status == 0)
        #expect(again.stdout == self.rootFile + "\n")
        #expect(again.stderr == "")

        let unsetUpstream = self.base + "/unset-upstream.conf"
        _ = FileManager.default.createFile(
            atPath: unsetUpstream,
            contents: Data("upstream = ${E2E_CA_UNSET_API_URL}\nca_dir = \(self.caDirectory)\n".utf8)
        )
        let failed = try self.ca(["--config", unsetUpstream])
        #expect(failed.status == 1)
        #expect(failed.stdout == "")
        #expect(
            failed.stderr
                == "Error: \(unsetUpstream):1: upstream: environment variable E2E_CA_UNSET_API_URL is not set\n"
        )

        let proxy = try ProxyProcess.run(["--config", config])
        #expect(proxy.status == 1)
        #expect(
            proxy.stderr.split(separator: "\n").map(String.init) == [
                "Error: \(config):5: access_token: environment variable E2E_CA_UNSET_TOKEN is not set",
                "Error: \(config):6: password: environment variable E2E_CA_UNSET_PASSWORD is not set",
                "Error: \(config):7: login_body: environment variable E2E_CA_UNSET_BODY is not set",
            ]
        )
    }

    @Test func failuresAreOneLineAndExitOne() throws {
        let unwritable = temporaryFile("upstream = https://api.example.com\nca_dir = /proc/bearer-e2e-ca\n")
        let result = try self.ca(["--config", unwritable])
        #expect(result.status == 1)
        #expect(result.stdout == "")
        #expect(result.stderr.hasPrefix("Error: /proc/bearer-e2e-ca: cannot create the local CA's folder: "))
        #expect(result.stderr.filter { $0 == "\n" }.count == 1)

        let unknown = try self.ca(["--config", unwritable, "--renw"])
        #expect(unknown.status == 1)
        #expect(
            unknown.stderr
                == "Error: Unknown option '--renw' (did you mean '--renew'?)\nUsage: bearer-proxy ca [--config <file>] [--renew] [--bundle]\n  See 'bearer-proxy ca --help' for more information.\n"
        )
        let help = try self.ca(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: Print the absolute path of ca.pem"))
    }

    @Test func metricsCountIssuedLeaves() throws {
        let config = self.config(injectHosts: "api.example.com", "tls_intercept = on\nadmin_listen = 127.0.0.1:0")
        let proxy = try ProxyProcess(["--config", config])
        defer {
            proxy.signal(SIGTERM)
            _ = proxy.waitForExit()
        }
        #expect(proxy.waitUntilListening() != nil)
        let adminText = try #require(word(startingWith: "admin=", in: proxy.standardError)?.dropFirst(6))
        let adminPort = try #require(Int(adminText.split(separator: ":").last ?? ""))
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: adminPort)!,
            "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(adminPort)\r\n\r\n"
        )
        #expect(response.status == 200)
        #expect(
            response.text.contains(
                "\n# TYPE bearer_proxy_leaf_certificates_issued_total counter\nbearer_proxy_leaf_certificates_issued_total 0\n"
            )
        )
    }

    @Test func checkShowsTheInterceptKeys() throws {
        let result = try ProxyProcess.run([
            "--check", "--config", self.config(injectHosts: "api.example.com", "tls_intercept = on"),
        ])
        #expect(result.status == 0)
        #expect(result.stdout.contains("\ntls_intercept = on\n"))
        #expect(result.stdout.contains("\nca_dir = \(self.caDirectory)\n"))
        // --check makes nothing.
        #expect(!FileManager.default.fileExists(atPath: self.caDirectory))
    }
}
