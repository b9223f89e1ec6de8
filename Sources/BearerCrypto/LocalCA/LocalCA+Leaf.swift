import BearerIO
import COpenSSL

/// Why a host got no leaf: one line, safe to log (no key material).
package struct LeafIssuanceError: Error, Equatable, CustomStringConvertible {
    package var description: String

    package init(description: String) {
        self.description = description
    }
}

/// A host a leaf certificate can name: a DNS name (lower case, letters, digits, `-`, `_`, dots between
/// labels) or an IP address.
package enum LeafHost: Equatable, CustomStringConvertible {
    case dns(String)
    case ip([UInt8])

    package init?(_ host: String) {
        if let address = parseIPAddress(host) {
            self = .ip(address)
            return
        }
        let name = host.lowercased()
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let isValid =
            name.utf8.count <= 253
            && labels.allSatisfy { label in
                (1...63).contains(label.utf8.count)
                    && label.utf8.allSatisfy { byte in
                        (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2d || byte == 0x5f
                    }
            }
        guard isValid else { return nil }
        self = .dns(name)
    }

    /// The subjectAltName, in OpenSSL's configuration syntax.
    var subjectAltName: String {
        switch self {
        case .dns(let name): "DNS:\(name)"
        case .ip(let address): "IP:\(formatIPAddress(address))"
        }
    }

    package var description: String {
        switch self {
        case .dns(let name): name
        case .ip(let address): formatIPAddress(address)
        }
    }
}

extension LocalCA {
    /// The longest a leaf is valid (it is renewed well before).
    static let leafLifetimeSeconds: Int64 = 30 * 86_400

    /// A leaf for `host`, its key `key`, signed by the intermediate: EC P-256, subjectAltName the host,
    /// valid from an hour ago for 30 days (never past the intermediate). A DNS host is also the subject
    /// CN; an IP host's leaf has no CN, since OpenSSL checks a host-like CN (`127.0.0.1`) against the
    /// DNS constraints and would refuse the chain.
    package func issueLeaf(
        for host: LeafHost,
        key: PEMPrivateKey,
        now: Int64
    ) throws(LeafIssuanceError) -> X509Certificate {
        guard self.intermediateConstraints.permits(host: host.description) else {
            throw LeafIssuanceError(
                description: "the local CA's name constraints do not permit \(host) (bearer-proxy ca --renew)"
            )
        }
        var subject: [(field: String, value: String)] = [("O", "bearer-proxy")]
        if case .dns(let name) = host { subject.append(("CN", name)) }
        let request = CertificateRequest(
            subject: subject,
            notBefore: now - Self.backdatingSeconds,
            notAfter: min(now + Self.leafLifetimeSeconds, self.intermediate.notAfter),
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_alt_name, host.subjectAltName),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ]
        )
        do throws(CertificateRequest.SigningError) {
            return try request.sign(subjectKey: key, issuer: self.intermediate, issuerKey: self.intermediateKey)
        } catch {
            throw LeafIssuanceError(description: "cannot issue a leaf for \(host): \(error.description)")
        }
    }
}
