import BearerConfig
import BearerSession

/// JSON Web Tokens and keys from outside: an access token read as a JWT for its `exp` and `aud`
/// (never verified, only decoded), and a service-account key file (JSON with a PEM key inside, as a
/// console downloads it). The first byte picks which.
enum JWTFuzz {
    static func run(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let rest = Array(input.dropFirst())
        if first & 1 == 0 {
            let token = String(decoding: rest, as: UTF8.self)
            _ = JWTExpiry.expiry(of: token)
            _ = JWTAudience.audiences(of: token)
        } else {
            _ = try? ServiceAccountKey.parse(rest, path: "fuzz.json")
        }
    }
}
