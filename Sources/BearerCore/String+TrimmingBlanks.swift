extension StringProtocol {
    /// The text without the tabs and Unicode space separators (category Zs) at its ends, nor the
    /// scalars in `extra`: what Foundation's `trimmingCharacters(in: .whitespaces)` removes, in the
    /// modules that do without Foundation (the binary links FoundationEssentials only).
    package func trimmingBlanks(and extra: Set<Unicode.Scalar> = []) -> String {
        let isBlank = { (scalar: Unicode.Scalar) in
            scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator || extra.contains(scalar)
        }
        let scalars = self.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isBlank($0) }),
            let last = scalars.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
