// The seam between the local CA and the intercepting tunnel (docs/https-interception.md, "HTTPS clients").
//
// One `InterceptCertificates` per proxy, made at start when tls_intercept is on
// (`InterceptCertificates.start(caDirectory:permitting:configFile:offersHTTP2:logger:)`, which loads or makes
// the CA and checks it against the inject hosts; `ProxyRuntime.interceptCertificates`). Sendable:
// any loop may use it. For a CONNECT target's host (as `ProxyNames.normalizedHost` gives it: lower
// case, IPv6 without brackets; the port does not matter, a certificate names no port), a tunnel
// asks:
//
//     if let tls = certificates.cachedContext(forHost: host) {
//         // the hot path: every tunnel to a host after its first one
//     } else {
//         certificates.context(forHost: host, on: loop) { result in
//             // on `loop`, later: .success(TLSContext) or .failure(LeafIssuanceError)
//         }
//     }
//
// - `cachedContext(forHost:)`: synchronous, any thread; the host's context while its leaf is
//   fresh, else nil. One uncontended pthread mutex around one dictionary lookup.
// - `context(forHost:on:_:)`: call on `loop`; the completion runs on `loop` (through
//   `loop.execute`), never inline. Concurrent callers for one host share one issuance. Issuing
//   happens off the event loops, so no loop waits for a signature.
// - The `TLSContext` is a server context (`TLSContext.server(certificate:chain:privateKey:)`): the
//   leaf, then the intermediate, in the handshake; TLS 1.2 minimum; ALPN `h2` then `http/1.1`
//   (`http/1.1` only with http2 = off: `offersHTTP2`), the tunnel speaking what it selected; session
//   resumption by ticket and by session ID. Its `makeConnection` (no server name, no session key)
//   gives a connection in the accept state.
// - `rootFile`: the absolute path of ca.pem, for the line that tells a refusing client what to trust.

import BearerCore
import BearerCrypto
import BearerHTTP
import BearerIO
import Synchronization

/// Leaf certificates for intercepted hosts, issued by the local CA, cached in memory as server TLS
/// contexts.
///
/// Issuance runs on a thread of its own (key, certificate, signature, context: about 0.3 ms of CPU,
/// docs/https-interception.md "HTTPS clients"), and its result comes back to each waiting loop with `loop.execute`.
/// The leaves are kept for `capacity` hosts (least recently used evicted), each renewed in the
/// background once two thirds of its life is over. Keys of leaves live only in memory.
package final class InterceptCertificates: Sendable {
    /// The absolute path of ca.pem: what clients must trust.
    package let rootFile: String
    private let authority: LocalCA
    private let state: Locked<LeafCache<TLSContext, Waiter>>
    private let runIssuance: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// Seconds since 1970: certificates and their expiry speak wall-clock time.
    private let wallClock: @Sendable () -> Int64
    private let logger: Logger
    private let issuedCount = Atomic<Int>(0)
    /// The leaves' contexts select ALPN `h2` before `http/1.1` (http2 = on).
    private let offersHTTP2: Bool

    /// How many hosts keep a leaf at once (a context with its leaf is about 13 KiB).
    package static let defaultCapacity = 256

    /// Where leaves are made: not the shared blocking pool, whose threads may all be waiting on
    /// getaddrinfo or a token command while a handshake waits for its certificate. One thread: an
    /// issuance is 0.3 ms of CPU, and a host needs one a month. Made with the first
    /// InterceptCertificates (a static is initialised on first use).
    static let issuanceThread = BlockingWorkPool(threadCount: 1, name: "bearer-leaves")

    /// A waiting tunnel: its completion runs only on its loop.
    private struct Waiter: @unchecked Sendable {
        let loop: EventLoop
        let completion: (Result<TLSContext, LeafIssuanceError>) -> Void

        func complete(_ result: Result<TLSContext, LeafIssuanceError>) {
            self.loop.execute { self.completion(result) }
        }
    }

    /// Loads the CA in `caDirectory` or makes it there, and checks it permits every host of `patterns`
    /// (every session's inject hosts). Blocking: call at start, off the event loops. `configFile`: the
    /// config the proxy runs (nil: none), for the line that says how clients trust a CA made now.
    /// `issuance`: where leaves are made instead of their own thread (a test's settling pool).
    package static func start(
        caDirectory: String,
        permitting patterns: [HostPattern],
        configFile: String?,
        offersHTTP2: Bool,
        issuance: BlockingWorkPool? = nil,
        logger: Logger
    ) throws(LocalCAError) -> InterceptCertificates {
        let files = CAFiles(directory: caDirectory)
        let (authority, wasCreated) = try LocalCA.open(files, permitting: patterns, now: wallClockEpochSeconds())
        if wasCreated {
            // Whatever the log level (`run` logs at warn): said once in the CA's life, it is how a
            // user learns that a folder now holds a CA which only these hosts' configs can share.
            logger.announce(
                "made a local CA; clients must trust its ca.pem",
                [
                    "ca_dir": caDirectory, "permits": HostPattern.hostList(patterns),
                    "trust_with": Self.bundleCommand(configFile: configFile),
                ]
            )
        } else if authority.intermediateConstraints != NameConstraints(permitting: patterns) {
            logger.info(
                "the local CA permits more hosts than inject_hosts names; bearer-proxy ca --renew narrows it",
                ["ca": files.root, "permits": authority.intermediateConstraints.description]
            )
        }
        return InterceptCertificates(
            authority: authority,
            rootFile: files.root,
            runIssuance: { (issuance ?? issuanceThread).execute($0) },
            offersHTTP2: offersHTTP2,
            logger: logger
        )
    }

    /// `bearer-proxy ca --config FILE --bundle`, which prints the file OpenSSL clients trust
    /// (SSL_CERT_FILE) for the proxy of `configFile` (nil: the default config file's): the next step
    /// the line about a CA the proxy made gives.
    package static func bundleCommand(configFile: String?) -> String {
        guard let configFile else { return "bearer-proxy ca --bundle" }
        return "bearer-proxy ca --config \(shellWord(configFile)) --bundle"
    }

    init(
        authority: LocalCA,
        rootFile: String,
        capacity: Int = InterceptCertificates.defaultCapacity,
        wallClock: @escaping @Sendable () -> Int64 = wallClockEpochSeconds,
        runIssuance: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { issuanceThread.execute($0) },
        offersHTTP2: Bool = false,
        logger: Logger
    ) {
        self.offersHTTP2 = offersHTTP2
        self.authority = authority
        self.rootFile = rootFile
        self.state = Locked(LeafCache(capacity: capacity))
        self.wallClock = wallClock
        self.runIssuance = runIssuance
        self.logger = logger
    }

    /// Leaves issued since start (renewals included): `bearer_proxy_leaf_certificates_issued_total`.
    package var leavesIssued: Int { self.issuedCount.load(ordering: .relaxed) }

    /// The host's server context while its leaf is fresh; nil: ask `context(forHost:on:_:)`.
    package func cachedContext(forHost host: String) -> TLSContext? {
        let now = self.wallClock()
        return self.state.withLock { $0.freshLeaf(for: host, now: now) }
    }

    /// The host's server context, issued when there is none; `completion` runs on `loop`. Call on `loop`.
    package func context(
        forHost host: String,
        on loop: EventLoop,
        _ completion: @escaping (Result<TLSContext, LeafIssuanceError>) -> Void
    ) {
        loop.assertInEventLoop()
        let waiter = Waiter(loop: loop, completion: completion)
        guard let leafHost = LeafHost(host) else {
            waiter.complete(.failure(LeafIssuanceError(description: "cannot make a certificate for '\(host)'")))
            return
        }
        let now = self.wallClock()
        let action = self.state.withLock { $0.leafRequested(for: host, by: waiter, now: now) }
        switch action {
        case .use(let context):
            waiter.complete(.success(context))
        case .useAndRenew(let context):
            waiter.complete(.success(context))
            self.runIssuance { self.issue(host, leafHost) }
        case .wait:
            break
        case .issue:
            self.runIssuance { self.issue(host, leafHost) }
        }
    }

    /// On the issuance thread: one leaf for `host`, then every waiter told on its own loop.
    private func issue(_ host: String, _ leafHost: LeafHost) {
        let started = Instant.now()
        let now = self.wallClock()
        switch self.makeContext(for: leafHost, now: now) {
        case .success(let (context, notAfter)):
            self.issuedCount.add(1, ordering: .relaxed)
            let lifetime = notAfter - now
            let waiters = self.state.withLock { state in
                state.leafIssued(
                    context,
                    for: host,
                    renewAfter: now + lifetime * 2 / 3,
                    expiresAt: notAfter - min(lifetime / 10, 3_600)
                )
            }
            self.logger.debug(
                "leaf certificate issued",
                [
                    "host": host, "not_after": formatUTC(notAfter),
                    "microseconds": "\((Instant.now() - started).nanoseconds / 1_000)",
                ]
            )
            for waiter in waiters { waiter.complete(.success(context)) }
        case .failure(let error):
            let waiters = self.state.withLock { $0.issuanceFailed(for: host) }
            self.logger.warn("cannot issue a leaf certificate", ["host": host, "error": error.description])
            for waiter in waiters { waiter.complete(.failure(error)) }
        }
    }

    /// A fresh key, its leaf, and the server context presenting leaf + intermediate.
    private func makeContext(
        for host: LeafHost,
        now: Int64
    ) -> Result<(TLSContext, notAfter: Int64), LeafIssuanceError> {
        guard let key = PEMPrivateKey.generateP256() else {
            return .failure(LeafIssuanceError(description: "cannot make an EC P-256 key: \(lastOpenSSLError())"))
        }
        let leaf: X509Certificate
        do throws(LeafIssuanceError) {
            leaf = try self.authority.issueLeaf(for: host, key: key, now: now)
        } catch {
            return .failure(error)
        }
        do throws(TLSConfigurationError) {
            let context = try TLSContext.server(
                certificate: leaf.pointer,
                chain: [self.authority.intermediate.pointer],
                privateKey: key.pointer,
                offersHTTP2: self.offersHTTP2
            )
            return .success((context, leaf.notAfter))
        } catch {
            return .failure(LeafIssuanceError(description: "cannot serve the leaf for \(host): \(error.description)"))
        }
    }
}
