import Glibc

/// Finds the end of a message head (the empty line) in bytes that arrive in pieces.
///
/// It remembers how far it has looked, so a head split across any number of reads is scanned once
/// in total. It checks only line endings (every LF must follow a CR, RFC 9112 §2.2) and the size
/// limit; the head parser validates everything else once the whole head is here.
package struct HeadScanner: Sendable {
    private var scanned = 0
    private var lineStart = 0
    private var headStart = 0
    private let limit: Int

    /// Empty lines tolerated before a request line, in bytes (four CRLFs).
    static let maximumLeadingEmptyLineBytes = 8

    package init(limit: Int) {
        self.limit = limit
    }

    /// Bytes after which `scan` has a verdict, whatever the lines look like: the head has ended, or
    /// it is too large. A caller that stops reading earlier, with no head yet, would wait for bytes
    /// it does not read and never answer 431.
    package var verdictBytes: Int { self.limit + Self.maximumLeadingEmptyLineBytes + 1 }

    /// The head's range within `bytes` once its empty line has arrived, nil while more is needed.
    ///
    /// `bytes` must start at the same place on every call, holding at least what earlier calls saw.
    /// Empty lines before a request line are skipped (RFC 9112 §2.2 allows one; a few are tolerated).
    package mutating func scan(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Range<Int>? {
        let count = bytes.count
        guard let base = bytes.baseAddress else { return nil }
        while self.scanned < count {
            guard let found = memchr(base + self.scanned, Int32(ASCII.lf), count - self.scanned) else {
                self.scanned = count
                break
            }
            let lineFeed = base.distance(to: UnsafeRawPointer(found))
            // The limit first: a line ending past it is "too large" however it ends, so the verdict
            // does not depend on how the bytes were split into reads.
            if lineFeed + 1 - self.headStart > self.limit { throw .headTooLarge }
            guard lineFeed > 0, bytes[lineFeed - 1] == ASCII.cr else { throw .bareLineFeed }
            let lineLength = lineFeed - 1 - self.lineStart
            self.scanned = lineFeed + 1
            if lineLength == 0 {
                if self.lineStart == self.headStart {
                    // An empty line before the start line.
                    guard self.headStart < Self.maximumLeadingEmptyLineBytes else { throw .invalidRequestLine }
                    self.headStart = lineFeed + 1
                    self.lineStart = lineFeed + 1
                    continue
                }
                let head = self.headStart..<(lineFeed + 1)
                guard head.count <= self.limit else { throw .headTooLarge }
                self.reset()
                return head
            }
            self.lineStart = lineFeed + 1
        }
        if self.scanned - self.headStart > self.limit { throw .headTooLarge }
        return nil
    }

    /// Forgets progress, for the next head on the same connection.
    package mutating func reset() {
        self.scanned = 0
        self.lineStart = 0
        self.headStart = 0
    }
}
