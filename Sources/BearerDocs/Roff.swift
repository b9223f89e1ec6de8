import BearerCore

/// Text for a man page: roff's escapes, and `code` in a paragraph shown in bold.
enum Roff {
    /// `text` safe as roff input text: backslashes escaped, dashes as minus signs (what a command line
    /// needs to copy), characters beyond ASCII by their code points, a line never starting with a
    /// control character, `code` in bold.
    static func text(_ text: String) -> String {
        var result = ""
        var isCode = false
        for character in text {
            switch character {
            case "\\": result += "\\e"
            case "-": result += "\\-"
            case "`":
                result += isCode ? "\\fR" : "\\fB"
                isCode.toggle()
            case "\n": result += "\n"
            case _ where !character.isASCII:
                // Named by its code point (`\[u2026]`), so no input encoding has to be guessed.
                for scalar in character.unicodeScalars {
                    result += "\\[u" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4) + "]"
                }
            default: result.append(character)
            }
        }
        if isCode { result += "\\fR" }
        return result.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : String(line)
        }
        .joined(separator: "\n")
    }

    /// A paragraph: its lines joined, filled by the formatter.
    static func paragraph(_ text: String) -> String {
        Self.text(text.split(separator: "\n").joined(separator: " "))
    }

    /// Lines shown as they are (a config, a command), indented.
    static func example(_ text: String) -> [String] {
        [".PP", ".RS 4", ".nf"]
            + text.split(separator: "\n", omittingEmptySubsequences: false).map { Self.text(String($0)) }
            + [".fi", ".RE"]
    }

    /// `.TH` and `.SH NAME` of a page.
    static func header(name: String, section: Int, title: String, summary: String) -> [String] {
        [
            ".TH \(name.uppercased()) \(section) \"\" \"bearer-proxy\" \"\(title)\"",
            ".SH NAME",
            "\(Self.text(name)) \\- \(Self.text(summary))",
        ]
    }
}
