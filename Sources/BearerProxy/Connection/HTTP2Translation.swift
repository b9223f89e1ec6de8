import BearerCore
import BearerHTTP
import BearerHTTP2

/// An HTTP/2 request head written as the HTTP/1.1 request an `HTTP2StreamExchange` hands its
/// exchange: `:authority` becomes Host (the exchange checks it as it checks any Host), `:path` the
/// origin-form target, `cookie` fields one line (RFC 9113 §8.2.3), and the body is framed by its
/// `content-length` or else chunked. No `Connection: close`: the exchange's connection is kept alive
/// after the answer, for the connection's next stream (`HTTP2StreamExchange`'s lanes).
struct HTTP2RequestTranslation {
    let head: [UInt8]
    /// The body goes into the pipe as chunks (the client gave no `content-length`).
    let isChunked: Bool

    init(_ request: HTTP2RequestHead, endStream: Bool) {
        let list = request.list
        var head: [UInt8] = []
        // Built in place, no temporary arrays: one allocation a stream (it was 3% of its CPU).
        head.reserveCapacity(list.bytes.count + 4 * list.fields.count + 64)
        head.append(contentsOf: list.bytes[request.methodRange])
        head.append(0x20)
        if let path = request.path { head.append(contentsOf: list.bytes[path]) } else { head.append(0x2F) }
        head.append(literal: " HTTP/1.1\r\n")
        if let authority = request.authority {
            head.append(literal: "host: ")
            head.append(contentsOf: list.bytes[authority])
            head.append(literal: "\r\n")
        }
        var cookies: [Range<Int>] = []
        for index in request.firstRegularField..<list.fields.count {
            let name = list.name(index)
            if name.elementsEqual("host".utf8) { continue }
            if name.elementsEqual("cookie".utf8) {
                cookies.append(list.fields[index].value)
                continue
            }
            head.append(contentsOf: name)
            head.append(literal: ": ")
            head.append(contentsOf: list.value(index))
            head.append(literal: "\r\n")
        }
        if !cookies.isEmpty {
            head.append(literal: "cookie: ")
            for (position, cookie) in cookies.enumerated() {
                if position > 0 { head.append(literal: "; ") }
                head.append(contentsOf: list.bytes[cookie])
            }
            head.append(literal: "\r\n")
        }
        self.isChunked = !endStream && request.contentLength == nil
        if self.isChunked { head.append(literal: "transfer-encoding: chunked\r\n") }
        head.append(literal: "\r\n")
        self.head = head
    }
}

extension [UInt8] {
    fileprivate mutating func append(literal: StaticString) {
        literal.withUTF8Buffer { self.append(contentsOf: $0) }
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

    /// An upstream's answer as the stream's head: what an HTTP/1.1 client would get of it
    /// (`ResponseHead.forwardsField`), then the length its body goes out with and `via`, as
    /// `writeForwardedResponseHead` writes them.
    static func headerList(forwarding head: ResponseHead, framing: ClientFraming) -> HeaderList {
        var list = self.statusAndFields(head) { head.forwardsField($0, framing: framing) }
        if case .contentLength(let length) = framing {
            StaticString("content-length").withUTF8Buffer { name in
                withDecimalDigits(of: length) { list.append(lowercasingName: UnsafeRawBufferPointer(name), value: $0) }
            }
        }
        let via: StaticString = head.version == .http11 ? "1.1 bearer-proxy" : "1.0 bearer-proxy"
        StaticString("via").withUTF8Buffer { name in
            via.withUTF8Buffer {
                list.append(lowercasingName: UnsafeRawBufferPointer(name), value: UnsafeRawBufferPointer($0))
            }
        }
        return list
    }

    /// A head the exchange wrote itself (an answer of the proxy's own), read back from its bytes.
    static func headerList(_ head: ResponseHead) -> HeaderList {
        self.statusAndFields(head) {
            !head.fields[$0].knownName.isHopByHopOrFraming || head.fields[$0].knownName == .contentLength
        }
    }

    /// `:status` and the fields `keeping` keeps, names lower-cased.
    private static func statusAndFields(_ head: ResponseHead, keeping: (Int) -> Bool) -> HeaderList {
        var list = HeaderList()
        list.reserveCapacity(bytes: head.bytes.count + 40, fields: head.fields.count + 3)
        // The status is three digits (the parser takes no other).
        let status = head.status
        let digits: (UInt8, UInt8, UInt8) = (
            UInt8(48 + status / 100 % 10), UInt8(48 + status / 10 % 10), UInt8(48 + status % 10)
        )
        withUnsafeBytes(of: digits) { digits in
            StaticString(":status").withUTF8Buffer {
                list.append(lowercasingName: UnsafeRawBufferPointer($0), value: digits)
            }
        }
        head.bytes.withUnsafeBytes { raw in
            for (index, field) in head.fields.enumerated() where keeping(index) {
                list.append(
                    lowercasingName: UnsafeRawBufferPointer(rebasing: raw[field.name]),
                    value: UnsafeRawBufferPointer(rebasing: raw[field.value])
                )
            }
        }
        return list
    }
}
