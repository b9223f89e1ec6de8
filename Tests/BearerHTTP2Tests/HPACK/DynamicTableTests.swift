import BearerTestSupport
import Testing

@testable import BearerHTTP2

/// The dynamic table keeps its entries in one byte array and drops the evicted prefix in batches;
/// whatever it drops and shifts, it must hold exactly what RFC 7541 §4.4 says after every insertion.
@Suite struct DynamicTableTests {
    /// The table as §4 defines it, newest first: the model the table is checked against.
    struct Model {
        var entries: [(name: [UInt8], value: [UInt8])] = []
        var maxSize: Int
        var size: Int { self.entries.reduce(0) { $0 + $1.name.count + $1.value.count + 32 } }

        mutating func insert(_ name: [UInt8], _ value: [UInt8]) {
            let entrySize = name.count + value.count + 32
            while !self.entries.isEmpty && self.size + entrySize > self.maxSize { self.entries.removeLast() }
            if entrySize <= self.maxSize { self.entries.insert((name, value), at: 0) }
        }
    }

    /// Many small entries (batches dropped by count) and a few large ones (by bytes), mixed with
    /// entries larger than the table (it empties) and size updates, checked entry by entry each step.
    @Test(arguments: [64, 256, 4096])
    func holdsWhatTheRFCSaysAfterEveryInsertion(maxSize: Int) {
        var table = DynamicTable(maxSize: maxSize)
        var model = Model(maxSize: maxSize)
        var generator = SplitMix(state: UInt64(maxSize))
        for step in 0..<3000 {
            if step % 500 == 499 {
                let size = Int(generator.next() % UInt64(maxSize + 1))
                table.resize(to: size)
                model.maxSize = size
                while model.size > size { model.entries.removeLast() }
                continue
            }
            let large = generator.next() % 10 == 0
            let length = Int(generator.next() % UInt64(large ? maxSize : 12))
            let name = Array("n\(step)".utf8)
            let value = [UInt8](repeating: UInt8(97 + step % 26), count: length)
            table.insert(name: name, value: value)
            model.insert(name, value)
            #expect(table.size == model.size, "step \(step)")
            #expect(table.newestFirst.elementsEqual(model.entries, by: ==), "step \(step)")
            #expect(
                table.bytes.count <= 2 * max(maxSize, 4096) + maxSize,
                "step \(step): \(table.bytes.count) bytes kept"
            )
        }
    }
}
