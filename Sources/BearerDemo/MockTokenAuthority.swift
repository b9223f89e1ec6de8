import BearerCore
import FoundationEssentials
import Synchronization

/// The tokens a mock token server issued and a mock upstream accepts: the shared truth of the mocks.
///
/// Tokens are `mock-access-N` with N counting up, so `/whoami` can tell which generation a request
/// carried. Each may expire; `revokeAll` makes every issued token invalid at once (an expiry storm).
package final class MockTokenAuthority: Sendable {
    private struct State {
        var issued = 0
        var expiry: [String: Instant] = [:]
        var revokedBefore = 0
        /// DPoP-bound tokens: token → the thumbprint of its key (`cnf.jkt`, RFC 9449 §6).
        var bindings: [String: String] = [:]
    }

    private let state = Locked(State())
    package let prefix: String

    package init(prefix: String = "mock-access-") {
        self.prefix = prefix
    }

    /// A new valid token, expiring after `lifetime` (never when nil).
    package func issue(lifetime: Duration?) -> String {
        self.state.withLock { state in
            state.issued += 1
            let token = "\(self.prefix)\(state.issued)"
            if let lifetime { state.expiry[token] = Instant.now() + lifetime }
            return token
        }
    }

    /// Accepts a token this authority issued that is neither revoked nor expired.
    package func accepts(_ token: String) -> Bool {
        let token = Self.subject(of: token) ?? token
        guard let number = self.number(of: token) else { return false }
        return self.state.withLock { state in
            guard number > state.revokedBefore, number <= state.issued else { return false }
            if let expiry = state.expiry[token], Instant.now() >= expiry { return false }
            return true
        }
    }

    /// The generation number of a token this authority issued.
    package func number(of token: String) -> Int? {
        let token = Self.subject(of: token) ?? token
        guard token.hasPrefix(self.prefix) else { return nil }
        return Int(token.dropFirst(self.prefix.count))
    }

    /// Makes every token issued so far invalid; returns how many revocations have happened.
    package func revokeAll() {
        self.state.withLock { $0.revokedBefore = $0.issued }
    }

    package var issuedCount: Int { self.state.withLock { $0.issued } }

    /// Binds `token` to the DPoP key whose thumbprint is `thumbprint`.
    package func bind(_ token: String, to thumbprint: String) {
        self.state.withLock { $0.bindings[token] = thumbprint }
    }

    /// The thumbprint `token` is bound to; nil for a bearer token.
    package func binding(of token: String) -> String? {
        self.state.withLock { $0.bindings[token] }
    }

    /// The `sub` claim of a JWT-shaped token (the mock issues its tokens wrapped that way on request).
    static func subject(of token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = String(parts[1]).replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let object = JSONText.object(data)
        else { return nil }
        return object["sub"] as? String
    }
}
