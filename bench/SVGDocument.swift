import Foundation

/// SVG elements written one after another: the few shapes the chart draws, coordinates rounded to
/// a tenth of a pixel, text escaped.
struct SVGDocument {
    private var body = ""

    /// An estimate of how wide `text` renders in a sans-serif font: wide enough for DejaVu Sans, the
    /// usual fallback, so that a layout that fits by this measure fits on screen.
    static func textWidth(_ text: String, size: Double) -> Double {
        Double(text.count) * size * 0.6
    }

    mutating func text(
        _ text: String,
        x: Double,
        y: Double,
        size: Double,
        anchor: String = "start",
        weight: String = "normal",
        fill: String = "#222"
    ) {
        self.body +=
            "<text x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" font-size=\"\(Self.number(size))\""
            + " text-anchor=\"\(anchor)\" font-weight=\"\(weight)\" fill=\"\(fill)\">\(Self.escape(text))</text>\n"
    }

    /// A bold title followed by plain text on the same line.
    mutating func titledText(_ title: String, _ rest: String, x: Double, y: Double) {
        self.body +=
            "<text x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" font-size=\"13\" fill=\"#222\">"
            + "<tspan font-weight=\"bold\">\(Self.escape(title))</tspan><tspan dx=\"12\" fill=\"#444\">"
            + "\(Self.escape(rest))</tspan></text>\n"
    }

    mutating func line(
        x1: Double,
        y1: Double,
        x2: Double,
        y2: Double,
        color: String,
        width: Double,
        dashed: Bool = false
    ) {
        self.body +=
            "<line x1=\"\(Self.number(x1))\" y1=\"\(Self.number(y1))\" x2=\"\(Self.number(x2))\" y2=\"\(Self.number(y2))\""
            + " stroke=\"\(color)\" stroke-width=\"\(Self.number(width))\"\(dashed ? " stroke-dasharray=\"5 3\"" : "")/>\n"
    }

    mutating func frame(x: Double, y: Double, width: Double, height: Double) {
        self.body +=
            "<rect x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" width=\"\(Self.number(width))\""
            + " height=\"\(Self.number(height))\" fill=\"none\" stroke=\"#999\"/>\n"
    }

    mutating func polyline(_ points: [(Double, Double)], color: String, width: Double) {
        guard !points.isEmpty else { return }
        let coordinates = points.map { "\(Self.number($0.0)),\(Self.number($0.1))" }.joined(separator: " ")
        self.body +=
            "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"\(Self.number(width))\""
            + " stroke-linejoin=\"round\" points=\"\(coordinates)\"/>\n"
    }

    /// An upward triangle 11 px wide standing on `baseY`, outlined in white so that neighbours stay apart.
    mutating func triangle(centerX: Double, baseY: Double, color: String, title: String? = nil) {
        let points = [(centerX - 5.5, baseY), (centerX + 5.5, baseY), (centerX, baseY - 11)]
            .map { "\(Self.number($0.0)),\(Self.number($0.1))" }.joined(separator: " ")
        let tooltip = title.map { "<title>\(Self.escape($0))</title>" } ?? ""
        self.body +=
            "<polygon points=\"\(points)\" fill=\"\(color)\" stroke=\"white\" stroke-width=\"1\">\(tooltip)</polygon>\n"
    }

    func finish(width: Double, height: Double) -> String {
        """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height.rounded(.up)))" \
        font-family="DejaVu Sans, Helvetica, Arial, sans-serif">
        <rect width="100%" height="100%" fill="white"/>
        \(self.body)</svg>

        """
    }

    static func number(_ value: Double) -> String {
        trimmed((value * 10).rounded() / 10)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
