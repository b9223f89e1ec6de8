import FoundationEssentials

/// JSON read into and written from plain Swift values (`[String: Any]`, `[Any]`, `String`, `Int`,
/// `Double`, `Bool`, `JSONNull`), in place of Foundation's `JSONSerialization`: that class lives in
/// the Foundation module, whose ICU would be most of the static binary's size. Reading goes through
/// FoundationEssentials' `JSONDecoder`; writing gives the bytes `JSONSerialization` gave with
/// `.sortedKeys` (and `.prettyPrinted`), which the tests and clients of `/status` have seen so far.
package enum JSONText {
    /// The value `bytes` hold, or nil when they are not JSON. Whole numbers read as `Int`, others
    /// as `Double`.
    package static func parse(_ bytes: some Collection<UInt8>) -> Any? {
        (try? JSONDecoder().decode(DecodedValue.self, from: Data(bytes)))?.value
    }

    /// The value `bytes` hold when it is an object.
    package static func object(_ bytes: some Collection<UInt8>) -> [String: Any]? {
        self.parse(bytes) as? [String: Any]
    }

    /// `value` as JSON text, keys sorted; `pretty`: two spaces per level and `"key" : value`, as
    /// `JSONSerialization`'s `.prettyPrinted` wrote it.
    package static func text(of value: Any, pretty: Bool = false) -> String {
        var writer = JSONWriter(pretty: pretty)
        writer.write(value, depth: 0)
        return writer.output
    }

    /// A JSON number as a `Double`: whole and fractional numbers, `true` as 1 and `false` as 0 (as
    /// `NSNumber` read them), and a string that is a number; nil for anything else.
    package static func number(_ value: Any?) -> Double? {
        switch value {
        case let number as Int: Double(number)
        case let number as Double: number
        case let flag as Bool: flag ? 1 : 0
        case let text as String: Double(text)
        default: nil
        }
    }
}

/// JSON's `null`, in a value to write or read.
package struct JSONNull: Sendable, Equatable {
    package init() {}
}

/// One JSON value as `JSONDecoder` reads it, kept as the plain value `JSONText.parse` returns.
private struct DecodedValue: Decodable {
    let value: Any

    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [Any] = []
            while !array.isAtEnd { items.append(try array.decode(DecodedValue.self).value) }
            self.value = items
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var fields: [String: Any] = [:]
            for key in object.allKeys {
                fields[key.stringValue] = try object.decode(DecodedValue.self, forKey: key).value
            }
            self.value = fields
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self.value = JSONNull()
        } else if let flag = try? single.decode(Bool.self) {
            self.value = flag
        } else if let number = try? single.decode(Int.self) {
            self.value = number
        } else if let number = try? single.decode(Double.self) {
            self.value = number
        } else {
            self.value = try single.decode(String.self)
        }
    }
}

private struct AnyKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
