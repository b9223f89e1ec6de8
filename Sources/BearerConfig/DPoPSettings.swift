/// DPoP for one session: `dpop` and `dpop_key_file` (README, "Sender-constrained tokens: DPoP").
package struct DPoPSettings: Sendable {
    /// `dpop = on`: token requests carry a proof, and requests with a DPoP-bound token carry one each.
    package var isEnabled = false
    /// dpop_key_file; nil until the loader puts in the default.
    package var keyFile: String?
    /// A named session's name: its default key file is `dpop-key-NAME.pem`. Nil for the default session.
    package var sectionName: String?
    /// The thumbprint of the key loading found in the file (what `--check` shows); nil with dpop off
    /// or when there is no key yet: the proxy's start or `login` makes it (`makeProver`).
    package var thumbprint: String?

    package init() {}
}
