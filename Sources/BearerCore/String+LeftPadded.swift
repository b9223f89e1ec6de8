extension String {
    /// The text with `0`s before it up to `width` characters: hex and decimal digits of a fixed width.
    package func leftPadded(to width: Int) -> String {
        self.count >= width ? self : String(repeating: "0", count: width - self.count) + self
    }
}
