import BearerConfig
import BearerCore
import BearerCrypto
import BearerHTTP
import BearerIO
import FoundationEssentials
import Glibc

/// The environment that points a program's HTTP clients at a proxy: what `bearer-proxy env` prints
/// and `bearer-proxy run` gives its program (docs/wrapping.md, "Wrapping a program"). Never a token: only an
/// address and the files to trust.
struct ClientEnvironment: Equatable {
    struct Variable: Equatable {
        var name: String
        var value: String
    }

    /// In the order `env` prints them.
    private(set) var variables: [Variable] = []

    /// The hosts that NO_PROXY lists unless an inject host names one: a local API on 127.0.0.1:3000
    /// must go through the proxy to get its token.
    static let loopbackNames = ["localhost", "127.0.0.1", "::1"]

    /// The environment for `configuration`'s proxy at `proxyURL`. `BEARER_PROXY_URL` is the default
    /// session's base URL, the proxy's own; without a default upstream a path no mount takes is a
    /// 404 there, so it is the first named session's base URL instead (the proxy's when no session
    /// has one).
    init(
        _ configuration: Configuration,
        proxyURL: String,
        trust: ClientTrustFiles?,
        sessionURLs: [(session: String, url: String)]
    ) {
        self.init(
            proxyURL: proxyURL,
            injectHosts: configuration.everyInjectHost,
            trust: trust,
            sessionURLs: sessionURLs,
            baseURL: configuration.upstream == nil ? sessionURLs.first?.url : nil
        )
    }

    /// `proxyURL`: `http://HOST:PORT`, the proxy's address, its http_proxy. `trust`: with
    /// tls_intercept on, the files clients must trust. `sessionURLs`: the base URL of each named
    /// session with a listen or a mount (`sessionURLs(_:proxyURL:listenerURL:)`). `baseURL`: the
    /// API's base URL through the proxy (nil: `proxyURL`).
    init(
        proxyURL: String,
        injectHosts: [HostPattern],
        trust: ClientTrustFiles?,
        sessionURLs: [(session: String, url: String)] = [],
        baseURL: String? = nil
    ) {
        for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"] {
            self.variables.append(Variable(name: name, value: proxyURL))
        }
        let direct = Self.loopbackNames.filter { name in
            !injectHosts.contains { $0.isBypassed(byNoProxyEntry: name) }
        }
        for name in ["NO_PROXY", "no_proxy"] {
            self.variables.append(Variable(name: name, value: direct.joined(separator: ",")))
        }
        if let trust {
            // OpenSSL (curl, Python's ssl, Go on Linux, git): one file replaces the system's store, so
            // the bundle holds both. Node adds NODE_EXTRA_CA_CERTS to its own store: the root alone.
            for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"] {
                self.variables.append(Variable(name: name, value: trust.bundle))
            }
            self.variables.append(Variable(name: "NODE_EXTRA_CA_CERTS", value: trust.root))
        }
        self.variables.append(Variable(name: "BEARER_PROXY_URL", value: baseURL ?? proxyURL))
        for (session, url) in sessionURLs {
            self.variables.append(Variable(name: Configuration.urlVariable(of: session), value: url))
        }
    }

    /// The base URL of each named session with a listen or a mount: its own listener's
    /// (`listenerURL`: nil when it has no TCP one), else the main listener's with its mount.
    static func sessionURLs(
        _ configuration: Configuration,
        proxyURL: String,
        listenerURL: (SessionSettings) throws(WrapError) -> String?
    ) throws(WrapError) -> [(session: String, url: String)] {
        var urls: [(session: String, url: String)] = []
        for session in configuration.namedSessions {
            if let url = try listenerURL(session) {
                urls.append((session.name, url))
            } else if let mount = session.mount {
                urls.append((session.name, proxyURL + mount))
            }
        }
        return urls
    }

    /// `export NAME='value'` lines, for `eval "$(bearer-proxy env)"` in any POSIX shell.
    var exportScript: String {
        self.variables.map { "export \($0.name)=\(shellQuoted($0.value))\n" }.joined()
    }

    /// `NAME=value` strings for the program: `parent` without the variables the config expanded into
    /// secrets (`removing`) and without any this environment sets, then these.
    func applied(to parent: [String: String], removing secretVariables: Set<String>) -> [String] {
        let ours = Set(self.variables.map(\.name))
        let kept = parent.filter { !ours.contains($0.key) && !secretVariables.contains($0.key) }
        return kept.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            + self.variables.map { "\($0.name)=\($0.value)" }
    }

    /// `http://HOST:PORT` for a proxy listening on `host`: an address that means "every address" is
    /// reached on the loopback one.
    static func proxyURL(host: String, port: Int) -> String {
        let reachable = ListenAddressSpec.loopback(reachingWildcard: host) ?? host
        return "http://" + (reachable.contains(":") ? "[\(reachable)]" : reachable) + ":\(port)"
    }
}

/// ca.pem and bundle.pem: what the clients of a proxy with tls_intercept on trust.
struct ClientTrustFiles: Equatable {
    var root: String
    var bundle: String
}

extension HostPattern {
    /// Whether NO_PROXY listing `entry` would send a host this pattern matches past the proxy: curl,
    /// Python, Go and Node match an entry against the host itself and every name under it.
    func isBypassed(byNoProxyEntry entry: String) -> Bool {
        let host =
            switch self {
            case .host(let host), .hostAndPort(let host, _): host
            case .subdomains(let domain): domain
            }
        return host == entry || host.hasSuffix("." + entry)
    }
}

extension ClientTrustFiles {
    /// The local CA's files for `configuration`: the CA is opened, or made when there is none (as a
    /// start with tls_intercept on makes it), and bundle.pem is written when missing (`bearer-proxy ca
    /// --bundle` rewrites it after the system's store changed). Returns whether the CA was made.
    static func prepare(
        _ configuration: Configuration,
        environment: [String: String]
    ) throws(LocalCAError) -> (files: ClientTrustFiles, madeCA: Bool) {
        guard let directory = configuration.intercept.caDirectory else { throw .noDirectory }
        let files = CAFiles(directory: directory)
        let (ca, wasCreated) = try LocalCA.open(
            files,
            permitting: configuration.everyInjectHost,
            now: wallClockEpochSeconds()
        )
        if access(files.bundle, F_OK) != 0 {
            let trustStore = SystemTrustStore(environment: environment)
            try files.withLock { () throws(LocalCAError) in try ca.writeBundle(to: files, trustStore: trustStore) }
        }
        return (ClientTrustFiles(root: files.root, bundle: files.bundle), wasCreated)
    }
}
