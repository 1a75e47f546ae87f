#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema
import StrataTestSupport

/// A record with one attribute of each type the pre-filter compares.
struct ConditionItem: PersistentRecord, Equatable {
    var name: String
    var count: Int
    var score: Double
    var when: Date
    var flag: Bool
    var tag: String?
    var key: UUID
    var level: Int?

    static let attributeDefaults: [String: Value] = ["level": .int(7)]
}

/// A type whose coding keys swap two properties' names: `\.a` reads the attribute named "b".
struct ConditionSwapped: PersistentRecord {
    var a: Int
    var b: Int
    enum CodingKeys: String, CodingKey { case a = "b", b = "a" }
}

/// A type whose hand-written decoding clamps `level`: stored 50 reads 10.
struct ConditionClamped: PersistentRecord {
    var name: String
    var level: Int
    init(name: String, level: Int) { self.name = name; self.level = level }
    enum CodingKeys: String, CodingKey { case name, level }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        level = min(10, try c.decode(Int.self, forKey: .level))
    }
}

/// Verdicts kept in a table, counting the probings recorded.
final class CountingVerdicts: KeyPathVerdicts, @unchecked Sendable {
    private(set) var table: [ProbeKey: Bool] = [:]
    private(set) var recorded = 0
    func verdict(for key: ProbeKey) -> Bool? { table[key] }
    func record(_ verdict: Bool, for key: ProbeKey) {
        table[key] = verdict
        recorded += 1
    }
}

/// `RecordCondition`: a predicate compiled to a pre-filter on stored bytes never answers
/// differently from the predicate evaluated on the decoded record, and decides most records
/// of the forms it understands without decoding.
@Suite struct RecordConditionTests {
    static func layoutAndAttributes<R: PersistentRecord>(_ type: R.Type) throws -> (RecordLayout, [String: ConditionAttribute]) {
        let catalog = try SchemaCatalog().register(Schema([try R.entity()])).catalog
        let version = try #require(catalog.latest)
        let entityID = try #require(version.entity(named: R.entityName)?.id)
        var attributes: [String: ConditionAttribute] = [:]
        for attribute in version.resolvedAttributes(ofEntity: entityID) {
            let defaultValue = attribute.defaultValue.isNull ? R.attributeDefaults[attribute.name] ?? .null : attribute.defaultValue
            attributes[attribute.name] = ConditionAttribute(id: attribute.id, type: attribute.type, defaultValue: defaultValue)
        }
        return (RecordLayout(version: version, entityID: entityID), attributes)
    }

    /// Strings that stress byte-level decisions: canonical equivalents (é as one or two
    /// scalars, the Kelvin sign and K), combining marks after ASCII, CR LF, empty.
    static let pieces = ["a", "b", "K", "\u{212A}", "e", "\u{301}", "\u{E9}", "\r", "\n", "\r\n", " ", "ab", "Z", "~"]

    static func randomString(_ random: inout SeededRandom) -> String {
        (0..<Int(random.next() % 5)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
    }

    static func randomItem(_ random: inout SeededRandom) -> ConditionItem {
        let scores: [Double] = [0, -0.0, 1.5, -3, .nan, .infinity, 2]
        return ConditionItem(name: randomString(&random), count: Int(random.next() % 7) - 3, score: scores[Int(random.next() % 7)],
                    when: Date(timeIntervalSinceReferenceDate: Double(random.next() % 5)), flag: random.next() % 2 == 0,
                    tag: random.next() % 3 == 0 ? nil : randomString(&random),
                    key: UUID(uuid: (UInt8(random.next() % 3), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                    level: random.next() % 2 == 0 ? nil : Int(random.next() % 10))
    }

    /// Predicates of every form the compiler knows, and a few it does not, over random constants.
    static func predicates(_ random: inout SeededRandom) -> [(String, Predicate<ConditionItem>)] {
        let s = randomString(&random), t = randomString(&random)
        let asciiPrefix = ["", "a", "ab", "K", "b\r", "Z~"][Int(random.next() % 6)]
        let k = Int(random.next() % 7) - 3
        let d = [0, -0.0, 1.5, .nan, 2][Int(random.next() % 5)]
        let date = Date(timeIntervalSinceReferenceDate: Double(random.next() % 5))
        let uuid = UUID(uuid: (UInt8(random.next() % 3), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        let optionalTag: String? = random.next() % 2 == 0 ? nil : t
        return [
            ("name == s", #Predicate { $0.name == s }),
            ("name != s", #Predicate { $0.name != s }),
            ("name < s", #Predicate { $0.name < s }),
            ("name >= s", #Predicate { $0.name >= s }),
            ("s > name", #Predicate { s > $0.name }),
            ("name starts with", #Predicate { $0.name.starts(with: asciiPrefix) }),
            ("name starts with non-ASCII", #Predicate { $0.name.starts(with: t) }),
            ("count > k", #Predicate { $0.count > k }),
            ("count <= k", #Predicate { $0.count <= k }),
            ("k == count", #Predicate { k == $0.count }),
            ("score < d", #Predicate { $0.score < d }),
            ("score == d", #Predicate { $0.score == d }),
            ("score >= d", #Predicate { $0.score >= d }),
            ("when < date", #Predicate { $0.when < date }),
            ("when == date", #Predicate { $0.when == date }),
            ("flag", #Predicate { $0.flag == true }),
            ("!flag", #Predicate { !$0.flag }),
            ("tag == nil", #Predicate { $0.tag == nil }),
            ("tag != nil", #Predicate { $0.tag != nil }),
            ("tag == optional", #Predicate { $0.tag == optionalTag }),
            ("key == uuid", #Predicate { $0.key == uuid }),
            ("level == k (default 7)", #Predicate { $0.level == k }),
            ("and", #Predicate { $0.name.starts(with: asciiPrefix) && $0.count > k }),
            ("or", #Predicate { $0.flag || $0.count < k }),
            ("not", #Predicate { !($0.name == s) }),
            ("contains (unknown)", #Predicate { $0.name.contains(s) }),
            ("mixed", #Predicate { ($0.name.contains(s) || $0.count == k) && !$0.flag }),
        ]
    }

    /// A key path whose decoding changes values (clamps) is left to the decoder; one that
    /// reads values back is compiled; each is probed once and its verdict reused.
    @Test func keyPathsAreProbedOnceAndOnlyFaithfulOnesCompiled() throws {
        let (layout, attributes) = try Self.layoutAndAttributes(ConditionClamped.self)
        let verdicts = CountingVerdicts()
        let clamped = #Predicate<ConditionClamped> { $0.level > 10 }
        let named = #Predicate<ConditionClamped> { $0.name == "x" }
        for _ in 0..<3 {
            #expect(!RecordCondition.compile(clamped, attributes: attributes, verdicts: verdicts).isUseful)
            #expect(RecordCondition.compile(named, attributes: attributes, verdicts: verdicts).isUseful)
        }
        #expect(verdicts.recorded == 2)
        #expect(verdicts.table.values.sorted { !$0 && $1 } == [false, true])
        // Stored 50 reads 10: `level > 10` is false for it, so no byte-level answer may say true.
        let bytes = try RecordEncoder().encode(ConditionClamped(name: "x", level: 50), layout: layout)
        #expect(bytes.withUnsafeBytes { RecordCondition.compile(clamped, attributes: attributes).evaluate($0) } == nil)
    }

    @Test func preFilterNeverDisagreesWithThePredicate() throws {
        let seed = SeededRandom.seed(default: 0x5EED_C0DE)
        print("RecordConditionTests seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let (layout, attributes) = try Self.layoutAndAttributes(ConditionItem.self)
        var decided = [String: Int](), total = [String: Int]()
        // `level` is optional with a default: a nil is a null field, which the decoder reads
        // (nil for an optional property, the default otherwise), not the pre-filter.
        var nullLevels = 0
        for _ in 0..<300 {
            let items = (0..<20).map { _ in Self.randomItem(&random) }
            let encoded = try items.map { try RecordEncoder().encode($0, layout: layout) }
            for (name, predicate) in Self.predicates(&random) {
                let condition = RecordCondition.compile(predicate, attributes: attributes)
                for (item, bytes) in zip(items, encoded) {
                    let expected = try predicate.evaluate(item)
                    let answer = bytes.withUnsafeBytes { condition.evaluate($0) }
                    total[name, default: 0] += 1
                    if name == "level == k (default 7)" && item.level == nil {
                        nullLevels += 1
                        #expect(answer == nil, "a null field was decided on bytes: \(name) on \(item) (seed \(seed))")
                    }
                    if let answer {
                        decided[name, default: 0] += 1
                        #expect(answer == expected, "\(name) on \(item): pre-filter \(answer), predicate \(expected) (seed \(seed))")
                    }
                }
            }
        }
        // The forms the compiler understands decide records without decoding them.
        for name in ["count > k", "k == count", "score < d", "when == date", "flag", "!flag", "tag == nil", "key == uuid", "or"] {
            #expect(decided[name, default: 0] == total[name], "\(name) decided \(decided[name, default: 0]) of \(total[name] ?? 0)")
        }
        let level = "level == k (default 7)"
        #expect(nullLevels > 0 && decided[level, default: 0] + nullLevels == total[level], "\(level) decided \(decided[level, default: 0]) of \(total[level] ?? 0), \(nullLevels) null fields")
        for name in ["name == s", "name starts with", "name < s", "and", "not"] {
            #expect(decided[name, default: 0] > total[name, default: 0] / 3, "\(name) decided only \(decided[name, default: 0])")
        }
        #expect(decided["contains (unknown)", default: 0] == 0)
    }

    @Test func keyPathsAreVerifiedAgainstTheFieldTheyRead() throws {
        let (layout, attributes) = try Self.layoutAndAttributes(ConditionSwapped.self)
        let predicate = #Predicate<ConditionSwapped> { $0.a == 1 }
        let condition = RecordCondition.compile(predicate, attributes: attributes)
        // \.a is named "a" but reads the attribute "b": the compiler must not map it to "a".
        let record = ConditionSwapped(a: 1, b: 2)
        let bytes = try RecordEncoder().encode(record, layout: layout)
        let answer = bytes.withUnsafeBytes { condition.evaluate($0) }
        #expect(answer == nil || answer == true)
        #expect(try predicate.evaluate(record))
    }

    @Test func compilesTheBenchmarkPredicate() throws {
        let (_, attributes) = try Self.layoutAndAttributes(ConditionItem.self)
        let prefix = "ab"
        let condition = RecordCondition.compile(#Predicate<ConditionItem> { $0.name.starts(with: prefix) }, attributes: attributes)
        let id = try #require(attributes["name"]?.id)
        #expect(condition == .startsWith(attributeID: id, prefix: Array("ab".utf8), absent: nil))
    }

    @Test func rangesForIndexScans() throws {
        let (_, attributes) = try Self.layoutAndAttributes(ConditionItem.self)
        let count = try #require(attributes["count"]?.id), name = try #require(attributes["name"]?.id)
        func range(_ predicate: Predicate<ConditionItem>, _ id: UInt32) -> ValueRange? {
            RecordCondition.compile(predicate, attributes: attributes).range(of: id)
        }
        let lo = 3, hi = 9, text = "Ada", nan = Double.nan
        #expect(range(#Predicate { $0.count == lo }, count) == .equal(to: .int(3)))
        #expect(range(#Predicate { $0.count > lo && $0.count <= hi && $0.name == text }, count)
            == ValueRange(lower: .init(value: .int(3), isInclusive: false), upper: .init(value: .int(9), isInclusive: true)))
        #expect(range(#Predicate { lo < $0.count && $0.count > hi }, count)
            == ValueRange(lower: .init(value: .int(9), isInclusive: false)))
        #expect(range(#Predicate { $0.count >= lo && $0.count > lo }, count)
            == ValueRange(lower: .init(value: .int(3), isInclusive: false)))
        #expect(range(#Predicate { $0.count > lo && $0.name == text }, name) == .equal(to: .string("Ada")))
        // Not bounding: a disjunction, a negation, !=, NaN, nil.
        #expect(range(#Predicate { $0.count == lo || $0.count == hi }, count) == nil)
        #expect(range(#Predicate { !($0.count == lo) }, count) == nil)
        #expect(range(#Predicate { $0.count != lo }, count) == nil)
        #expect(range(#Predicate { $0.score < nan }, try #require(attributes["score"]?.id)) == nil)
        #expect(range(#Predicate { $0.tag == nil }, try #require(attributes["tag"]?.id)) == nil)
    }
}
