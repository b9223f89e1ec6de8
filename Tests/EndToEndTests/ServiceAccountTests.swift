import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// A Google service account: a key file as the console downloads it, a mock of Google's token
/// endpoint checking what Google checks (`MockGoogleTokenServer`), and a mock Google API that takes
/// the tokens it issued.
final class GoogleAccount {
    static let email = "reporting@my-project.iam.gserviceaccount.com"
    static let keyID = "3c5f1e9a0b7d4c2e8f6a1b0c9d8e7f6a5b4c3d2e"

    let authority = MockTokenAuthority(prefix: "ya29.mock-")
    let google: MockGoogleTokenServer
    let api: MockUpstream
    let keyFile: String
    let accountFile: String

    /// `registeredKey`: the key Google holds for the account (by default the one in the file).
    init(registeredKey: String? = nil) throws {
        self.keyFile = try TestKeys.key(.rsa2048)
        let publicKey = try TestKeys.publicKey(of: registeredKey ?? self.keyFile)
        self.google = MockGoogleTokenServer(
            group: e2eMockGroup,
            authority: self.authority,
            account: .init(email: Self.email, keyID: Self.keyID, publicKey: publicKey)
        )
        try self.google.start()
        self.api = MockUpstream(group: e2eMockGroup, authority: self.authority)
        try self.api.start()
        let object: [String: Any] = [
            "type": "service_account", "project_id": "my-project", "private_key_id": Self.keyID,
            "private_key": try String(contentsOfFile: self.keyFile, encoding: .utf8), "client_email": Self.email,
            "client_id": "113284675647212398765", "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.google.tokenURI,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/reporting",
            "universe_domain": "googleapis.com",
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted])
        self.accountFile = temporaryFile(String(decoding: data, as: UTF8.self), name: "my-project-3c5f1e9a0b7d.json")
        chmod(self.accountFile, 0o600)
    }

    deinit {
        self.api.stop()
        self.google.stop()
    }

    /// The whole config: the API, the key file, the scope.
    var config: String {
        temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(self.api.server.baseURL)
            service_account_file = \(self.accountFile)
            scope = https://www.googleapis.com/auth/devstorage.read_only
            log_level = debug
            """
        )
    }
}

@Suite(.requires(.openssl))
struct ServiceAccountTests {
    @Test func aServiceAccountFileIsAllTheConfigNeeds() throws {
        let account = try GoogleAccount()
        let process = try ProxyProcess(["--config", account.config])
        let listening = try #require(process.waitUntilListening(), "\(process.standardError)")
        let address = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: listening))!
        let get = { (path: String) in
            try httpRequest(address, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(address.port!)\r\n\r\n")
        }
        #expect(try get("/storage/v1/b?project=my-project").status == 200)
        #expect(account.api.requests.last?.header("authorization") == "Bearer ya29.mock-1")
        #expect(account.google.refusals.isEmpty, "\(account.google.refusals)")

        // A storm after revocation costs one signed token request.
        try revocationStorm(
            through: address,
            authority: account.authority,
            rounds: 2,
            callCount: { account.google.callCount }
        )
        process.signal(SIGTERM)
        #expect(process.waitForExit() == 0)

        // What Google's documented request carries, and nothing else; the scope as a claim only.
        #expect(account.google.forms.allSatisfy { Set($0.keys) == ["grant_type", "assertion"] })
        let assertions = account.google.acceptedAssertions
        #expect(assertions.count == 3)
        for token in assertions {
            #expect(token.header == ["alg": "RS256", "typ": "JWT", "kid": GoogleAccount.keyID])
            #expect(token.stringClaims["iss"] == GoogleAccount.email)
            #expect(token.stringClaims["aud"] == account.google.tokenURI)
            #expect(token.stringClaims["scope"] == "https://www.googleapis.com/auth/devstorage.read_only")
            #expect(token.stringClaims["sub"] == nil)
            #expect(token.numberClaims["exp"]! - token.numberClaims["iat"]! == 60)
        }
        #expect(Set(assertions.compactMap { $0.stringClaims["jti"] }).count == 3)
        #expect(
            process.standardError.contains(
                "jwt_bearer at \(account.google.tokenURI) (service account \(GoogleAccount.email))"
            )
        )
        expectNoSecrets(
            try TestKeys.pemBodyLines(of: account.keyFile) + assertions.map(\.compact)
                + assertions.map { String($0.compact.split(separator: ".")[2]) }
                + (1...account.authority.issuedCount).map { "ya29.mock-\($0)" },
            in: [("stderr", process.standardError)]
        )
    }

    @Test func checkShowsTheAccountAndTheTokenURIItImplies() throws {
        let account = try GoogleAccount()
        let check = try ProxyProcess.run(["--check", "--config", account.config])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("token_url = \(account.google.tokenURI)\n"))
        #expect(check.stdout.contains("grant_type = jwt_bearer\n"))
        #expect(
            check.stdout.contains(
                "service_account_file = \(account.accountFile) (client_email=\(GoogleAccount.email),"
                    + " private_key_id=\(GoogleAccount.keyID); RSA 2048-bit, RS256)\n"
            )
        )
        #expect(check.stdout.hasSuffix("configuration OK\n"), "\(check.stdout)\(check.stderr)")
        expectNoSecrets(try TestKeys.pemBodyLines(of: account.keyFile), in: [("--check", check.stdout + check.stderr)])
    }

    @Test func aKeyGoogleDoesNotHoldIsRefusedAndTheRefusalNamed() throws {
        // Google holds another key for the account than the file's: its signature check fails.
        let material = try TestKeys.material()
        let registered = try material.privateKey(
            .rsa2048,
            name: "google-registered-\(UInt32.random(in: 0...UInt32.max)).pem"
        )
        let account = try GoogleAccount(registeredKey: registered)
        let process = try ProxyProcess(["--config", account.config])
        let listening = try #require(process.waitUntilListening())
        let address = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: listening))!
        let response = try httpRequest(address, "GET /x HTTP/1.1\r\nHost: 127.0.0.1:\(address.port!)\r\n\r\n")
        #expect(response.status == 401)
        #expect(response.text.contains("invalid_grant"), "\(response.text)")
        #expect(response.text.contains("Invalid JWT Signature."), "\(response.text)")
        #expect(account.google.refusals.first == "Invalid JWT Signature.")
        #expect(account.api.requests.isEmpty)
        process.signal(SIGTERM)
        #expect(process.waitForExit() == 0)
    }
}
