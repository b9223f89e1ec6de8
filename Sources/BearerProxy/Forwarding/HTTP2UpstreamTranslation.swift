import BearerCore
import BearerHTTP
import BearerHTTP2

/// The HTTP/1.1 request an exchange wrote for its upstream, as the HTTP/2 request an
/// `HTTP2UpstreamStream` sends (RFC 9113 §8.3.1): Host becomes `:authority`, the origin-form target
/// `:path`, the origin's scheme `:scheme`; field names lower case; the connection-specific fields
/// HTTP/2 forbids (§8.2.2) left out, but `te: trailers`, which gRPC needs, kept. `authorization`
/// goes out never-indexed (the encoder's rule, RFC 7541 §7.1.3).
enum HTTP2UpstreamRequestTranslation {
    static func headerList(_ head: RequestHead, isHTTPS: Bool) -> HeaderList {
        var list = HeaderList()
        let bytes = head.bytes
        list.append(name: ":method".utf8, value: bytes[head.methodRange])
        list.append(name: ":scheme".utf8, value: (isHTTPS ? "https" : "http").utf8)
        if let host = head.hostField { list.append(name: ":authority".utf8, value: bytes[head.fields[host].value]) }
        list.append(name: ":path".utf8, value: bytes[head.target])
        for field in head.fields {
            switch field.knownName {
            case .host, .connection, .keepAlive, .proxyConnection, .proxyAuthorization, .transferEncoding, .upgrade:
                continue
            case .te:
                // Only `te: trailers` is allowed in HTTP/2 (RFC 9113 §8.2.2); the value in lower case.
                let value = bytes[field.value].map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
                if value.elementsEqual("trailers".utf8) { list.append(name: "te".utf8, value: "trailers".utf8) }
                continue
            default:
                break
            }
            let name = bytes[field.name].map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
            list.append(name: name, value: bytes[field.value])
        }
        return list
    }
}

/// An HTTP/2 response head written as the HTTP/1.1 head its exchange parses: the status line, the
/// fields, and the framing of the body that follows (its `content-length`, else chunked; none for
/// a response that carries no body).
enum HTTP2UpstreamResponseTranslation {
    enum Framing {
        case noBody
        case contentLength
        case chunked
    }

    static func writeHead(
        _ head: HTTP2ResponseHead,
        isHeadRequest: Bool,
        endStream: Bool,
        into buffer: inout ByteBuffer
    ) -> Framing {
        buffer.writeString("HTTP/1.1 \(head.status) \(reasonPhrase(head.status))\r\n")
        let list = head.list
        for index in head.firstRegularField..<list.fields.count {
            buffer.writeBytes(list.name(index))
            buffer.writeStaticString(": ")
            buffer.writeBytes(list.value(index))
            buffer.writeStaticString("\r\n")
        }
        let framing: Framing
        if isHeadRequest || head.status == 204 || head.status == 304 {
            framing = .noBody
        } else if head.contentLength != nil {
            framing = .contentLength
        } else if endStream {
            buffer.writeStaticString("content-length: 0\r\n")
            framing = .noBody
        } else {
            buffer.writeStaticString("transfer-encoding: chunked\r\n")
            framing = .chunked
        }
        buffer.writeStaticString("\r\n")
        return framing
    }
}
