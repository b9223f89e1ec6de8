import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// Keys made with the openssl command, once per test run (an RSA key takes a moment), each kind in
/// its own file.
enum TestKeys {
    private static let made = Locked<(material: TestKeyMaterial?, keys: [String: String])>((nil, [:]))

    static func material() throws -> TestKeyMaterial {
        try Self.made.withLock { made in
            if let material = made.material { return material }
            let material = try TestKeyMaterial()
            made.material = material
            return material
        }
    }

    /// The shared key of `kind` (PKCS#8 PEM, mode 0600).
    static func key(_ kind: TestKeyMaterial.KeyKind) throws -> String {
        let material = try Self.material()
        return try Self.made.withLock { made in
            if let path = made.keys[kind.rawValue] { return path }
            let path = try material.privateKey(kind, name: "shared-\(kind.rawValue).pem")
            made.keys[kind.rawValue] = path
            return path
        }
    }

    /// The public key of a key file, as a mock server registers it.
    static func publicKey(of path: String) throws -> MockPublicKey {
        try #require(MockPublicKey(pem: try Self.material().publicKeyPEM(of: path)))
    }

    /// The base64 lines of a PEM file: what a leaked key would show in a log.
    static func pemBodyLines(of path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
            .filter { !$0.hasPrefix("-----") && $0.count >= 16 }
    }
}

/// The test TLS fixtures: a CA the proxy trusts through ca_file, and a server certificate for
/// 127.0.0.1 and localhost.
enum E2ETLSFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")
    static var caFile: String { directory.appendingPathComponent("ca.pem").path }
    static var serverCertificate: String { directory.appendingPathComponent("server.pem").path }
    static var serverKey: String { directory.appendingPathComponent("server.key").path }

    /// A server context that asks clients for a certificate issued under `clientCA`.
    static func server(clientCA: String, required: Bool = true) throws -> TLSContext {
        try TLSContext.server(
            certificateChainFile: Self.serverCertificate,
            privateKeyFile: Self.serverKey,
            clientCertificatesFrom: clientCA,
            required: required
        )
    }
}

/// The built binary between a client and a mock API, its tokens from a mock token endpoint that
/// checks what signed credentials it gets (`MockTokenServer+Assertions`); the proxy's addresses read
/// from its log.
final class SignedTokenProxy {
    let authority = MockTokenAuthority()
    let tokenServer: MockTokenServer
    let upstream: MockUpstream
    let directory = temporaryDirectory()
    var process: ProxyProcess!
    var address: SocketAddress!
    var admin: SocketAddress!

    init(
        tokenTLS: TLSContext? = nil,
        upstreamTLS: TLSContext? = nil,
        _ settings: (inout MockTokenServer.Settings) -> Void
    ) throws {
        var tokenSettings = MockTokenServer.Settings()
        tokenSettings.expiresIn = 3600
        settings(&tokenSettings)
        self.tokenServer = MockTokenServer(
            group: e2eMockGroup,
            authority: self.authority,
            settings: tokenSettings,
            tls: tokenTLS
        )
        try self.tokenServer.start()
        self.upstream = MockUpstream(group: e2eMockGroup, authority: self.authority, tls: upstreamTLS)
        try self.upstream.start()
    }

    deinit {
        if let process, process.process.isRunning {
            process.signal(SIGTERM)
            _ = process.waitForExit()
        }
        self.upstream.stop()
        self.tokenServer.stop()
    }

    /// The config file: the mocks (the token endpoint unless `usesTokenEndpoint` is false), a debug
    /// log, the admin endpoints, plus `lines`.
    func configFile(_ lines: String, usesTokenEndpoint: Bool = true) -> String {
        temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(self.upstream.server.baseURL)
            \(usesTokenEndpoint ? "token_url = \(self.tokenServer.url)" : "")
            ca_file = \(E2ETLSFixtures.caFile)
            log_level = debug
            \(lines)
            """
        )
    }

    /// Starts the proxy and waits until its first token is in hand (unless `waitsForToken` is false);
    /// `staticToken`: with that token and no token endpoint.
    func start(
        _ lines: String,
        environment: [String: String] = [:],
        staticToken: String? = nil,
        waitsForToken: Bool = true
    ) throws {
        let config =
            staticToken.map { self.configFile("access_token = \($0)\n\(lines)", usesTokenEndpoint: false) }
            ?? self.configFile(lines)
        self.process = try ProxyProcess(["--config", config], environment: environment)
        let listening = try #require(self.process.waitUntilListening(), "\(self.process.standardError)")
        self.address = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: listening))!
        let adminText = try #require(word(startingWith: "admin=", in: self.process.standardError)?.dropFirst(6))
        self.admin = SocketAddress(
            ipAddress: "127.0.0.1",
            port: try #require(Int(adminText.split(separator: ":").last!))
        )
        if staticToken == nil && waitsForToken {
            #expect(
                waitUntil { (try? self.status().json["state"] as? String) == "ready" },
                "no token at start: \(self.tokenServer.assertionRefusals) \(self.process.standardError)"
            )
        }
    }

    func get(_ path: String) throws -> BlockingHTTPClient.Response {
        try httpRequest(self.address, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(self.address.port!)\r\n\r\n")
    }

    func status() throws -> (text: String, json: [String: Any]) {
        let text = try httpRequest(self.admin, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:\(self.admin.port!)\r\n\r\n")
            .text
        return (text, (try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:])
    }

    func metrics() throws -> String {
        try httpRequest(self.admin, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(self.admin.port!)\r\n\r\n").text
    }

    /// A revocation storm through this proxy (`revocationStorm`).
    func storm(
        rounds: Int = 3,
        clients: Int = 30,
        callCount: () -> Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try revocationStorm(
            through: self.address,
            authority: self.authority,
            rounds: rounds,
            clients: clients,
            callCount: callCount,
            sourceLocation: sourceLocation
        )
    }

    func stop() {
        self.process.signal(SIGTERM)
        #expect(self.process.waitForExit() == 0)
    }

    /// Every access token the mock authority issued.
    var issuedAccessTokens: [String] {
        (1...max(self.authority.issuedCount, 1)).map { "\(self.authority.prefix)\($0)" }
    }
}

/// `rounds` times: every token `authority` issued is revoked, then `clients` requests go at once
/// through the proxy at `address`. Each round must cost exactly one token call, however many
/// requests met the 401, and every request gets a 200.
func revocationStorm(
    through address: SocketAddress,
    authority: MockTokenAuthority,
    rounds: Int = 3,
    clients count: Int = 30,
    callCount: () -> Int,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let clients = try (0..<count).map { _ in try BlockingHTTPClient(connectingTo: address) }
    for round in 0..<rounds {
        let before = callCount()
        authority.revokeAll()
        for (index, client) in clients.enumerated() {
            client.send("GET /storm/\(round)/\(index) HTTP/1.1\r\nHost: 127.0.0.1:\(address.port!)\r\n\r\n")
        }
        var statuses: [Int: Int] = [:]
        for client in clients { statuses[try client.readResponse().status, default: 0] += 1 }
        #expect(statuses == [200: count], "round \(round): \(statuses)", sourceLocation: sourceLocation)
        #expect(callCount() == before + 1, "round \(round): one token call", sourceLocation: sourceLocation)
    }
}

/// Fails the test when any of `secrets` appears in one of `texts` as a whole token: not inside a
/// longer run of letters, digits, `-` and `_` (so `mock-access-1` is not found in `mock-access-12`).
func expectNoSecrets(
    _ secrets: [String],
    in texts: [(name: String, text: String)],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    func isTokenCharacter(_ character: Character) -> Bool {
        character.isLetter || character.isNumber || character == "-" || character == "_"
    }
    for (name, text) in texts {
        for secret in secrets where !secret.isEmpty {
            var searchStart = text.startIndex
            var leaked = false
            while let range = text.range(of: secret, range: searchStart..<text.endIndex) {
                let before = range.lowerBound == text.startIndex ? nil : text[text.index(before: range.lowerBound)]
                let after = range.upperBound == text.endIndex ? nil : text[range.upperBound]
                if !(before.map(isTokenCharacter) ?? false) && !(after.map(isTokenCharacter) ?? false) {
                    leaked = true
                    break
                }
                searchStart = text.index(after: range.lowerBound)
            }
            #expect(!leaked, "\(secret.prefix(24))… appears in \(name)", sourceLocation: sourceLocation)
        }
    }
}
