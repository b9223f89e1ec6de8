/// One header field line, as byte ranges into the head it was parsed from.
///
/// Nothing is copied or lower-cased per field: the proxy forwards most fields untouched, so it only
/// needs to know where each one is and whether it is one of the few names it acts on.
package struct HTTPField: Equatable, Sendable {
    package var name: Range<Int>
    package var value: Range<Int>
    package var knownName: KnownFieldName
}

/// The field names the proxy reads or removes, recognized once while parsing.
package enum KnownFieldName: UInt8, Equatable, Sendable {
    case other
    case host
    case contentLength
    case transferEncoding
    case connection
    case keepAlive
    case proxyConnection
    case proxyAuthorization
    case te
    case trailer
    case upgrade
    case authorization
    case expect
    case via
    case origin
    case secFetchSite
    case idempotencyKey

    package init(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) {
        func matches(_ name: StaticString) -> Bool { equalsCaseInsensitive(bytes, range, name) }
        switch range.count {
        case 2: self = matches("te") ? .te : .other
        case 3: self = matches("via") ? .via : .other
        case 4: self = matches("host") ? .host : .other
        case 6: self = matches("expect") ? .expect : matches("origin") ? .origin : .other
        case 7: self = matches("trailer") ? .trailer : matches("upgrade") ? .upgrade : .other
        case 10: self = matches("connection") ? .connection : matches("keep-alive") ? .keepAlive : .other
        case 13: self = matches("authorization") ? .authorization : .other
        case 14: self = matches("content-length") ? .contentLength : matches("sec-fetch-site") ? .secFetchSite : .other
        case 15: self = matches("idempotency-key") ? .idempotencyKey : .other
        case 16: self = matches("proxy-connection") ? .proxyConnection : .other
        case 17: self = matches("transfer-encoding") ? .transferEncoding : .other
        case 19: self = matches("proxy-authorization") ? .proxyAuthorization : .other
        default: self = .other
        }
    }

    /// Hop-by-hop fields (RFC 9110 §7.6.1) and framing fields the proxy regenerates itself.
    package var isHopByHopOrFraming: Bool {
        switch self {
        case .connection, .keepAlive, .proxyConnection, .proxyAuthorization, .te, .trailer, .upgrade,
            .transferEncoding, .contentLength:
            true
        case .other, .host, .authorization, .expect, .via, .origin, .secFetchSite, .idempotencyKey:
            false
        }
    }
}

/// Whether `fields[index]`'s name is listed in a Connection field (RFC 9110 §7.6.1).
func fieldIsNominatedByConnection(_ bytes: UnsafeRawBufferPointer, _ fields: [HTTPField], _ index: Int) -> Bool {
    let name = fields[index].name
    var found = false
    for field in fields where field.knownName == .connection {
        forEachListElementIgnoringErrors(bytes, field.value) { element in
            if element.count == name.count
                && zip(element, name).allSatisfy({ bytes[$0].asciiLowercased == bytes[$1].asciiLowercased })
            {
                found = true
            }
        }
    }
    return found
}

/// What request and response heads share: their bytes and field ranges, and reading them as text.
package protocol ParsedHead {
    var bytes: [UInt8] { get }
    var fields: [HTTPField] { get }
    var nominatesOtherFields: Bool { get }
}

extension ParsedHead {
    package func string(_ range: Range<Int>) -> String {
        String(decoding: self.bytes[range], as: UTF8.self)
    }

    /// The value of the first field with this name (edges and tests, not the hot path).
    package func value(of name: String) -> String? {
        let lowercased = Array(name.lowercased().utf8)
        return self.bytes.withUnsafeBytes { raw in
            for field in self.fields where equalsCaseInsensitive(raw, field.name, lowercased) {
                return String(decoding: self.bytes[field.value], as: UTF8.self)
            }
            return nil
        }
    }

    /// Whether field `index` is named by the Connection field (and so hop-by-hop).
    package func isNominatedByConnection(_ index: Int) -> Bool {
        guard self.nominatesOtherFields else { return false }
        return self.bytes.withUnsafeBytes { fieldIsNominatedByConnection($0, self.fields, index) }
    }
}
