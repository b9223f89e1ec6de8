/// Splits a `token_command` value into argv: words separated by blanks, `'…'` and `"…"` group words
/// with blanks in them, and nothing else is special (no shell: no variables, globs or pipes unless
/// the user writes `sh -c '…'` themselves). Nil when a quote is not closed.
func splitCommandLine(_ text: String) -> [String]? {
    var words: [String] = []
    var current = ""
    var inWord = false
    var quote: Character?
    for character in text {
        if let open = quote {
            if character == open {
                quote = nil
            } else {
                current.append(character)
            }
            continue
        }
        switch character {
        case "'", "\"":
            quote = character
            inWord = true
        case " ", "\t":
            if inWord {
                words.append(current)
                current = ""
                inWord = false
            }
        default:
            current.append(character)
            inWord = true
        }
    }
    guard quote == nil else { return nil }
    if inWord { words.append(current) }
    return words
}
