#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema
import StrataTestSupport

/// Index keys compared byte by byte must order values as Swift predicates do.
@Suite struct IndexKeyTests {
    /// -1, 0, 1 as predicates (Swift's `<` and `==`) order two values of one kind; nil for NaN.
    static func predicateOrder(_ a: Value, _ b: Value) -> Int? {
        func order<T: Comparable>(_ x: T, _ y: T) -> Int { x == y ? 0 : (x < y ? -1 : 1) }
        switch (a, b) {
        case (.bool(let x), .bool(let y)): return order(x ? 1 : 0, y ? 1 : 0)
        case (.int(let x), .int(let y)): return order(x, y)
        case (.double(let x), .double(let y)): return x.isNaN || y.isNaN ? nil : order(x, y)
        case (.date(let x), .date(let y)):
            return x.timeIntervalSinceReferenceDate.isNaN || y.timeIntervalSinceReferenceDate.isNaN ? nil : order(x, y)
        case (.string(let x), .string(let y)):
            // Swift's `<` is not a strict order for some Hangul strings on this toolchain
            // ("\u{D55C}" < "\u{D55C}a" and "\u{D55C}a" < "\u{D55C}" both hold), so for
            // those only equality is compared; `hangulKeysFollowNFCOrder` checks their keys.
            if hasHangul(x) || hasHangul(y) { return x == y ? 0 : nil }
            return order(x, y)
        case (.data(let x), .data(let y)), (.codable(let x), .codable(let y)):
            return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        default: return a.compare(b)  // null, uuid, and across kinds: Value's own order
        }
    }

    static func hasHangul(_ text: String) -> Bool {
        text.unicodeScalars.contains { (0x1100...0x11FF).contains($0.value) || (0xAC00...0xD7A3).contains($0.value) }
    }

    static func sign(_ value: Int) -> Int { value == 0 ? 0 : (value < 0 ? -1 : 1) }

    static let interestingDoubles: [Double] = [
        0.0, -0.0, 1, -1, .infinity, -.infinity, .nan, -.nan, Double(bitPattern: 0x7FF0_0000_0000_0001),
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNormalMagnitude, 1e-300, -1e300, 0.1, 0.2, 0.30000000000000004,
    ]

    /// Strings that stress normalization and escaping: combining marks in both orders, precomposed
    /// and decomposed forms, the Ångström sign, NUL, U+FFFF, astral scalars.
    static let interestingStrings: [String] = [
        "", "a", "ab", "a\u{0}", "a\u{0}b", "a\u{1}", "\u{0}", "\u{0}\u{0}", "b", "é", "e\u{301}", "e\u{301}\u{323}",
        "e\u{323}\u{301}", "ẹ́", "Å", "\u{212B}", "A\u{30A}", "\u{FFFF}", "😀", "\u{10FFFF}", "ü", "u\u{308}", "ñ", "n\u{303}x",
        "\u{1E0B}\u{323}", "\u{1E0D}\u{307}", "한", "\u{1112}\u{1161}\u{11AB}", "z", "Z", "ä\u{0}",
    ]

    static func randomValue(kind: Int, _ random: inout SeededRandom) -> Value {
        switch kind {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2:
            let small = Int64.random(in: -3...3, using: &random)
            return .int(Bool.random(using: &random) ? small : Int64(bitPattern: random.next()))
        case 3:
            if Int.random(in: 0..<3, using: &random) == 0 { return .double(interestingDoubles.randomElement(using: &random)!) }
            return .double(Bool.random(using: &random) ? Double(bitPattern: random.next())
                                                      : Double(Int.random(in: -5...5, using: &random)) / 2)
        case 4:
            var text = ""
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                text += interestingStrings.randomElement(using: &random)!
            }
            return .string(text)
        case 5: return .data(random.bytes(Int.random(in: 0...5, using: &random)).map { $0 % 4 == 0 ? 0 : $0 % 3 })
        case 6:
            let seconds = Bool.random(using: &random) ? interestingDoubles.randomElement(using: &random)!
                                                      : Double(Int.random(in: -1000...1000, using: &random)) * 0.25
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case 7:
            var bytes = random.bytes(16)
            bytes[0] %= 3
            return .uuid(UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                                     bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])))
        default: return .codable(random.bytes(Int.random(in: 0...3, using: &random)).map { $0 % 3 })
        }
    }

    @Test func byteOrderIsPredicateOrderForRandomPairs() throws {
        let seed = SeededRandom.seed(default: 0x1DE4)
        print("IndexKeyTests.byteOrderIsPredicateOrderForRandomPairs seed \(seed)")
        var random = SeededRandom(seed: seed)
        var checked = 0
        for _ in 0..<40_000 {
            let sameKind = Int.random(in: 0..<10, using: &random) > 0
            let kindA = Int.random(in: 0...8, using: &random)
            let kindB = sameKind ? kindA : Int.random(in: 0...8, using: &random)
            let a = Self.randomValue(kind: kindA, &random), b = Self.randomValue(kind: kindB, &random)
            let keyOrder = Self.sign(IndexKey.compare(IndexKey.encode(a), IndexKey.encode(b)))
            if let expected = Self.predicateOrder(a, b) {
                #expect(keyOrder == expected, "\(a) vs \(b), seed \(seed)")
                checked += 1
            } else {
                if case .string(let x) = a, case .string(let y) = b {
                    #expect(keyOrder != 0 && x != y, "\(a) vs \(b), seed \(seed)")
                    continue
                }
                // NaN: one key for every NaN, after +∞ and every other double or date.
                let aNaN = Self.isNaN(a), bNaN = Self.isNaN(b)
                #expect(keyOrder == (aNaN && bNaN ? 0 : (aNaN ? 1 : -1)), "\(a) vs \(b), seed \(seed)")
            }
        }
        #expect(checked > 30_000)
    }

    static func isNaN(_ value: Value) -> Bool {
        switch value {
        case .double(let x): x.isNaN
        case .date(let x): x.timeIntervalSinceReferenceDate.isNaN
        default: false
        }
    }

    @Test func everyPairOfInterestingStringsAndDoubles() {
        for a in Self.interestingStrings {
            for b in Self.interestingStrings {
                let keyOrder = Self.sign(IndexKey.compare(IndexKey.encode(.string(a)), IndexKey.encode(.string(b))))
                #expect(keyOrder == (a == b ? 0 : (a < b ? -1 : 1)), "\(Array(a.unicodeScalars)) vs \(Array(b.unicodeScalars))")
            }
        }
        for a in Self.interestingDoubles where !a.isNaN {
            for b in Self.interestingDoubles where !b.isNaN {
                let keyOrder = Self.sign(IndexKey.compare(IndexKey.encode(.double(a)), IndexKey.encode(.double(b))))
                #expect(keyOrder == (a == b ? 0 : (a < b ? -1 : 1)), "\(a) vs \(b)")
            }
        }
        #expect(IndexKey.encode(.double(-0.0)) == IndexKey.encode(.double(0.0)))
        #expect(IndexKey.encode(.double(.nan)) == IndexKey.encode(.double(-.nan)))
        #expect(IndexKey.compare(IndexKey.encode(.double(.infinity)), IndexKey.encode(.double(.nan))) < 0)
        #expect(IndexKey.encode(.string("e\u{301}")) == IndexKey.encode(.string("é")))
        #expect(IndexKey.encode(.null) == [0])
    }

    /// Keys of Hangul strings follow the order of their canonical compositions' scalars:
    /// a prefix first, and canonically equivalent (composed and decomposed) forms equal.
    @Test func hangulKeysFollowNFCOrder() {
        let syllable = IndexKey.encode(.string("\u{D55C}")), decomposed = IndexKey.encode(.string("\u{1112}\u{1161}\u{11AB}"))
        #expect(syllable == decomposed)
        #expect(IndexKey.compare(syllable, IndexKey.encode(.string("\u{D55C}a"))) < 0)
        #expect(IndexKey.compare(syllable, IndexKey.encode(.string("\u{D55C}\u{0}"))) < 0)
        #expect(IndexKey.compare(IndexKey.encode(.string("\u{D55B}z")), syllable) < 0)
    }

    /// Entries (value key ‖ id) sort by (value, id): escaping keeps value keys prefix-free.
    @Test func entriesSortByValueThenID() throws {
        let seed = SeededRandom.seed(default: 0xE27)
        print("IndexKeyTests.entriesSortByValueThenID seed \(seed)")
        var random = SeededRandom(seed: seed)
        for kind in [2, 4, 5, 8] {
            var pairs: [(value: Value, id: UInt64)] = []
            for _ in 0..<400 {
                pairs.append((Self.randomValue(kind: kind, &random), UInt64.random(in: 0...UInt64.max, using: &random) >> UInt64.random(in: 0...63, using: &random)))
            }
            let byKey = pairs.sorted { IndexKey.compare(IndexKey.entry(IndexKey.encode($0.value), id: $0.id),
                                                        IndexKey.entry(IndexKey.encode($1.value), id: $1.id)) < 0 }
            for (x, y) in zip(byKey, byKey.dropFirst()) {
                guard let order = Self.predicateOrder(x.value, y.value) else { continue }  // Hangul, see above
                #expect(order < 0 || (order == 0 && x.id <= y.id), "\(x) before \(y), seed \(seed)")
            }
            for pair in pairs {
                #expect(IndexKey.recordID(ofEntry: IndexKey.entry(IndexKey.encode(pair.value), id: pair.id)) == pair.id)
            }
        }
    }

    /// Cut keys keep the order (never inverted) and stay prefix-free.
    @Test func longKeysAreCutWithoutBreakingOrder() throws {
        let seed = SeededRandom.seed(default: 0x10F6)
        print("IndexKeyTests.longKeysAreCutWithoutBreakingOrder seed \(seed)")
        var random = SeededRandom(seed: seed)
        let prefixes = [String(repeating: "x", count: 505), String(repeating: "x", count: 509), String(repeating: "y", count: 600)]
        var values: [String] = []
        for _ in 0..<300 {
            var text = prefixes.randomElement(using: &random)!
            for _ in 0..<Int.random(in: 0...20, using: &random) { text += ["a", "b", "\u{0}", "é", "e\u{301}"].randomElement(using: &random)! }
            values.append(text)
        }
        values.sort()
        let stored = values.map { Array(IndexKey.stored(IndexKey.encode(.string($0)))) }
        for (x, y) in zip(stored, stored.dropFirst()) { #expect(IndexKey.compare(x, y) <= 0) }
        for x in Set(stored) {
            for y in Set(stored) where x != y { #expect(!y.starts(with: x), "a stored key is a prefix of another") }
        }
        #expect(stored.contains { $0.count == IndexKey.maximumStoredLength })
        #expect(IndexKey.isCut(IndexKey.encode(.string(prefixes[2]))))
        #expect(!IndexKey.isCut(IndexKey.encode(.string("short"))))
    }
}
