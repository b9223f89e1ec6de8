import BearerCore
import BearerDemo
import BearerIO
import Foundation
import Synchronization

/// Plays Google's OAuth 2.0 token endpoint for service accounts (`token_uri` of a key file,
/// `https://oauth2.googleapis.com/token`), checking what Google checks: a form POST with grant_type
/// `urn:ietf:params:oauth:grant-type:jwt-bearer` and an `assertion` that is an RS256 JWT whose `kid`
/// names the account's key, signed by it, with iss = the account's e-mail, aud = the token URI, a
/// `scope` claim, iat now and exp at most an hour after it. Answers as Google does:
/// `{"access_token": "ya29.…", "expires_in": 3599, "token_type": "Bearer"}`, or `invalid_grant`,
/// `invalid_scope`, `unsupported_grant_type` with Google's descriptions.
package final class MockGoogleTokenServer: Sendable {
    package struct Account: Sendable {
        package var email: String
        package var keyID: String
        package var publicKey: MockPublicKey

        package init(email: String, keyID: String, publicKey: MockPublicKey) {
            self.email = email
            self.keyID = keyID
            self.publicKey = publicKey
        }
    }

    package let server: MockHTTPServer
    package let authority: MockTokenAuthority
    let account: Account
    private let log = Locked<(accepted: [MockJWT], refusals: [String], forms: [[String: String]])>(([], [], []))
    package let calls = Atomic<Int>(0)

    package init(group: EventLoopGroup, authority: MockTokenAuthority, account: Account) {
        self.authority = authority
        self.account = account
        let box = Box()
        self.server = MockHTTPServer(group: group) { request in box.server!.handle(request) }
        box.server = self
    }

    private final class Box: @unchecked Sendable {
        weak var server: MockGoogleTokenServer?
    }

    @discardableResult
    package func start() throws(IOError) -> SocketAddress { try self.server.start() }
    package func stop() { self.server.stop() }
    /// What the key file's `token_uri` says.
    package var tokenURI: String { "\(self.server.baseURL)/token" }
    package var callCount: Int { self.calls.load(ordering: .relaxed) }
    package var acceptedAssertions: [MockJWT] { self.log.withLock { $0.accepted } }
    package var refusals: [String] { self.log.withLock { $0.refusals } }
    /// The form of every call.
    package var forms: [[String: String]] { self.log.withLock { $0.forms } }

    func handle(_ request: MockRequest) -> MockResponse {
        guard request.path == "/token" else { return .text(404, "Not Found") }
        self.calls.add(1, ordering: .relaxed)
        let form = MockTokenServer.parseForm(String(decoding: request.body, as: UTF8.self))
        self.log.withLock { $0.forms.append(form) }
        guard request.method == "POST",
            request.header("content-type")?.hasPrefix("application/x-www-form-urlencoded") == true
        else { return self.refuse(400, "invalid_request", "Invalid request: expected a form POST.") }
        guard form["grant_type"] == MockTokenServer.jwtBearerGrantType else {
            return self.refuse(400, "unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"] else {
            return self.refuse(400, "invalid_request", "Missing required parameter: assertion")
        }
        let token: MockJWT
        switch MockJWTVerifier.verify(assertion, with: self.account.publicKey) {
        case .success(let verified): token = verified
        case .failure: return self.refuse(400, "invalid_grant", "Invalid JWT Signature.")
        }
        guard token.header["alg"] == "RS256", token.header["kid"] == nil || token.header["kid"] == self.account.keyID
        else { return self.refuse(400, "invalid_grant", "Invalid JWT Signature.") }
        guard token.stringClaims["iss"] == self.account.email else {
            return self.refuse(400, "invalid_grant", "Invalid grant: account not found")
        }
        guard token.stringClaims["aud"] == self.tokenURI else {
            return self.refuse(
                400,
                "invalid_grant",
                "Invalid JWT: Failed audience check. The expected audience is \(self.tokenURI)."
            )
        }
        let now = Int64(Date().timeIntervalSince1970)
        guard let issuedAt = token.numberClaims["iat"], let expiry = token.numberClaims["exp"],
            expiry > issuedAt, expiry - issuedAt <= 3600, issuedAt <= now + 60, expiry >= now
        else {
            return self.refuse(
                400,
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
                    + " Check your iat and exp values in the JWT claim."
            )
        }
        guard let scope = token.stringClaims["scope"], !scope.isEmpty else {
            return self.refuse(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        self.log.withLock { $0.accepted.append(token) }
        let object: [String: Any] = [
            "access_token": self.authority.issue(lifetime: .seconds(3599)), "expires_in": 3599, "token_type": "Bearer",
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return .json(200, String(decoding: data, as: UTF8.self), headers: [("Cache-Control", "no-store")])
    }

    private func refuse(_ status: Int, _ error: String, _ description: String) -> MockResponse {
        self.log.withLock { $0.refusals.append(description) }
        let data = (try? JSONSerialization.data(withJSONObject: ["error": error, "error_description": description]))
        return .json(status, String(decoding: data ?? Data(), as: UTF8.self))
    }
}
