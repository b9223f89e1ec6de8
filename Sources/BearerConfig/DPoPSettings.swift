/// DPoP for one session: `dpop` and `dpop_key_file` (docs/token-sources.md, "Sender-constrained tokens: DPoP").
package struct DPoPSettings: Sendable {
    /// `dpop = on`: token requests carry a proof, and requests with a DPoP-bound token carry one each.
    package var isEnabled = false
    /// dpop_key_file; nil until the loader puts in the default (a named session's is `dpop-key-NAME.pem`).
    package var keyFile: String?
    /// The thumbprint of the key loading found in the file (what `--check` shows); nil with dpop off
    /// or when there is no key yet: the proxy's start or `login` makes it (`makeProver`).
    package var thumbprint: String?

    package init() {}
}
