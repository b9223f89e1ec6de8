import BearerCore
import BearerHTTP
import Synchronization

/// The newest `DPoP-Nonce` each origin gave (RFC 9449 §8 for the token endpoint, §9 for resource
/// servers): put in the next proof for that origin. The token endpoint and each upstream are apart,
/// because each server issues and checks its own nonces.
package final class DPoPNonceStore: Sendable {
    private let nonces = Locked<[Origin: String]>([:])

    package init() {}

    package func nonce(for origin: Origin) -> String? {
        self.nonces.withLock { $0[origin] }
    }

    /// Remembers `nonce` for `origin` (the newest wins); says whether it differs from the one held.
    /// A value that could not go in a JWT string as it is (not printable ASCII) is ignored: RFC 9449
    /// §8.1 allows only `NQCHAR`s (%x21 / %x23-5B / %x5D-7E).
    @discardableResult
    package func remember(_ nonce: String, for origin: Origin) -> Bool {
        guard !nonce.isEmpty, nonce.utf8.count <= 1024,
            nonce.utf8.allSatisfy({ $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) })
        else { return false }
        return self.nonces.withLock { nonces in
            let isNew = nonces[origin] != nonce
            nonces[origin] = nonce
            return isNew
        }
    }
}
