/// HTTP/2 (RFC 9113) and HPACK (RFC 7541) as values: bytes in, frames and header lists out, and the
/// reverse; no sockets, no clock, no Foundation, so every rule is tested with byte strings.
///
/// # Design note for whoever wires this into the proxy
///
/// The module is layered as nghttp2 and swift-nio-http2 are, each layer usable and tested alone:
///
/// - `HPACK/`: `HPACKDecoder` and `HPACKEncoder` each own one `DynamicTable` (one per direction of a
///   connection). A header block is decoded whole (HTTP/2 forbids interleaving, so the frame layer
///   hands it over assembled) into a `HeaderList`: one byte array and ranges, no allocation per field.
///   The decoder's two bounds are its defences: the table size it advertised
///   (SETTINGS_HEADER_TABLE_SIZE) and `maxHeaderListSize` (the decoded size, counted as RFC 9113
///   §6.5.2 does, checked before each string is copied: an HPACK bomb fails at the bound).
///   A field marked never-indexed when decoded (`HeaderList.Field.indexing`) must be re-encoded so
///   (RFC 7541 §7.1.3); `authorization` is always encoded never-indexed by `HPACKEncoder`.
/// - `Frames/`: `HTTP2FrameParser` is incremental (an `IncrementalParserEvent`, driven by
///   `ByteBuffer.parseNext` like the HTTP/1.1 parsers); it enforces SETTINGS_MAX_FRAME_SIZE, each
///   frame's fixed lengths and stream-id rules, and assembles HEADERS + CONTINUATION into one header
///   block bounded by `maxHeaderBlockBytes` (the CONTINUATION flood defence) before anything is
///   decoded. DATA is handed over as the event's payload range, never copied. `HTTP2FrameSerializer`
///   writes frames, splitting a header block into CONTINUATION frames at the peer's max frame size.
///   Errors are typed: `HTTP2ConnectionError` is thrown (GOAWAY with its `code`),
///   `HTTP2StreamError` is an event (RST_STREAM, the connection goes on).
/// - `Validation/`: `HTTP2RequestHead(validating:)` and `HTTP2ResponseHead(validating:)` judge a
///   decoded list (RFC 9113 §8.2, §8.3) and find its pseudo-header values; `validateTrailers` judges
///   trailers; `ContentLengthCheck` counts DATA against `content-length`. Every failure is a stream
///   error (PROTOCOL_ERROR) and nothing of that stream is forwarded. Field rules reuse BearerHTTP's
///   (token names, field-value bytes, the field-name table, content-length), so a message accepted
///   here means the same once translated for an HTTP/1.1 peer.
/// - `Connection/`: `HTTP2ServerConnectionStateMachine`, the server role as a value: parser events
///   and the exchanges' progress in, `Action`s out (write frames, start a request, forward data or
///   trailers, cancel, resume sending, close). It owns both HPACK contexts, the streams (§5.1), both
///   directions' windows (credit returned as the exchange consumes: backpressure), and the defences
///   as counters: REFUSED_STREAM, the rapid-reset budget, the SETTINGS/PING acknowledgement bound.
///
/// Next steps (wiring, in BearerProxy):
/// 1. On a client connection, compare the first bytes with `HTTP2.clientPreface` (24 bytes; a
///    mismatch at any byte means HTTP/1.1, as today); with TLS, ALPN `h2` decides instead.
/// 2. Make `configuration.makeFrameParser()` and the machine; per read, loop
///    `inbound.parseNext(payload:) { try parser.next($0) }` and hand each event to
///    `machine.received(_:)` (a DATA event's payload is the body bytes: copy or forward them before
///    the next `parseNext`); a thrown `HTTP2ConnectionError` goes to `machine.connectionFailed(_:)`.
/// 3. Perform the actions: `write` with `HTTP2FrameSerializer.write(_:maxFrameSize:
///    machine.peerMaxFrameSize, into:)`; `startRequest` feeds the exchange the same events an
///    HTTP/1.1 head does (method, `:scheme`/`:authority`/`:path` as the target, regular fields from
///    `firstRegularField`; the token added as `authorization`, which `HPACKEncoder` always encodes
///    never-indexed); call `requestDataConsumed` once the upstream took the bytes (not before:
///    that is the backpressure), `sendHeaders`/`dataSent` for the response within
///    `sendableByteCount`, `resetStream` when the upstream fails, `startDraining` on SIGTERM,
///    `outboundFlushed` when the write buffer empties.
/// 4. Timeouts stay with the owner (idle, SETTINGS ack, a zero window held past a deadline).
/// 5. The client role (upstream h2) is `HTTP2ClientConnectionStateMachine`, on the same
///    `HTTP2ConnectionCore`; BearerProxy's `HTTP2UpstreamConnection` performs its actions.
package enum HTTP2 {
    /// The client connection preface (RFC 9113 §3.4): what a prior-knowledge client sends first.
    package static let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// The frame header's size (RFC 9113 §4.1).
    package static let frameHeaderSize = 9

    /// SETTINGS_MAX_FRAME_SIZE's initial value, also its lowest allowed (RFC 9113 §6.5.2).
    package static let defaultMaxFrameSize = 16_384

    /// SETTINGS_MAX_FRAME_SIZE's highest allowed value, 2^24-1 (RFC 9113 §6.5.2).
    package static let largestMaxFrameSize = 16_777_215

    /// The initial flow-control window of a stream and of the connection (RFC 9113 §6.9.2).
    package static let defaultInitialWindowSize = 65_535

    /// The largest flow-control window, 2^31-1 (RFC 9113 §6.9.1).
    package static let maxWindowSize = 2_147_483_647

    /// SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2).
    package static let defaultHeaderTableSize = 4_096
}
