import BearerCore
import FoundationEssentials

/// Reads the `exp` claim of a JWT access token: decoding only, the signature is not checked (the
/// upstream does that). Anything that is not a JWT simply has no known expiry.
package enum JWTExpiry {
    /// Seconds since the epoch, or nil.
    package static func expiry(of token: String) -> Double? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = self.base64URLDecode(parts[1]),
            let object = JSONText.object(payload),
            let exp = JSONText.number(object["exp"]), exp > 0
        else { return nil }
        return exp
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = String(text).replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
