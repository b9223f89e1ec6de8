/// Text made safe for a one-line body or log value: control characters become spaces, length bounded.
package func oneLine(_ text: String, limit: Int = 200) -> String {
    var cleaned = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
    if cleaned.count > limit { cleaned = String(cleaned.prefix(limit)) + "…" }
    return cleaned
}
