import BearerCrypto

/// DPoP for one session: `dpop` and `dpop_key_file` (README, "Sender-constrained tokens: DPoP").
package struct DPoPSettings: Sendable {
    /// `dpop = on`: token requests carry a proof, and requests with a DPoP-bound token carry one each.
    package var isEnabled = false
    /// dpop_key_file; nil until the loader puts in the default.
    package var keyFile: String?
    /// A named session's name: its default key file is `dpop-key-NAME.pem`. Nil for the default session.
    package var sectionName: String?
    /// The key read (or made) at start, and the proofs it signs; nil with dpop off.
    package var prover: DPoPProver?

    package init() {}
}
