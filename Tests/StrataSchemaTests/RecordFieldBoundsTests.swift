#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataFormat
import StrataSchema
import StrataTestSupport

/// `RecordCodec.fieldBounds` checks as `decodeFields` does, and `encodedValuesEqual` compares
/// encoded values as `Value`'s `==` does: the history journal relies on both to write what
/// decoding into values would.
@Suite struct RecordFieldBoundsTests {
    static let pool: [Value] = [
        .bool(false), .bool(true), .int(0), .int(-1), .int(300), .double(0.0), .double(-0.0), .double(.nan),
        .string("d\u{E9}j\u{E0}"), .string("de\u{301}ja\u{300}"), .string("K"), .string("\u{212A}"), .string("k"),
        .string(";"), .string("\u{37E}"), .string(""), .string("plain"), .data([]), .data([1, 2]), .codable([1, 2]),
        .date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: -0.0)),
        .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))), .references([1]), .references([1, 2]),
        .references([2, 1]),
    ]

    static func encoded(_ value: Value) -> [UInt8] {
        var writer = ByteWriter()
        writer.append(value)
        return writer.bytes
    }

    /// Every pair of the pool (equal values spelled differently among them: composed and
    /// decomposed accents, the Kelvin sign and K, the Greek question mark and ';').
    @Test func encodedValuesCompareAsValues() {
        var equalButDifferentBytes = 0
        for a in Self.pool {
            for b in Self.pool {
                let left = Self.encoded(a), right = Self.encoded(b)
                let equal = left.withUnsafeBytes { l in right.withUnsafeBytes { r in RecordCodec.encodedValuesEqual(l, r) } }
                #expect(equal == (a == b), "\(a) and \(b)")
                if equal && left != right { equalButDifferentBytes += 1 }
            }
        }
        #expect(equalButDifferentBytes == 6)
    }

    /// A string of every length up to 40 with one byte that is not ASCII at each position: an
    /// invalid byte (0xFF) makes decoding and `fieldBounds` throw, a valid two-byte character
    /// decodes as itself — the ASCII test that lets plain strings skip UTF-8 validation reads
    /// every byte whatever the length (it reads words that overlap at the end).
    @Test func everyByteOfAStringIsCheckedForUTF8() throws {
        func record(_ utf8: [UInt8]) -> [UInt8] {
            [RecordCodec.baseFormat, 1, 1, ValueTag.string.rawValue, UInt8(utf8.count)] + utf8
        }
        var bounds: [RecordFieldBounds] = []
        for length in 0...40 {
            let plain = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            #expect(try RecordCodec.decodeFields(record(plain)).first?.value == .string(String(repeating: "a", count: length)))
            for position in 0..<length {
                var invalid = plain
                invalid[position] = 0xFF
                #expect(throws: FormatError.self, "length \(length), 0xFF at \(position)") { try RecordCodec.decodeFields(record(invalid)) }
                #expect(throws: FormatError.self, "length \(length), 0xFF at \(position) (bounds)") {
                    try record(invalid).withUnsafeBytes { try RecordCodec.fieldBounds($0, into: &bounds) }
                }
                guard position + 1 < length else { continue }
                var accented = plain
                accented[position] = 0xC3
                accented[position + 1] = 0xA9  // é
                let expected = String(decoding: accented, as: UTF8.self)
                #expect(expected.contains("\u{E9}"))
                #expect(try RecordCodec.decodeFields(record(accented)).first?.value == .string(expected))
                try record(accented).withUnsafeBytes { try RecordCodec.fieldBounds($0, into: &bounds) }
                #expect(bounds.count == 1 && bounds.first?.end == length + 5)
            }
        }
    }

    /// Valid records and their corruptions (a byte changed, bytes cut off): `fieldBounds`
    /// throws exactly the error `decodeFields` throws, and otherwise finds the fields it
    /// decodes, each value's bytes being its encoding.
    @Test func fieldBoundsCheckAsDecodeFields() throws {
        let seed = SeededRandom.seed(default: 0xB0_0D5)
        print("fieldBoundsCheckAsDecodeFields seed \(seed)")
        var random = SeededRandom(seed: seed)
        var bounds: [RecordFieldBounds] = []
        var failures = 0
        for _ in 0..<3_000 {
            var values: [UInt32: Value] = [:]
            for id in UInt32(1)...6 where Bool.random(using: &random) {
                values[id * UInt32.random(in: 1...40, using: &random)] = Self.pool.randomElement(using: &random)
            }
            var bytes = RecordCodec.encode(values)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: break
            case 1: bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            default: bytes.removeLast(Int.random(in: 0..<bytes.count, using: &random))
            }
            let decoded: Result<[(id: UInt32, value: Value)], FormatError>
            do { decoded = .success(try RecordCodec.decodeFields(bytes)) } catch { decoded = .failure(error) }
            let found: Result<[RecordFieldBounds], FormatError> = bytes.withUnsafeBytes { raw in
                do throws(FormatError) {
                    try RecordCodec.fieldBounds(raw, into: &bounds)
                    return .success(bounds)
                } catch { return .failure(error) }
            }
            switch (decoded, found) {
            case (.failure(let expected), .failure(let error)):
                failures += 1
                #expect(error == expected)
            case (.success(let fields), .success(let located)):
                #expect(located.map(\.id) == fields.map(\.id))
                for (field, bound) in zip(fields, located) {
                    #expect(Array(bytes[bound.start..<bound.end]) == Self.encoded(field.value))
                    #expect(bound.tag == field.value.tag.rawValue)
                }
            default:
                Issue.record("decodeFields gives \(decoded), fieldBounds \(found) for \(bytes)")
            }
        }
        #expect(failures > 500)
    }
}
