/// `text`'s words in lines of at most `width` characters (a longer word has a line of its own), each
/// line after `prefix`: the comment paragraphs of proxy.conf.example, the reference's paragraphs.
func wrapped(_ text: String, width: Int, prefix: String = "") -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
        if !line.isEmpty && prefix.count + line.count + 1 + word.count > width {
            lines.append(prefix + line)
            line = ""
        }
        line += (line.isEmpty ? "" : " ") + word
    }
    if !line.isEmpty { lines.append(prefix + line) }
    return lines
}
