/// Writes plain values as JSON text the way `JSONSerialization` did with `.sortedKeys`: `/` escaped
/// as `\/`, control characters as `\u00XX`, whole doubles without `.0`; pretty: two spaces per level,
/// `"key" : value`, and an empty object or array as its brackets around an empty line.
struct JSONWriter {
    let pretty: Bool
    var output = ""

    init(pretty: Bool) { self.pretty = pretty }

    mutating func write(_ value: Any, depth: Int) {
        switch value {
        case let text as String: self.writeString(text)
        case let flag as Bool: self.output += flag ? "true" : "false"
        case let number as Int: self.output += String(number)
        case let number as Int64: self.output += String(number)
        case let number as UInt64: self.output += String(number)
        case let number as Double: self.writeDouble(number)
        case let object as [String: Any]:
            self.writeContainer("{", "}", object.keys.sorted(), depth: depth) { writer, key in
                writer.writeString(key)
                writer.output += writer.pretty ? " : " : ":"
                writer.write(object[key]!, depth: depth + 1)
            }
        case let array as [Any]:
            self.writeContainer("[", "]", Array(array.indices), depth: depth) { writer, index in
                writer.write(array[index], depth: depth + 1)
            }
        default: self.output += "null"
        }
    }

    private mutating func writeContainer<Item>(
        _ open: String,
        _ close: String,
        _ items: [Item],
        depth: Int,
        writeItem: (inout JSONWriter, Item) -> Void
    ) {
        self.output += open
        if self.pretty { self.output += "\n" }
        for (position, item) in items.enumerated() {
            if position > 0 { self.output += self.pretty ? ",\n" : "," }
            if self.pretty { self.output += String(repeating: "  ", count: depth + 1) }
            writeItem(&self, item)
        }
        if self.pretty { self.output += "\n" + String(repeating: "  ", count: depth) }
        self.output += close
    }

    private mutating func writeDouble(_ number: Double) {
        var text = number.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        self.output += text
    }

    private mutating func writeString(_ text: String) {
        self.output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": self.output += "\\\""
            case "\\": self.output += "\\\\"
            case "/": self.output += "\\/"
            case "\n": self.output += "\\n"
            case "\r": self.output += "\\r"
            case "\t": self.output += "\\t"
            case "\u{08}": self.output += "\\b"
            case "\u{0C}": self.output += "\\f"
            case let control where control.value < 0x20:
                self.output += "\\u" + String(control.value, radix: 16).leftPadded(to: 4)
            default: self.output.unicodeScalars.append(scalar)
            }
        }
        self.output += "\""
    }
}
