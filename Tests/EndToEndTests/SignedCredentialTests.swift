import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// private_key_jwt, JWT bearer grants and resource indicators against the binary. The mock token
/// endpoint checks every assertion as an authorization server does: its signature under the public
/// key the openssl command derived (OpenSSL's EVP_DigestVerify, not the proxy's signer), each claim,
/// `exp = iat + 60`, the exact URNs, and a jti it has never seen.
@Suite(.requires(.openssl))
struct SignedCredentialTests {
    enum Grant: String, CaseIterable, Sendable {
        case clientCredentials = "client_credentials"
        case refreshToken = "refresh_token"
        case password
    }

    @Test(arguments: [TestKeyMaterial.KeyKind.p256, .rsa2048], Grant.allCases)
    func privateKeyJWTSignsEveryTokenRequest(kind: TestKeyMaterial.KeyKind, grant: Grant) throws {
        let key = try TestKeys.key(kind)
        let publicKey = try TestKeys.publicKey(of: key)
        let proxy = try SignedTokenProxy {
            $0.clientID = "svc-client"
            $0.assertions.clientKey = publicKey
            $0.assertions.clientKeyID = "kid-\(kind.rawValue)"
            $0.refreshTokens = ["rt-seed-secret"]
            $0.rotatesRefreshTokens = true
            $0.detectsRefreshTokenReuse = true
        }
        let tokenFile = proxy.directory + "/refresh_token"
        try "rt-seed-secret\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        var lines = """
            grant_type = \(grant.rawValue)
            client_id = svc-client
            client_auth = private_key_jwt
            client_key_file = \(key)
            client_key_id = kid-\(kind.rawValue)
            """
        switch grant {
        case .clientCredentials: break
        case .refreshToken: lines += "\nrefresh_token_file = \(tokenFile)"
        case .password: lines += "\nusername = alice\npassword = ${E2E_PASSWORD}"
        }
        try proxy.start(lines, environment: ["E2E_PASSWORD": "alice-password-secret"])
        try proxy.storm(callCount: { proxy.tokenServer.callCount })
        proxy.stop()

        let calls = proxy.tokenServer.recordedCalls
        #expect(calls.count == 4, "one at start, one per revocation")
        #expect(proxy.tokenServer.assertionRefusals.isEmpty, "\(proxy.tokenServer.assertionRefusals)")
        let assertions = proxy.tokenServer.acceptedAssertions
        #expect(assertions.count == 4)
        #expect(Set(assertions.compactMap { $0.stringClaims["jti"] }).count == 4, "a fresh jti for each request")
        #expect(assertions.allSatisfy { $0.header["alg"] == (kind == .p256 ? "ES256" : "RS256") })
        #expect(assertions.allSatisfy { $0.header["typ"] == "JWT" })
        for call in calls {
            #expect(call.form["grant_type"] == grant.rawValue)
            #expect(call.form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
            #expect(call.form["client_id"] == "svc-client")
            #expect(call.form["client_secret"] == nil)
            #expect(call.authorization == nil, "no Basic header")
        }
        if grant == .refreshToken {
            // Rotation under private_key_jwt as before: each refresh spent the token the last one got.
            #expect(
                calls.map(\.presentedRefreshToken) == ["rt-seed-secret"]
                    + proxy.tokenServer.issuedRefreshTokenList.dropLast()
            )
            #expect(proxy.tokenServer.reuseDetections.load(ordering: .relaxed) == 0)
            let stored = try String(contentsOfFile: tokenFile, encoding: .utf8)
            #expect(stored == (proxy.tokenServer.issuedRefreshTokenList.last ?? "?") + "\n")
        }
        if grant == .password { #expect(calls.allSatisfy { $0.form["password"] == "alice-password-secret" }) }
    }

    enum BearerGrant: String, CaseIterable, Sendable {
        /// jwt_bearer with no client authentication.
        case alone
        /// jwt_bearer with a private_key_jwt client assertion too.
        case withClientAssertion
    }

    @Test(arguments: BearerGrant.allCases)
    func aJWTBearerGrantCarriesTheConfiguredClaims(_ variant: BearerGrant) throws {
        let key = try TestKeys.key(.p256)
        let publicKey = try TestKeys.publicKey(of: key)
        let proxy = try SignedTokenProxy {
            $0.assertions.grantKey = publicKey
            $0.assertions.grantKeyID = "grant-key"
            $0.assertions.grantIssuer = "https://issuer.test.local"
            $0.assertions.grantSubject = "alice@example.com"
            $0.assertions.grantScope = "read write"
            if variant == .withClientAssertion {
                $0.clientID = "svc-client"
                $0.assertions.clientKey = publicKey
                $0.assertions.clientKeyID = "grant-key"
            }
        }
        var lines = """
            grant_type = jwt_bearer
            client_key_file = \(key)
            client_key_id = grant-key
            assertion_issuer = https://issuer.test.local
            assertion_subject = alice@example.com
            scope = read write
            """
        if variant == .withClientAssertion { lines += "\nclient_id = svc-client\nclient_auth = private_key_jwt" }
        try proxy.start(lines)
        try proxy.storm(callCount: { proxy.tokenServer.callCount })
        proxy.stop()

        #expect(proxy.tokenServer.assertionRefusals.isEmpty, "\(proxy.tokenServer.assertionRefusals)")
        let calls = proxy.tokenServer.recordedCalls
        #expect(calls.count == 4)
        for call in calls {
            #expect(call.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
            #expect(call.form["assertion"]?.split(separator: ".").count == 3)
            #expect(call.form["scope"] == "read write")
            #expect(call.authorization == nil)
            if variant == .alone {
                #expect(call.form["client_assertion"] == nil && call.form["client_id"] == nil)
            }
        }
        // Two assertions per call with a client assertion, every jti distinct (the mock refuses a reused one).
        let assertions = proxy.tokenServer.acceptedAssertions
        #expect(assertions.count == (variant == .alone ? 4 : 8))
        #expect(Set(assertions.compactMap { $0.stringClaims["jti"] }).count == assertions.count)
    }

    @Test func resourceIndicatorsGoOnEveryTokenRequestInOrder() throws {
        let proxy = try SignedTokenProxy { $0.clientID = "svc-client" }
        try proxy.start(
            """
            client_id = svc-client
            resource = https://api.test.local/, urn:example:ledger
            """
        )
        #expect(try proxy.get("/x").status == 200)
        proxy.authority.revokeAll()
        #expect(try proxy.get("/y").status == 200)
        proxy.stop()
        let calls = proxy.tokenServer.recordedCalls
        #expect(calls.count == 2)
        #expect(calls.allSatisfy { $0.resources == ["https://api.test.local/", "urn:example:ledger"] })
    }

    @Test func checkShowsEachKeyFilesPathAndKindNeverTheKey() throws {
        let ec = try TestKeys.key(.p256)
        let material = try TestKeys.material()
        let rsa = try TestKeys.key(.rsa2048)
        let certificate = try material.selfSignedCertificate(commonName: "check-client", key: rsa, name: "check.pem")
        let config = temporaryFile(
            """
            upstream = http://127.0.0.1:9
            token_url = http://127.0.0.1:9/token
            client_id = svc-client
            client_auth = private_key_jwt
            client_key_file = \(ec)
            tls_client_cert = \(certificate)
            tls_client_key = \(rsa)
            """
        )
        let check = try ProxyProcess.run(["--check", "--config", config])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("client_key_file = \(ec) (EC P-256, ES256)\n"))
        #expect(check.stdout.contains("tls_client_cert = \(certificate) (/CN=check-client; 1 certificate)\n"))
        #expect(check.stdout.contains("tls_client_key = \(rsa) (RSA 2048-bit)\n"))
        #expect(check.stdout.contains("client_auth = private_key_jwt\n"))
        expectNoSecrets(
            try TestKeys.pemBodyLines(of: ec) + TestKeys.pemBodyLines(of: rsa),
            in: [("--check", check.stdout + check.stderr)]
        )
    }
}

/// Key files that cannot be used stop the start (and `--check`) with one line naming the file.
@Suite(.requires(.openssl))
struct BadKeyFileTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var key: String
        /// Writes the file (in the material's folder) and returns its path.
        var make: @Sendable (TestKeyMaterial) throws -> String
        var reason: String
        var testDescription: String { self.name }
    }

    static func write(_ text: String, _ name: String, in material: TestKeyMaterial) throws -> String {
        let path = material.path(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    /// A service-account file with `fields` over the usual ones.
    static func serviceAccount(
        _ material: TestKeyMaterial,
        name: String,
        _ change: (inout [String: Any]) throws -> Void
    )
        throws -> String
    {
        var object: [String: Any] = [
            "type": "service_account", "client_email": "svc@project.iam.gserviceaccount.com",
            "private_key_id": "abc123",
            "private_key": try String(contentsOfFile: TestKeys.key(.rsa2048), encoding: .utf8),
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        try change(&object)
        let data = try JSONSerialization.data(withJSONObject: object)
        return try Self.write(String(decoding: data, as: UTF8.self), name, in: material)
    }

    static let cases: [Case] = [
        Case(name: "missing key", key: "client_key_file", make: { $0.path("absent.pem") }, reason: "no such file"),
        Case(
            name: "encrypted key",
            key: "client_key_file",
            make: { try $0.privateKey(.p256, format: .encrypted, name: "bad-encrypted.pem") },
            reason: "holds an encrypted key (a passphrase protects it)"
        ),
        Case(
            name: "EC P-384 key",
            key: "client_key_file",
            make: { try $0.privateKey(.p384, name: "bad-p384.pem") },
            reason: "holds an EC P-384 key; JWTs are signed with RSA (RS256) or EC P-256 (ES256) keys"
        ),
        Case(
            name: "certificate as key",
            key: "client_key_file",
            make: { try $0.selfSignedCertificate(commonName: "x", key: TestKeys.key(.p256), name: "bad-cert.pem") },
            reason: "holds a certificate but no private key"
        ),
        Case(
            name: "service account not JSON",
            key: "service_account_file",
            make: { try BadKeyFileTests.write("not json", "bad-sa-text.json", in: $0) },
            reason: "is not a JSON object"
        ),
        Case(
            name: "service account of the wrong type",
            key: "service_account_file",
            make: {
                try BadKeyFileTests.serviceAccount($0, name: "bad-sa-user.json") { $0["type"] = "authorized_user" }
            },
            reason: #"is not a service-account key: "type" is "authorized_user" (expected "service_account")"#
        ),
        Case(
            name: "service account without its key",
            key: "service_account_file",
            make: { try BadKeyFileTests.serviceAccount($0, name: "bad-sa-nokey.json") { $0["private_key"] = nil } },
            reason: "has no private_key"
        ),
        Case(
            name: "service account with an encrypted key",
            key: "service_account_file",
            make: { material in
                let encrypted = try material.privateKey(.rsa2048, format: .encrypted, name: "bad-sa-enc.pem")
                return try BadKeyFileTests.serviceAccount(material, name: "bad-sa-enc.json") {
                    $0["private_key"] = try String(contentsOfFile: encrypted, encoding: .utf8)
                }
            },
            reason: "private_key holds an encrypted key"
        ),
        Case(
            name: "TLS key of another certificate",
            key: "tls_client_key",
            make: { try $0.privateKey(.p256, name: "bad-other-tls.key") },
            reason: "is not the key of the certificate in"
        ),
    ]

    @Test(arguments: BadKeyFileTests.cases)
    func oneLineNamingTheFileAndExitOne(_ bad: Case) throws {
        let material = try TestKeys.material()
        let path = try bad.make(material)
        // One file per case: the cases run in parallel in one folder, and openssl writing a shared
        // ok.pem while another case read it made that case's certificate unreadable.
        let certificate = try material.selfSignedCertificate(
            commonName: "c",
            key: TestKeys.key(.p256),
            name: "ok-\(bad.name.replacingOccurrences(of: " ", with: "-")).pem"
        )
        let keyLine: String
        switch bad.key {
        case "client_key_file":
            keyLine =
                "token_url = http://127.0.0.1:9/token\nclient_id = c\nclient_auth = private_key_jwt\nclient_key_file = \(path)"
        case "service_account_file":
            keyLine = "scope = s\nservice_account_file = \(path)"
        default:
            keyLine = "access_token = t\ntls_client_cert = \(certificate)\ntls_client_key = \(path)"
        }
        let config = temporaryFile("upstream = http://127.0.0.1:9\n\(keyLine)\n")
        let line = keyLine.split(separator: "\n").count + 1
        for arguments in [["--config", config], ["--check", "--config", config]] {
            let result = try ProxyProcess.run(arguments)
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(arguments): \(result.stderr)")
            #expect(
                result.stderr.hasPrefix("Error: \(config):\(line): \(bad.key): \(path): \(bad.reason)"),
                "\(arguments): \(result.stderr)"
            )
        }
    }
}
