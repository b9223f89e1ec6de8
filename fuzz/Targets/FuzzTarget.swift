/// Every parser of bytes that come from outside the process, as one libFuzzer target each.
///
/// A target does more than survive its input: where two readings of the same bytes must agree (the
/// input whole and split at the points it chooses itself, or what an encoder writes and its decoder
/// reads back) it stops the process on a disagreement, since a parser whose answer depends on how
/// bytes arrive is a request smuggled past one reader and not the other.
///
/// `bearer-fuzz TARGET` runs one (fuzz/Driver); `scripts/fuzz` builds it with libFuzzer and runs
/// them all; `BearerFuzzTests` replays every file of `fuzz/corpus/TARGET` in the ordinary test run, so
/// each crash kept there stays a unit test.
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// HTTP/1.1 request and response streams: heads, chunked and sized bodies, pipelining.
    case http1
    /// HTTP/2 frames read by the server role and fed to the connection machine.
    case http2Frames = "http2-frames"
    /// HPACK header blocks decoded, then encoded and decoded again.
    case hpack
    /// RESP2 replies from Redis (the session store).
    case resp
    /// The config file: sections, `${VAR}`, every key's value parser.
    case config
    /// Token endpoint and JSON backend answers.
    case tokenResponse = "token-response"
    /// RFC 8414 authorization server and RFC 9728 protected resource metadata.
    case metadata
    /// PEM private keys (client_key_file, DPoP keys, tls_client_key).
    case pem
    /// `WWW-Authenticate` challenges and the `DPoP-Nonce` a proof then carries.
    case wwwAuthenticate = "www-authenticate"
    /// Access tokens read as JWTs (`exp`, `aud`) and service-account key files.
    case jwt

    /// Runs the target on one input; a finding stops the process (`precondition`).
    package func run(_ input: [UInt8]) {
        switch self {
        case .http1: HTTP1Fuzz.run(input)
        case .http2Frames: HTTP2FramesFuzz.run(input)
        case .hpack: HPACKFuzz.run(input)
        case .resp: RESPFuzz.run(input)
        case .config: ConfigFuzz.run(input)
        case .tokenResponse: TokenResponseFuzz.run(input)
        case .metadata: MetadataFuzz.run(input)
        case .pem: PEMFuzz.run(input)
        case .wwwAuthenticate: AuthenticateFuzz.run(input)
        case .jwt: JWTFuzz.run(input)
        }
    }
}
