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
///   §6.5.2 does, checked before a string is copied: an HPACK bomb fails, never allocates).
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
/// - `Validation/`: `RequestHeaderValidator` and `ResponseHeaderValidator` judge a decoded list
///   (RFC 9113 §8.2, §8.3) and produce the request's or response's pseudo-header values;
///   `ContentLengthCheck` counts DATA against `content-length`. Every failure is a stream error
///   (PROTOCOL_ERROR) and the message is never forwarded.
/// - `Connection/` (if present): the server role's connection state machine, a value type whose
///   events return actions, as the house's HTTP/1.1 connection machine does.
///
/// Next steps (wiring): detect the preface on a client connection (24 bytes, `HTTP2.clientPreface`),
/// feed the connection's inbound buffer to `HTTP2FrameParser.next` via `parseNext`, decode each header
/// block with the connection's `HPACKDecoder`, validate it, and turn a valid request into the same
/// exchange events an HTTP/1.1 request head produces; responses go back through `HPACKEncoder` and
/// `HTTP2FrameSerializer`.
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
