import BearerHTTP
import BearerHTTP2

/// An HTTP/2 request head written as the HTTP/1.1 request an `HTTP2StreamExchange` hands its
/// exchange: `:authority` becomes Host (the exchange checks it as it checks any Host), `:path` the
/// origin-form target, `cookie` fields one line (RFC 9113 §8.2.3), and the body is framed by its
/// `content-length` or else chunked. `Connection: close` ends the exchange's connection with its one
/// response; the upstream connection is pooled as ever (the field is hop-by-hop).
struct HTTP2RequestTranslation {
    let head: [UInt8]
    /// The body goes into the pipe as chunks (the client gave no `content-length`).
    let isChunked: Bool

    init(_ request: HTTP2RequestHead, endStream: Bool) {
        let list = request.list
        var head: [UInt8] = []
        head += list.bytes[request.methodRange]
        head += Array(" ".utf8)
        if let path = request.path { head += list.bytes[path] } else { head += Array("/".utf8) }
        head += Array(" HTTP/1.1\r\n".utf8)
        if let authority = request.authority {
            head += Array("host: ".utf8) + list.bytes[authority] + Array("\r\n".utf8)
        }
        var cookies: [ArraySlice<UInt8>] = []
        for index in request.firstRegularField..<list.fields.count {
            let name = list.name(index)
            if name.elementsEqual("host".utf8) { continue }
            if name.elementsEqual("cookie".utf8) {
                cookies.append(list.value(index))
                continue
            }
            head += name + Array(": ".utf8) + list.value(index) + Array("\r\n".utf8)
        }
        if !cookies.isEmpty {
            head += Array("cookie: ".utf8) + Array(cookies.joined(separator: Array("; ".utf8))) + Array("\r\n".utf8)
        }
        self.isChunked = !endStream && request.contentLength == nil
        if self.isChunked { head += Array("transfer-encoding: chunked\r\n".utf8) }
        head += Array("connection: close\r\n\r\n".utf8)
        self.head = head
    }
}

/// An HTTP/1.1 response head as an HTTP/2 header list: `:status`, then the fields with lower-case
/// names, less the hop-by-hop and framing ones HTTP/2 has no place for (RFC 9113 §8.2.2).
enum HTTP2ResponseTranslation {
    /// A chunked body's trailer field lines (`name: value\r\n` each) as an HTTP/2 trailer list:
    /// names lower case, values without surrounding whitespace; nil when the result is not valid
    /// trailers (RFC 9113 §8.1: a connection-specific field, a pseudo-header), which are dropped.
    static func trailerList(_ section: [UInt8]) -> HeaderList? {
        var list = HeaderList()
        for line in section.split(separator: 0x0A) {
            let line = line.last == 0x0D ? line.dropLast() : line
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let name = line[..<colon].map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
            var value = line[line.index(after: colon)...]
            while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
            while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
            list.append(name: name, value: value)
        }
        do {
            try validateTrailers(list)
        } catch {
            return nil
        }
        return list
    }

    static func headerList(_ head: ResponseHead) -> HeaderList {
        var list = HeaderList()
        list.append(name: ":status".utf8, value: String(head.status).utf8)
        for field in head.fields where !field.knownName.isHopByHopOrFraming || field.knownName == .contentLength {
            let name = head.bytes[field.name].map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
            list.append(name: name, value: head.bytes[field.value])
        }
        return list
    }
}
