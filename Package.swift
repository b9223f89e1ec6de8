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
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // CBearerLinux: naming threads (the log writer's, the loops').
        .target(name: "BearerCore", dependencies: ["CBearerLinux"]),
        .target(name: "BearerHTTP", dependencies: ["BearerCore"]),
        .target(name: "BearerIO", dependencies: ["BearerCore", "CBearerLinux", "COpenSSL"]),
        // BearerIO: PEM keys (the TLS layer's) and atomic file writes, for the CA's and the DPoP key's files;
        // BearerHTTP: the host patterns a CA's name constraints permit, the origins DPoP nonces belong to.
        .target(name: "BearerCrypto", dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "COpenSSL"]),
        // BearerIO: reading the config and key files, listen addresses; BearerCrypto: the keys a config
        // names (signing keys, service-account files, the DPoP key and its prover) are loaded with it.
        .target(name: "BearerConfig", dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "BearerCrypto"]),
        // BearerCrypto: client assertions and DPoP proofs for the token calls; BearerConfig: a session is
        // made from its settings; CBearerLinux: pipe2 for token_command.
        .target(
            name: "BearerSession",
            dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "BearerCrypto", "BearerConfig", "CBearerLinux"]
        ),
        .target(
            name: "BearerProxy",
            dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "BearerCrypto", "BearerConfig", "BearerSession"]
        ),
        .target(name: "BearerMocks", dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "COpenSSL"]),
        // BearerMocks: the demo's mock API and token server (`--demo`).
        .target(
            name: "BearerCLI",
            dependencies: [
                "BearerCore", "BearerHTTP", "BearerIO", "BearerCrypto", "BearerConfig", "BearerSession", "BearerProxy",
                "BearerMocks",
            ]
        ),
        .executableTarget(name: "bearer-proxy", dependencies: ["BearerCLI", "BearerCore"]),
        .executableTarget(
            name: "bearer-bench",
            dependencies: ["BearerCore", "BearerHTTP", "BearerIO", "BearerMocks"],
            path: "bench"
        ),
        // BearerMocks: `waitUntil`, the one bounded wait for an event.
        .testTarget(name: "BearerCoreTests", dependencies: ["BearerCore", "BearerMocks"]),
        .testTarget(name: "BearerHTTPTests", dependencies: ["BearerHTTP"]),
        // BearerMocks and COpenSSL: the TLS tests drive the server side with OpenSSL's own client.
        .testTarget(name: "BearerIOTests", dependencies: ["BearerIO", "BearerMocks", "COpenSSL"]),
        .testTarget(
            name: "BearerProxyTests",
            dependencies: ["BearerCLI", "BearerProxy", "BearerCrypto", "BearerConfig", "BearerSession", "BearerMocks"]
        ),
        .testTarget(name: "EndToEndTests", dependencies: ["BearerMocks", "BearerHTTP", "BearerIO"]),
        .testTarget(name: "BenchTests", dependencies: ["bearer-bench", "BearerMocks"]),
    ],
    swiftLanguageModes: [.v6]
)
