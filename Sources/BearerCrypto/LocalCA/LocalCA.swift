import BearerHTTP
import BearerIO
import COpenSSL
import FoundationEssentials

/// The local CA in memory: the root clients trust, and the intermediate that signs the leaves (with
/// its key). The root's key is not here: it existed only inside `make`, and nobody can issue another
/// intermediate under the root.
///
/// Both certificates carry critical nameConstraints permitting only the inject hosts (see
/// `NameConstraints`). The root's make the CA worthless for any other site in clients that apply a
/// trust anchor's own constraints; the intermediate's do the same in every client, Java's PKIX
/// included, which ignores a trust anchor's constraints. docs/https-interception.md.
package struct LocalCA: Sendable {
    let root: X509Certificate
    package let intermediate: X509Certificate
    let intermediateKey: PEMPrivateKey
    let rootConstraints: NameConstraints
    package let intermediateConstraints: NameConstraints

    /// How long the root and the intermediate are valid: a renewed root must be trusted anew by every
    /// client, so it is not meant to be renewed on a schedule; the leaves live 30 days.
    static let lifetimeSeconds: Int64 = 10 * 365 * 86_400
    /// How far back validity starts, for clients whose clock is a little behind (containers, VMs).
    static let backdatingSeconds: Int64 = 3_600

    /// A new root and intermediate for `patterns`. The root's key is made here, signs the root and the
    /// intermediate, and is freed (its scalar cleared) before this returns; it is never encoded.
    static func make(permitting patterns: [HostPattern], now: Int64) throws(LocalCAError) -> LocalCA {
        let constraints = NameConstraints(permitting: patterns)
        let name = Self.distinguishingName(now: now)
        let notBefore = now - Self.backdatingSeconds
        let notAfter = now + Self.lifetimeSeconds
        guard let intermediateKey = PEMPrivateKey.generateP256() else { throw .openSSL("cannot make an EC P-256 key") }
        let (root, intermediate) = try Self.signRootAndIntermediate(
            name: name,
            constraints: constraints,
            notBefore: notBefore,
            notAfter: notAfter,
            intermediateKey: intermediateKey
        )
        return LocalCA(
            root: root,
            intermediate: intermediate,
            intermediateKey: intermediateKey,
            rootConstraints: constraints,
            intermediateConstraints: constraints
        )
    }

    /// The one scope the root's key lives in.
    private static func signRootAndIntermediate(
        name: String,
        constraints: NameConstraints,
        notBefore: Int64,
        notAfter: Int64,
        intermediateKey: PEMPrivateKey
    ) throws(LocalCAError) -> (X509Certificate, X509Certificate) {
        guard let rootKey = PEMPrivateKey.generateP256() else { throw .openSSL("cannot make an EC P-256 key") }
        let rootRequest = CertificateRequest(
            subject: [("O", "bearer-proxy"), ("CN", "bearer-proxy root CA \(name)")],
            notBefore: notBefore,
            notAfter: notAfter,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:1"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
                (NID_name_constraints, constraints.extensionValue),
            ]
        )
        let intermediateRequest = CertificateRequest(
            subject: [("O", "bearer-proxy"), ("CN", "bearer-proxy intermediate CA \(name)")],
            notBefore: notBefore,
            notAfter: notAfter,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
                (NID_name_constraints, constraints.extensionValue),
            ]
        )
        do throws(CertificateRequest.SigningError) {
            let root = try rootRequest.sign(subjectKey: rootKey, issuer: nil, issuerKey: rootKey)
            let intermediate = try intermediateRequest.sign(
                subjectKey: intermediateKey,
                issuer: root,
                issuerKey: rootKey
            )
            return (root, intermediate)
        } catch {
            throw .openSSL(error.description)
        }
    }

    /// `2026-12-01 3fa9c2d1`: the day it was made (to tell an old root from a new one in a trust store)
    /// and 32 random bits (two made on one day differ).
    private static func distinguishingName(now: Int64) -> String {
        var tag = [UInt8](repeating: 0, count: 4)
        _ = RAND_bytes(&tag, Int32(tag.count))
        let day = Date(timeIntervalSince1970: TimeInterval(now)).ISO8601Format(.iso8601.year().month().day())
        return "\(day) " + tag.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// Throws for the first pattern that the root's or the intermediate's constraints do not permit.
    func check(permits patterns: [HostPattern], rootFile: String) throws(LocalCAError) {
        for pattern in patterns
        where !self.rootConstraints.permits(pattern) || !self.intermediateConstraints.permits(pattern) {
            throw .outsideConstraints(
                host: pattern.hostDescription,
                rootFile: rootFile,
                permitted: self.intermediateConstraints.description
            )
        }
    }

    /// The checks a loaded CA must pass: what `make` would have made, and valid now.
    static func verified(
        root: X509Certificate,
        intermediate: X509Certificate,
        intermediateKey: PEMPrivateKey,
        files: CAFiles,
        now: Int64
    ) throws(LocalCAError) -> LocalCA {
        guard root.isSigned(by: root) else { throw .invalid(path: files.root, reason: "the root is not self-signed") }
        guard intermediate.isSigned(by: root) else {
            throw .invalid(path: files.intermediate, reason: "it is not signed by ca.pem")
        }
        guard intermediateKey.kind == .ec(curve: "P-256"), intermediate.isCertified(intermediateKey) else {
            throw .invalid(path: files.key, reason: "it is not the EC P-256 key of intermediate.pem")
        }
        guard let rootConstraints = NameConstraints(of: root) else {
            throw .invalid(path: files.root, reason: "it carries no critical DNS and IP nameConstraints")
        }
        guard let intermediateConstraints = NameConstraints(of: intermediate) else {
            throw .invalid(path: files.intermediate, reason: "it carries no critical DNS and IP nameConstraints")
        }
        for (certificate, path) in [(root, files.root), (intermediate, files.intermediate)] {
            if now > certificate.notAfter { throw .expired(path: path, notAfter: formatUTC(certificate.notAfter)) }
            if now < certificate.notBefore {
                throw .notYetValid(path: path, notBefore: formatUTC(certificate.notBefore))
            }
        }
        return LocalCA(
            root: root,
            intermediate: intermediate,
            intermediateKey: intermediateKey,
            rootConstraints: rootConstraints,
            intermediateConstraints: intermediateConstraints
        )
    }
}

extension HostPattern {
    /// The host part, as an error names it: `api.example.com`, `*.example.com`, `[::1]`.
    var hostDescription: String {
        switch self {
        case .host, .subdomains: self.description
        case .hostAndPort(let host, _): host.contains(":") ? "[\(host)]" : host
        }
    }

    /// `api.example.com, *.example.org, 127.0.0.1`: the hosts a CA made for `patterns` may vouch for,
    /// each once (two ports of one host are one name to a certificate), as the lines about it say.
    package static func hostList(_ patterns: [HostPattern]) -> String {
        var seen: Set<String> = []
        return patterns.map(\.hostDescription).filter { seen.insert($0).inserted }.joined(separator: ", ")
    }
}

/// `2026-12-01T10:00:00Z`.
package func formatUTC(_ seconds: Int64) -> String {
    Date(timeIntervalSince1970: TimeInterval(seconds)).ISO8601Format()
}
