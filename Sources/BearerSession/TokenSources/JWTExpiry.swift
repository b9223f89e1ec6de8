import BearerCore
import FoundationEssentials

/// Reads the `exp` claim of a JWT access token: decoding only, the signature is not checked (the
/// upstream does that). Anything that is not a JWT simply has no known expiry.
package enum JWTExpiry {
    /// Seconds since the epoch, or nil.
    package static func expiry(of token: String) -> Double? {
        guard let exp = JSONText.number(self.claims(of: token)?["exp"]), exp > 0 else { return nil }
        return exp
    }

    /// The payload of a token that is a JWT (three dot-separated parts), unverified; nil otherwise.
    package static func claims(of token: String) -> [String: Any]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = self.base64URLDecode(parts[1]) else { return nil }
        return JSONText.object(payload)
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = String(text).replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
