// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "BearerProxy",
    products: [
        .executable(name: "bearer-proxy", targets: ["bearer-proxy"]),
        .executable(name: "bearer-bench", targets: ["bearer-bench"]),
    ],
    targets: [
        .target(name: "CBearerLinux"),
        // The commit `--version` names, which the BuildCommit plugin writes whenever HEAD moves.
        .target(name: "BearerBuildInfo", plugins: ["BuildCommit"]),
        .plugin(name: "BuildCommit", capability: .buildTool()),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // CBearerLinux: naming threads (the log writer's, the loops').
        .target(name: "BearerCore", dependencies: ["CBearerLinux"]),
        .target(name: "BearerHTTP", dependencies: ["BearerCore"]),
        // HTTP/2 as values (HPACK, frames, header validation), no I/O; BearerHTTP: the field-name table.
        .target(name: "BearerHTTP2", dependencies: ["BearerCore", "BearerHTTP"]),
        .target(name: "BearerIO", dependencies: ["BearerCore", "CBearerLinux", "COpenSSL"]),
        // BearerIO: PEM keys (the TLS layer's) and atomic file writes, for the CA's and the DPoP key's files;
        // BearerHTTP: the host patterns a CA's name constraints permit, the origins DPoP nonces belong to.
        .target(name: "BearerCrypto", dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "COpenSSL"]),
        // BearerIO: reading the config and key files, listen addresses; BearerCrypto: loading reads the
        // key files a config names to check them (writing none, keeping no key), and SessionCredentials
        // reads them, and makes the DPoP key, for the start-ups that sign.
        .target(name: "BearerConfig", dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "BearerCrypto"]),
        // The desktop's keyring: a D-Bus client of our own (no libdbus at run time) and the freedesktop
        // Secret Service over it. Only BearerCore: sockets to the bus are blocking and bounded, used off
        // the event loops, so nothing of BearerIO's loops is needed; BearerSession builds the credential
        // store on it.
        .target(name: "BearerKeyring", dependencies: ["BearerCore"]),
        // BearerCrypto: client assertions and DPoP proofs for the token calls; BearerConfig: a session is
        // made from its settings; CBearerLinux: pipe2 for token_command; BearerKeyring: the refresh token
        // kept in the desktop's keyring (credential_store).
        .target(
            name: "BearerSession",
            dependencies: [
                "BearerCore", "BearerHTTP", "BearerIO", "BearerCrypto", "BearerConfig", "BearerKeyring", "CBearerLinux",
            ]
        ),
        .target(
            name: "BearerProxy",
            dependencies: [
                "BearerCore", "BearerHTTP", "BearerHTTP2", "BearerIO", "BearerCrypto", "BearerConfig", "BearerSession",
            ]
        ),
        // The `--demo` feature: a mock API and a mock token endpoint on our event loops; BearerCrypto: the
        // SHA-1 of a WebSocket handshake.
        .target(name: "BearerDemo", dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "BearerCrypto"]),
        // BearerDemo: the demo's mock API and token server (`--demo`).
        .target(
            name: "BearerCLI",
            dependencies: [
                "BearerCore", "BearerHTTP", "BearerIO", "BearerCrypto", "BearerConfig", "BearerSession", "BearerProxy",
                "BearerDemo", "BearerBuildInfo",
            ]
        ),
        .executableTarget(name: "bearer-proxy", dependencies: ["BearerCLI", "BearerCore"]),
        // docs/configuration.md's reference, proxy.conf.example and the man pages, made from the key table
        // and the commands' flag tables; `swift run bearer-docs` writes them (no product: not installed).
        .target(name: "BearerDocs", dependencies: ["BearerCore", "BearerConfig", "BearerCLI"]),
        .executableTarget(name: "bearer-docs", dependencies: ["BearerDocs"]),
        // BearerConfig: a run against your own stack reads your config's session (its upstream and
        // token endpoint) to say what it will do before anything is sent.
        .executableTarget(
            name: "bearer-bench",
            dependencies: [
                "BearerCore", "BearerHTTP", "BearerHTTP2", "BearerIO", "BearerConfig", "BearerDemo", "BearerTestSupport",
            ],
            path: "bench"
        ),
        // The libFuzzer targets, one per parser of outside bytes (docs/development.md, "Fuzzing"), and
        // the one executable that runs them: with libFuzzer when scripts/fuzz links it in, as a replay
        // of files otherwise. Not installed.
        .target(
            name: "BearerFuzzTargets",
            dependencies: [
                "BearerCore", "BearerHTTP", "BearerHTTP2", "BearerIO", "BearerCrypto", "BearerConfig", "BearerSession",
            ],
            path: "fuzz/Targets"
        ),
        .executableTarget(name: "bearer-fuzz", dependencies: ["BearerCore", "BearerFuzzTargets"], path: "fuzz/Driver"),
        // What only tests and the bench use (the executable does not link it): `waitUntil`, child
        // programs (redis-server, openssl), test keys, blocking clients, the token endpoint's login
        // endpoints and its checks of signed JWTs and DPoP proofs; a private session bus and keyring
        // (BearerKeyring: asking whether the keyring is up, locking it). COpenSSL: those verifiers are
        // OpenSSL used directly, so that what checks the proxy's signatures is not the proxy's signer.
        .target(
            name: "BearerTestSupport",
            dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "BearerDemo", "BearerKeyring", "COpenSSL"],
            path: "Tests/Support"
        ),
        // BearerTestSupport: `waitUntil`, the one bounded wait for an event.
        .testTarget(name: "BearerCoreTests", dependencies: ["BearerCore", "BearerTestSupport"]),
        .testTarget(name: "BearerHTTPTests", dependencies: ["BearerHTTP"]),
        // BearerTestSupport: the seeded generator of the connection machine's randomized tests.
        .testTarget(name: "BearerHTTP2Tests", dependencies: ["BearerHTTP2", "BearerCore", "BearerTestSupport"]),
        // BearerTestSupport and COpenSSL: the TLS tests drive the server side with OpenSSL's own client.
        .testTarget(name: "BearerIOTests", dependencies: ["BearerIO", "BearerTestSupport", "COpenSSL"]),
        // BearerDemo: a mock API to serve forged leaves; COpenSSL: the forged leaves' extensions.
        .testTarget(
            name: "BearerCryptoTests",
            dependencies: ["BearerCrypto", "BearerDemo", "BearerTestSupport", "COpenSSL"]
        ),
        // BearerTestSupport: dbus-daemon and gnome-keyring-daemon started per test, a bus that never answers.
        .testTarget(name: "BearerKeyringTests", dependencies: ["BearerKeyring", "BearerCore", "BearerTestSupport"]),
        .testTarget(name: "BearerConfigTests", dependencies: ["BearerConfig", "BearerTestSupport"]),
        // BearerDemo: the mock token endpoint the sessions' calls go to.
        .testTarget(
            name: "BearerSessionTests",
            dependencies: ["BearerSession", "BearerConfig", "BearerCrypto", "BearerDemo", "BearerTestSupport"]
        ),
        // The whole proxy in this process (ProxyFixture, SessionFixture) in front of the demo's mocks;
        // COpenSSL: a client's TLS through an intercepted tunnel.
        .testTarget(
            name: "BearerProxyTests",
            dependencies: [
                "BearerProxy", "BearerSession", "BearerConfig", "BearerCrypto", "BearerDemo", "BearerTestSupport",
                "BearerHTTP2", "COpenSSL",
            ]
        ),
        .testTarget(
            name: "BearerCLITests",
            dependencies: [
                "BearerCLI", "BearerProxy", "BearerSession", "BearerConfig", "BearerCrypto", "BearerDemo",
                "BearerTestSupport",
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["BearerDemo", "BearerTestSupport", "BearerHTTP", "BearerIO"]
        ),
        .testTarget(name: "BearerDocsTests", dependencies: ["BearerDocs", "BearerConfig", "BearerTestSupport"]),
        // Every file of fuzz/corpus run through its target: each crash kept there stays a test.
        .testTarget(name: "BearerFuzzTests", dependencies: ["BearerFuzzTargets"]),
        .testTarget(name: "BenchTests", dependencies: ["bearer-bench", "BearerDemo", "BearerTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// A sanitizer's build (scripts/sanitize) compiles only what its suites run: BEARER_TEST_TARGETS names
// those test targets, and the package keeps them and what they depend on, leaving out the other test
// targets and the executables (the thread build drops about half the code it would compile).
if let kept = Context.environment["BEARER_TEST_TARGETS"] {
    var needed = Set(kept.split(separator: ",").map(String.init))
    var grew = true
    while grew {
        grew = false
        for target in package.targets where needed.contains(target.name) {
            for dependency in target.dependencies {
                switch dependency {
                case .targetItem(let name, _), .byNameItem(let name, _):
                    grew = needed.insert(name).inserted || grew
                default: break
                }
            }
            for plugin in target.plugins ?? [] {
                if case .plugin(let name, _) = plugin { grew = needed.insert(name).inserted || grew }
            }
        }
    }
    package.targets.removeAll { !needed.contains($0.name) }
    package.products.removeAll()
}
