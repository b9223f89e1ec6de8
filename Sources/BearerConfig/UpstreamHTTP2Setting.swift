/// `upstream_http2`: whether a session's upstream is spoken to in HTTP/2 (the contract's "HTTP/2").
package enum UpstreamHTTP2Setting: String, Equatable, Sendable {
    /// ALPN `h2, http/1.1` to an `https://` upstream, the server's choice used; HTTP/1.1 to `http://`.
    case auto
    /// As `auto`, and HTTP/2 with prior knowledge (RFC 9113 §3.3) to an `http://` upstream.
    case on
    /// HTTP/1.1 only: ALPN offers `http/1.1` alone.
    case off
}
