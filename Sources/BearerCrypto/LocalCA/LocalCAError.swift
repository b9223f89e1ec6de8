/// Why the local CA cannot be used, made or written: one line naming the file and what to do.
package enum LocalCAError: Error, Equatable, CustomStringConvertible {
    /// Neither ca_dir nor a HOME to derive it from.
    case noDirectory
    case cannotCreate(path: String, reason: String)
    case unreadable(path: String, reason: String)
    /// Some of its files are there, some are not.
    case incomplete(directory: String, missing: String)
    /// A file is not what the CA wrote: not PEM, not matching, not constrained.
    case invalid(path: String, reason: String)
    case keyReadableByOthers(path: String, mode: UInt32)
    case expired(path: String, notAfter: String)
    case notYetValid(path: String, notBefore: String)
    /// An inject host the CA's nameConstraints do not permit: the CA was made for other hosts.
    case outsideConstraints(host: String, rootFile: String, permitted: String)
    case cannotWrite(path: String, reason: String)
    /// The system's trust store (for bundle.pem) is nowhere to be found.
    case noSystemTrustStore(looked: [String])
    case openSSL(String)

    static let renewHint = "`bearer-proxy ca --renew` makes a new CA (clients must then trust the new ca.pem)"

    /// The sentence `bearer-proxy run` prints: run can also do without the CA, so a CA made for
    /// other hosts names that way out too.
    package var descriptionUnderRun: String {
        guard case .outsideConstraints = self else { return self.description }
        return self.description
            + "; or pass --no-intercept to bearer-proxy run, if the program calls the API through BEARER_PROXY_URL (or http://) rather than https://"
    }

    package var description: String {
        switch self {
        case .noDirectory:
            "ca_dir: no default without HOME or XDG_DATA_HOME; set ca_dir to the local CA's folder"
        case .cannotCreate(let path, let reason):
            "\(path): cannot create the local CA's folder: \(reason)"
        case .unreadable(let path, let reason):
            "\(path): cannot read the local CA: \(reason)"
        case .incomplete(let directory, let missing):
            "\(directory): the local CA is incomplete (\(missing) is missing); \(Self.renewHint)"
        case .invalid(let path, let reason):
            "\(path): not a usable local CA: \(reason); \(Self.renewHint)"
        case .keyReadableByOthers(let path, let mode):
            "\(path): mode \(String(mode, radix: 8)) lets other users read the CA's key; chmod 600 it (or \(Self.renewHint))"
        case .expired(let path, let notAfter):
            "\(path): the local CA expired on \(notAfter); \(Self.renewHint)"
        case .notYetValid(let path, let notBefore):
            "\(path): the local CA is valid only from \(notBefore) (is the clock right?)"
        case .outsideConstraints(let host, let rootFile, let permitted):
            "inject host \(host) is outside the local CA's name constraints (\(rootFile) permits \(permitted)): the CA in that folder was made for other inject hosts (another config using it?): give this config a ca_dir of its own, or run `bearer-proxy ca --renew` to replace it with one for the current inject_hosts, then trust the new ca.pem"
        case .cannotWrite(let path, let reason):
            "\(path): cannot write the local CA: \(reason)"
        case .noSystemTrustStore(let looked):
            "cannot find the system's CA certificates (looked at \(looked.joined(separator: ", "))); set SSL_CERT_FILE to the system bundle"
        case .openSSL(let reason):
            "cannot make the local CA: \(reason)"
        }
    }
}
