import BearerCore
import BearerDemo
import Foundation
import Synchronization

/// What a mock token endpoint or API demands of DPoP proofs (RFC 9449 §4.3, §7.1, §8, §9), and what
/// it saw: every proof it accepted, every refusal and why, the jtis it will not take twice.
package final class MockDPoPRules: MockDPoPCheck {
    /// The nonce proofs must carry; nil asks for none. Changing it makes the next proof a challenge.
    private let requiredNonce = Locked<String?>(nil)
    private let seenIDs = Locked<Set<String>>([])
    private let accepted = Locked<[MockDPoPProof]>([])
    private let refusals = Locked<[String]>([])
    package let nonceChallenges = Atomic<Int>(0)
    /// Check one proof in this many (the bench's API must not be what limits the run); 1: every one.
    package let checksOneIn: Int
    private let counter = Atomic<Int>(0)
    /// The bench's API: sampled proofs are checked on a thread of their own after the request was
    /// answered, so that no request waits for the mock's verifier (a check costs several signatures;
    /// inline, the checked requests and those queued behind them would be what a p99 measures). A
    /// proof that fails is counted in `failures`, which the bench reports.
    private let background: DispatchQueue?
    package let proofsChecked = Atomic<Int>(0)

    package init(nonce: String? = nil, checksOneIn: Int = 1, checksInBackground: Bool = false) {
        self.requiredNonce.withLock { $0 = nonce }
        self.checksOneIn = max(1, checksOneIn)
        self.background = checksInBackground ? DispatchQueue(label: "mock-dpop-checks") : nil
    }

    /// Waits until the background checks queued so far are done.
    package func finishChecks() {
        self.background?.sync {}
    }

    package func requireNonce(_ nonce: String?) { self.requiredNonce.withLock { $0 = nonce } }
    package var nonce: String? { self.requiredNonce.withLock { $0 } }
    package var proofs: [MockDPoPProof] { self.accepted.withLock { $0 } }
    package var failures: [String] { self.refusals.withLock { $0 } }

    /// Checks the `DPoP` field of a request of `method` to `targetURI` (scheme, authority and path,
    /// as the server sees itself addressed); `accessToken` for `ath`, `boundTo` the thumbprint the
    /// token is bound to (resource requests).
    package func check(
        _ field: String?,
        method: String,
        targetURI: String,
        accessToken: String? = nil,
        boundTo thumbprint: String? = nil
    ) -> MockDPoPVerdict {
        if self.counter.add(1, ordering: .relaxed).newValue % self.checksOneIn != 0 {
            return field == nil ? self.refuse("no DPoP proof") : .accepted(thumbprint: nil)
        }
        guard let field else { return self.refuse("no DPoP proof") }
        if let background = self.background, self.nonce == nil {
            background.async {
                _ = self.verify(
                    field,
                    method: method,
                    targetURI: targetURI,
                    accessToken: accessToken,
                    boundTo: thumbprint
                )
            }
            return .accepted(thumbprint: nil)
        }
        return self.verify(field, method: method, targetURI: targetURI, accessToken: accessToken, boundTo: thumbprint)
    }

    private func verify(
        _ field: String,
        method: String,
        targetURI: String,
        accessToken: String?,
        boundTo thumbprint: String?
    ) -> MockDPoPVerdict {
        self.proofsChecked.add(1, ordering: .relaxed)
        let proof: MockDPoPProof
        switch MockDPoPVerifier.verify(field) {
        case .success(let verified): proof = verified
        case .failure(let error): return self.refuse(error.description)
        }
        guard proof.htm == method else { return self.refuse("htm \(proof.htm ?? "none") is not \(method)") }
        guard proof.htu == targetURI else { return self.refuse("htu \(proof.htu ?? "none") is not \(targetURI)") }
        guard let iat = proof.iat, abs(Double(iat) - Date().timeIntervalSince1970) < 60 else {
            return self.refuse("iat is not within a minute of now")
        }
        if let accessToken {
            guard proof.ath == MockDPoPVerifier.accessTokenHash(accessToken) else { return self.refuse("wrong ath") }
            guard thumbprint == proof.thumbprint else { return self.refuse("the token is bound to another key") }
        } else if proof.ath != nil {
            return self.refuse("ath on a token request")
        }
        guard let jti = proof.jti, self.seenIDs.withLock({ $0.insert(jti).inserted }) else {
            return self.refuse("jti seen before")
        }
        if let nonce = self.nonce, proof.nonce != nonce {
            self.nonceChallenges.add(1, ordering: .relaxed)
            return .needsNonce(nonce)
        }
        self.accepted.withLock { $0.append(proof) }
        return .accepted(thumbprint: proof.thumbprint)
    }

    private func refuse(_ reason: String) -> MockDPoPVerdict {
        self.refusals.withLock { $0.append(reason) }
        return .refused(reason)
    }
}
