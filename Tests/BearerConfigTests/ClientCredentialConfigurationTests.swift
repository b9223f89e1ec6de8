import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerConfig

/// The rules of signing keys, service accounts, TLS client certificates and resource indicators:
/// what each needs, what each makes useless, what is read from the key files.
@Suite(.requires(.openssl))
struct ClientCredentialConfigurationTests {
    // Made once; a failure (no openssl command under CI) fails each test that needs them.
    private static let made = Result { () throws -> (TestKeyMaterial, String, String) in
        let keys = try TestKeyMaterial()
        let key = try keys.privateKey(.p256, name: "config-ec.pem")
        return (keys, key, try keys.selfSignedCertificate(commonName: "cfg", key: key, name: "config-cert.pem"))
    }
    static var keys: TestKeyMaterial { get throws { try Self.made.get().0 } }
    static var key: String { get throws { try Self.made.get().1 } }
    static var certificate: String { get throws { try Self.made.get().2 } }
    static let endpoint = "upstream = https://api.internal\ntoken_url = https://auth.internal/token\n"

    func findings(_ text: String) -> (config: Configuration, errors: [String], warnings: [String]) {
        let (config, found) = ConfigurationLoader.read(text, fileName: "p.conf", environment: [:])
        return (config, found.sortedErrors.map(\.description), found.sortedWarnings.map(\.description))
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let id: String
        let text: String
        let errors: [String]
        var warnings: [String] = []
        var testDescription: String { self.id }
    }

    static let cases: [Case] = [
        Case(
            id: "private_key_jwt complete",
            text: endpoint + "client_id = c\nclient_auth = private_key_jwt\nclient_key_file = {key}",
            errors: []
        ),
        Case(
            id: "private_key_jwt without a key",
            text: endpoint + "client_id = c\nclient_auth = private_key_jwt",
            errors: ["p.conf:4: client_auth: private_key_jwt needs client_key_file (the key that signs the assertion)"]
        ),
        Case(
            id: "private_key_jwt without client_id",
            text: endpoint + "refresh_token = r\nclient_auth = private_key_jwt\nclient_key_file = {key}",
            errors: ["p.conf:4: client_auth: private_key_jwt needs client_id (the assertion's iss and sub)"]
        ),
        Case(
            id: "private_key_jwt and a secret",
            text: endpoint + "client_id = c\nclient_secret = s\nclient_auth = private_key_jwt\nclient_key_file = {key}",
            errors: [],
            warnings: ["p.conf:4: client_secret: is not sent with client_auth = private_key_jwt"]
        ),
        Case(
            id: "tls_client_auth without a certificate",
            text: endpoint + "client_id = c\nclient_auth = tls_client_auth",
            errors: [
                "p.conf:4: client_auth: tls_client_auth needs tls_client_cert and tls_client_key (the certificate is the credential)"
            ]
        ),
        Case(
            id: "a certificate without its key",
            text: "upstream = https://api.internal\naccess_token = t\ntls_client_cert = {certificate}",
            errors: ["p.conf:3: tls_client_cert: needs tls_client_key (the certificate's private key)"]
        ),
        Case(
            id: "jwt_bearer without a key",
            text: endpoint + "client_id = c\ngrant_type = jwt_bearer",
            errors: [
                "p.conf:4: grant_type: jwt_bearer needs client_key_file or service_account_file (the key that signs the grant)"
            ]
        ),
        Case(
            id: "jwt_bearer without an issuer",
            text: endpoint + "grant_type = jwt_bearer\nclient_key_file = {key}",
            errors: ["p.conf:3: grant_type: jwt_bearer needs assertion_issuer or client_id (the assertion's iss)"]
        ),
        Case(
            id: "a key nothing signs with",
            text: endpoint + "client_id = c\nclient_key_file = {key}",
            errors: [],
            warnings: [
                "p.conf:4: client_key_file: is not used: set client_auth = private_key_jwt, or grant_type = jwt_bearer"
            ]
        ),
        Case(
            id: "claims of another grant",
            text: endpoint + "client_id = c\nassertion_subject = alice",
            errors: [],
            warnings: ["p.conf:4: assertion_subject: is not used by grant_type = client_credentials"]
        ),
        Case(
            id: "a kid without a key",
            text: endpoint + "client_id = c\nclient_key_id = k1",
            errors: [],
            warnings: ["p.conf:4: client_key_id: is not used without client_key_file"]
        ),
        Case(
            id: "a key without token_url",
            text: "upstream = https://api.internal\naccess_token = t\nclient_key_file = {key}",
            errors: [],
            warnings: ["p.conf:3: client_key_file: is not used without token_url (nothing asks a token endpoint)"]
        ),
        Case(
            id: "a JSON backend",
            text:
                "upstream = https://api.internal\ntoken_format = json\ntoken_url = https://api.internal/refresh\n"
                + "refresh_token = r\nresource = https://api.internal/\nclient_auth = private_key_jwt",
            errors: [
                "p.conf:5: resource: applies to token_format = form",
                "p.conf:6: client_auth: private_key_jwt applies to token_format = form",
            ]
        ),
        Case(
            id: "a resource that is not an absolute URI",
            text: endpoint + "client_id = c\nresource = https://api.internal/, /relative",
            errors: [
                "p.conf:4: resource: '/relative' is not an absolute URI without a fragment (RFC 8707 §2), e.g. https://api.example.com/"
            ]
        ),
        Case(
            id: "a resource with a fragment",
            text: endpoint + "client_id = c\nresource = https://api.internal/#x",
            errors: [
                "p.conf:4: resource: 'https://api.internal/#x' is not an absolute URI without a fragment (RFC 8707 §2), e.g. https://api.example.com/"
            ]
        ),
    ]

    /// `{key}` and `{certificate}` in a case stand for the files the openssl command made.
    @Test(arguments: Self.cases)
    func rules(_ rule: Case) throws {
        let text = try rule.text.replacingOccurrences(of: "{key}", with: Self.key)
            .replacingOccurrences(of: "{certificate}", with: Self.certificate)
        let found = self.findings(text)
        #expect(found.errors == rule.errors)
        #expect(found.warnings == rule.warnings)
    }

    @Test func aServiceAccountImpliesTheGrantAndTheTokenURL() throws {
        let account = try Self.serviceAccount(tokenURI: "https://oauth2.googleapis.com/token")
        let found = self.findings(
            "upstream = https://storage.googleapis.com\nscope = s\nservice_account_file = \(account)"
        )
        #expect(found.errors.isEmpty && found.warnings.isEmpty, "\(found)")
        #expect(found.config.tokenURL?.description == "https://oauth2.googleapis.com/token")
        #expect(found.config.effectiveGrantType == .jwtBearer)
        #expect(found.config.credentials.found.serviceAccount?.clientEmail == "svc@p.iam.gserviceaccount.com")
        // token_url, set, wins; a grant that is not jwt_bearer, or a second key, is an error.
        let explicit = self.findings(
            "upstream = https://a.internal\ntoken_url = https://t.internal/t\nservice_account_file = \(account)"
        )
        #expect(explicit.config.tokenURL?.description == "https://t.internal/t")
        let conflicting = self.findings(
            "upstream = https://a.internal\ngrant_type = client_credentials\nservice_account_file = \(account)\nclient_key_file = \(try Self.key)\nclient_id = c"
        )
        #expect(
            conflicting.errors == [
                "p.conf:3: service_account_file: implies grant_type = jwt_bearer; remove grant_type = client_credentials",
                "p.conf:4: client_key_file: set either client_key_file or service_account_file, not both (the service account holds its key)",
            ]
        )
    }

    @Test func aKeyFileOthersMayReadIsAWarning() throws {
        let open = try Self.keys.privateKey(.p256, name: "config-open.pem")
        chmod(open, 0o644)
        let found = self.findings(
            Self.endpoint + "client_id = c\nclient_auth = private_key_jwt\nclient_key_file = \(open)"
        )
        #expect(found.errors.isEmpty)
        #expect(
            found.warnings == [
                "p.conf:5: client_key_file: \(open) can be read by other users of this machine (chmod 600 \(open))"
            ]
        )
    }

    @Test func theTLSKeyMustBelongToTheCertificate() throws {
        let other = try Self.keys.privateKey(.p256, name: "config-other.pem")
        let found = self.findings(
            "upstream = https://api.internal\naccess_token = t\ntls_client_cert = \(try Self.certificate)\ntls_client_key = \(other)"
        )
        #expect(
            found.errors == [
                "p.conf:4: tls_client_key: \(other): is not the key of the certificate in \(try Self.certificate)"
            ]
        )
    }

    /// Every complete config docs/token-sources.md's "Service accounts and locked-down APIs" shows passes the
    /// checks, its key files replaced by ones the openssl command made (and one warning at most: a
    /// placeholder host).
    @Test func theReadmesConfigsAreComplete() throws {
        let readme = try String(
            contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/token-sources.md").path,
            encoding: .utf8
        )
        let start = try #require(readme.range(of: "## Service accounts and locked-down APIs\n"))
        let end = try #require(readme.range(of: "\n## ", range: start.upperBound..<readme.endIndex))
        var blocks: [[String]] = []
        var current: [String] = []
        for line in readme[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("    ") && line.contains(" = ") && !line.hasPrefix("    bearer-proxy") {
                current.append(String(line.dropFirst(4)))
            } else if !current.isEmpty {
                blocks.append(current)
                current = []
            }
        }
        let complete = blocks.filter { $0.contains { $0.hasPrefix("upstream = ") } }
        #expect(complete.count == 5, "Okta, Keycloak, jwt_bearer, Google, a bank: \(complete.count)")
        let account = try Self.serviceAccount(tokenURI: "https://oauth2.googleapis.com/token")
        for block in complete {
            let text = try block.map { line -> String in
                let key = String(line.prefix { $0 != " " })
                switch key {
                case "client_key_file", "tls_client_key": return "\(key) = \(try Self.key)"
                case "tls_client_cert": return "tls_client_cert = \(try Self.certificate)"
                case "service_account_file": return "service_account_file = \(account)"
                case "ca_file": return "ca_file = \(try Self.certificate)"
                default: return line
                }
            }.joined(separator: "\n")
            let found = self.findings(text)
            #expect(found.errors.isEmpty, "\(block.first ?? ""): \(found.errors)")
            #expect(found.warnings.allSatisfy { $0.contains("is a placeholder") }, "\(found.warnings)")
        }
    }

    static func serviceAccount(tokenURI: String) throws -> String {
        let object: [String: Any] = [
            "type": "service_account", "client_email": "svc@p.iam.gserviceaccount.com", "private_key_id": "k1",
            "private_key": try String(
                contentsOfFile: try Self.keys.privateKey(.rsa2048, name: "config-sa.pem"),
                encoding: .utf8
            ),
            "token_uri": tokenURI,
        ]
        let path = try Self.keys.path("config-sa.json")
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        return path
    }
}
