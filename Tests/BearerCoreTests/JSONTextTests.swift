import BearerCore
import Foundation
import Testing

/// `JSONText` replaced `JSONSerialization` in the binary (which no longer links Foundation's ICU):
/// what it writes must be the bytes `JSONSerialization` wrote, and what it reads the values it read.
@Suite struct JSONTextTests {
    static var sample: [String: Any] {
        [
            "int": 3600, "whole_double": 3600.0, "tenth": 3599.9, "small": 0.1, "negative": -0.5, "big": 1e21,
            "huge": 1e16, "null": NSNull(), "escapes": "a/b \"q\" \\ \n\r\t\u{8}\u{c}\u{1}\u{1f} é ☃ 😀",
            "flag": true, "off": false, "empty_object": [String: Any](), "empty_array": [Any](),
            "nested": [1, "two", ["k": [3.5, NSNull()]] as [String: Any]] as [Any], "": "empty key",
        ]
    }

    /// The sample with `JSONNull` where Foundation has `NSNull`.
    static func ours(_ value: Any) -> Any {
        switch value {
        case is NSNull: JSONNull()
        case let object as [String: Any]: object.mapValues(Self.ours)
        case let array as [Any]: array.map(Self.ours)
        default: value
        }
    }

    @Test(arguments: [false, true]) func writesWhatJSONSerializationWrote(pretty: Bool) throws {
        let options: JSONSerialization.WritingOptions = pretty ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
        let expected = String(
            decoding: try JSONSerialization.data(withJSONObject: Self.sample, options: options),
            as: UTF8.self
        )
        #expect(JSONText.text(of: Self.ours(Self.sample), pretty: pretty) == expected)
    }

    @Test func readsBackWhatItWrote() throws {
        // 1e16 reads back as a whole number (an `Int`), as JSONSerialization's NSNumber did not.
        let text = JSONText.text(of: Self.ours(Self.sample.filter { $0.key != "huge" }))
        let read = try #require(JSONText.object(Array(text.utf8)))
        #expect(JSONText.text(of: read) == text)
        #expect(read["int"] as? Int == 3600)
        #expect(read["tenth"] as? Double == 3599.9)
        #expect(read["null"] is JSONNull)
        #expect(read["flag"] as? Bool == true)
    }

    @Test func rejectsWhatIsNotJSON() {
        for text in ["", "{", "{\"a\":}", "{'a':1}", "nul", "{\"a\":1} x"] {
            #expect(JSONText.parse(Array(text.utf8)) == nil, "\(text)")
        }
        #expect(JSONText.parse(Array("  [1, 2.5, \"\\u00e9\\ud83d\\ude00\"] ".utf8)) as? [Any] != nil)
    }

    @Test func numbersReadAsNSNumberDid() {
        #expect(JSONText.number(JSONText.object(Array(#"{"a":1.5}"#.utf8))?["a"]) == 1.5)
        #expect(JSONText.number(3) == 3)
        #expect(JSONText.number(true) == 1)
        #expect(JSONText.number("42") == 42)
        #expect(JSONText.number(JSONNull()) == nil)
        #expect(JSONText.number(nil) == nil)
    }
}
