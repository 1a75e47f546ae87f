#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

// An outside user's attempt to make migrations lose or change data: SwiftData-style plans run
// on irregular seeded data (nil and non-nil optionals, empty and very long strings, unicode in
// every normalization, Int and Double extremes, NaN, -0.0, infinities, dates, blobs, UUIDs,
// codable structs and enums, arrays, relationships, sub-entities, id gaps). Every value of
// every record is compared with what the test computes independently. Written by a session
// acting as an outside user; what it found and what was fixed is in Docs/Testing.md
// ("MigrationAdversaryTests"). Where Strata does not yet meet the rule (a plan works, or fails
// in validate() or at open with the fix), the expectation is a `withKnownIssue`, which fails
// the day the behaviour changes.

// MARK: Comparing values exactly

/// Every difference between `a` and `b`, field by field: doubles and dates by bit pattern,
/// strings by their unicode scalars (not canonical equivalence), data by bytes.
func adversaryDiff(_ a: Any, _ b: Any, path: String = "", into out: inout [String]) {
    if let x = a as? Double, let y = b as? Double {
        if x.bitPattern != y.bitPattern { out.append("\(path): \(x) (\(String(x.bitPattern, radix: 16))) != \(y) (\(String(y.bitPattern, radix: 16)))") }
        return
    }
    if let x = a as? Float, let y = b as? Float {
        if x.bitPattern != y.bitPattern { out.append("\(path): \(x) != \(y)") }
        return
    }
    if let x = a as? Date, let y = b as? Date {
        let p = x.timeIntervalSinceReferenceDate, q = y.timeIntervalSinceReferenceDate
        if p.bitPattern != q.bitPattern { out.append("\(path): date \(p) != \(q)") }
        return
    }
    if let x = a as? String, let y = b as? String {
        if !x.unicodeScalars.elementsEqual(y.unicodeScalars) {
            out.append("\(path): string (\(x.utf8.count) bytes) \(x.prefix(60).debugDescription) != (\(y.utf8.count) bytes) \(y.prefix(60).debugDescription)")
        }
        return
    }
    if let x = a as? Data, let y = b as? Data {
        if x != y { out.append("\(path): data of \(x.count) bytes != data of \(y.count) bytes") }
        return
    }
    if let x = a as? UUID, let y = b as? UUID {
        if x != y { out.append("\(path): \(x) != \(y)") }
        return
    }
    let ma = Mirror(reflecting: a), mb = Mirror(reflecting: b)
    if ma.displayStyle == .optional || mb.displayStyle == .optional {
        let ca = Array(ma.children), cb = Array(mb.children)
        if ca.count != cb.count { out.append("\(path): \(String(reflecting: a).prefix(80)) != \(String(reflecting: b).prefix(80))"); return }
        if let first = ca.first, let second = cb.first { adversaryDiff(first.value, second.value, path: path, into: &out) }
        return
    }
    let ca = Array(ma.children), cb = Array(mb.children)
    if ca.isEmpty && cb.isEmpty {
        if String(reflecting: a) != String(reflecting: b) { out.append("\(path): \(String(reflecting: a).prefix(80)) != \(String(reflecting: b).prefix(80))") }
        return
    }
    if ca.count != cb.count { out.append("\(path): \(ca.count) children != \(cb.count)"); return }
    for (index, (x, y)) in zip(ca, cb).enumerated() {
        adversaryDiff(x.value, y.value, path: path + "." + (x.label ?? "[\(index)]"), into: &out)
    }
}

/// Expects `found` (fetched, in id order) to be exactly `expected` (id → record).
func expectExactly<Record: PersistentRecord>(_ found: [Identified<Record>], _ expected: [(UInt64, Record)], _ what: String,
                                             sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(found.map(\.id.rawValue) == expected.map(\.0), "\(what): ids", sourceLocation: sourceLocation)
    var problems: [String] = []
    let wanted = Dictionary(expected.map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
    for match in found {
        guard let record = wanted[match.id.rawValue] else { continue }
        adversaryDiff(match.record, record, path: "\(what)#\(match.id.rawValue)", into: &problems)
    }
    if !problems.isEmpty {
        Issue.record("\(problems.count) differences, first: \(problems.prefix(8).joined(separator: "\n"))", sourceLocation: sourceLocation)
    }
}

// MARK: Irregular values

struct Irregular {
    var random: SeededRandom
    init(seed: UInt64) { random = SeededRandom(seed: seed) }

    mutating func below(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }

    static let strings = ["", " ", "a", "Zoë", "é", "e\u{301}", "Å", "A\u{30A}", "李雷 韩梅梅", "Дмитрий", "😀", "👩‍👩‍👧‍👦",
                          "🇫🇷🇯🇵", "\r\n", "tab\there", "nul\u{0}inside", "שלום עולם", "مرحبا", "ﷺ", "\u{FEFF}bom",
                          "quote\"and\\back", "line\nbreak", "0", "-0", "12", "-9223372036854775808", "9223372036854775807",
                          "3.5", "  42 ", "1e3", "0x1F", "NaN"]

    mutating func string() -> String {
        if chance(1) {
            // Tens of KB, not compressible to nothing.
            let length = 10_000 + below(50_000)
            var scalars = String.UnicodeScalarView()
            for _ in 0..<length / 4 { scalars.append(Unicode.Scalar(UInt32(0x20 + below(0x2000)))!) }
            return String(scalars) + Self.strings[below(Self.strings.count)]
        }
        if chance(30) { return Self.strings[below(Self.strings.count)] }
        return Self.strings[below(Self.strings.count)] + " \(random.next() % 100_000)" + Self.strings[below(Self.strings.count)]
    }

    mutating func int() -> Int {
        switch below(10) {
        case 0: return [Int.min, Int.max, 0, -1, 1, Int(Int32.max) + 1, Int(Int32.min) - 1][below(7)]
        case 1, 2: return Int(truncatingIfNeeded: random.next())
        default: return below(2_000) - 1_000
        }
    }

    mutating func double() -> Double {
        switch below(12) {
        case 0: return [Double.nan, -0.0, 0.0, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                        .leastNonzeroMagnitude, .leastNormalMagnitude, 1e300, -1e-300, .ulpOfOne][below(12)]
        case 1: return Double(bitPattern: random.next())  // any bit pattern, NaN payloads included
        default: return (Double(below(2_000_000)) - 1_000_000) / 1_024
        }
    }

    mutating func date() -> Date {
        switch below(8) {
        case 0: return [Date.distantPast, .distantFuture, Date(timeIntervalSince1970: 0), Date(timeIntervalSinceReferenceDate: 0),
                        Date(timeIntervalSinceReferenceDate: -0.000_001), Date(timeIntervalSinceReferenceDate: 1e-9)][below(6)]
        default: return Date(timeIntervalSinceReferenceDate: Double(Int(truncatingIfNeeded: random.next() % 4_000_000_000)) / 3 - 1e9)
        }
    }

    mutating func data() -> Data {
        if chance(1) { return Data(random.bytes(20_000 + below(30_000))) }
        if chance(20) { return Data() }
        return Data(random.bytes(below(64)))
    }

    mutating func uuid() -> UUID {
        let b = random.bytes(16)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}

// MARK: The rich entity, version 1

enum RichV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Address: Codable, Hashable { var street: String; var city: String }
    enum Mood: String, Codable, CaseIterable { case happy, sad, meh }
    struct Item: PersistentRecord {
        static var entityName: String { "Item" }
        var title: String
        var note: String?
        var count: Int
        var maybeCount: Int?
        var ratio: Double
        var maybeRatio: Double?
        var when: Date
        var blob: Data
        var uuid: UUID
        var address: Address
        var mood: Mood
        var tags: [String]
        var code: String
        var legacy: Int
        var flag: Bool?
    }
}

extension Irregular {
    mutating func richItem() -> RichV1.Item {
        RichV1.Item(title: string(), note: chance(40) ? nil : string(), count: int(), maybeCount: chance(50) ? nil : int(),
                    ratio: double(), maybeRatio: chance(50) ? nil : double(), when: date(), blob: data(), uuid: uuid(),
                    address: RichV1.Address(street: string(), city: string()), mood: RichV1.Mood.allCases[below(3)],
                    tags: (0..<below(5)).map { _ in string() }, code: chance(50) ? String(int()) : string(), legacy: int(),
                    flag: chance(33) ? nil : chance(50))
    }
}

/// A store of `count` irregular items, about a tenth then deleted (gaps in the ids); returns
/// the surviving items by id.
func createRichStore(at folder: String, count: Int, seed: UInt64) throws -> [(UInt64, RichV1.Item)] {
    var irregular = Irregular(seed: seed)
    let items = (0..<count).map { _ in irregular.richItem() }
    let store = try Store(at: folder, schema: RichV1.self)
    let context = Context(store)
    var ids: [RecordID<RichV1.Item>] = []
    for item in items { ids.append(try context.insert(item)) }
    try context.save()
    var kept: [(UInt64, RichV1.Item)] = []
    for (id, item) in zip(ids, items) {
        if irregular.chance(10) { try context.delete(id) } else { kept.append((id.rawValue, item)) }
    }
    // The last record deleted too, so the highest id is a gap.
    if let last = kept.last, irregular.chance(100) { try context.delete(RecordID<RichV1.Item>(rawValue: last.0)); kept.removeLast() }
    try context.save()
    // Sanity: version 1 reads back exactly.
    expectExactly(try context.fetch(FetchDescriptor<RichV1.Item>()), kept, "V1 Item")
    try store.close()
    return kept
}

// MARK: Versions 2 to 5 of the rich entity

/// Lightweight from V1: note optional → required with a default; maybeCount renamed
/// optionalCount (originalName); legacy renamed legacyScore (originalName); flag removed;
/// priority added with a default, extra added optional; Address gains an optional zip; Mood
/// gains a case.
enum RichV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Address: Codable, Hashable { var street: String; var city: String; var zip: String? }
    enum Mood: String, Codable, CaseIterable { case happy, sad, meh, angry }
    struct Item: PersistentRecord {
        static var entityName: String { "Item" }
        static var attributeDefaults: [String: Value] { ["note": "", "priority": 3] }
        static var originalAttributeNames: [String: String] { ["optionalCount": "maybeCount", "legacyScore": "legacy"] }
        var title: String
        var note: String
        var count: Int
        var optionalCount: Int?
        var ratio: Double
        var maybeRatio: Double?
        var when: Date
        var blob: Data
        var uuid: UUID
        var address: Address
        var mood: Mood
        var tags: [String]
        var code: String
        var legacyScore: Int
        var priority: Int
        var extra: String?
    }

    static func expected(_ old: RichV1.Item) -> Item {
        Item(title: old.title, note: old.note ?? "", count: old.count, optionalCount: old.maybeCount, ratio: old.ratio,
             maybeRatio: old.maybeRatio, when: old.when, blob: old.blob, uuid: old.uuid,
             address: Address(street: old.address.street, city: old.address.city, zip: nil),
             mood: Mood(rawValue: old.mood.rawValue)!, tags: old.tags, code: old.code, legacyScore: old.legacy, priority: 3, extra: nil)
    }
}

/// A transform from V2: count Int → String, code String → Int? (parsed), tags [String] →
/// one String, the Address struct flattened into two attributes.
enum RichV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: PersistentRecord {
        static var entityName: String { "Item" }
        var title: String
        var note: String
        var count: String
        var optionalCount: Int?
        var ratio: Double
        var maybeRatio: Double?
        var when: Date
        var blob: Data
        var uuid: UUID
        var street: String
        var city: String
        var zip: String?
        var mood: RichV2.Mood
        var tags: String
        var code: Int?
        var legacyScore: Int
        var priority: Int
        var extra: String?
    }

    @Sendable static func transform(_ old: RichV2.Item) -> Item {
        Item(title: old.title, note: old.note, count: String(old.count), optionalCount: old.optionalCount, ratio: old.ratio,
             maybeRatio: old.maybeRatio, when: old.when, blob: old.blob, uuid: old.uuid, street: old.address.street,
             city: old.address.city, zip: old.address.zip, mood: old.mood, tags: old.tags.joined(separator: "\u{1F}"),
             code: Int(old.code), legacyScore: old.legacyScore, priority: old.priority, extra: old.extra)
    }
}

/// Closures from V3: summary added with a default, filled by a didMigrate that fetches all
/// and rewrites (the article's loop), which also trims the note.
enum RichV4: VersionedSchema {
    static let versionIdentifier = Schema.Version(4, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: PersistentRecord {
        static var entityName: String { "Item" }
        static var attributeDefaults: [String: Value] { ["summary": ""] }
        var title: String
        var note: String
        var count: String
        var optionalCount: Int?
        var ratio: Double
        var maybeRatio: Double?
        var when: Date
        var blob: Data
        var uuid: UUID
        var street: String
        var city: String
        var zip: String?
        var mood: RichV2.Mood
        var tags: String
        var code: Int?
        var legacyScore: Int
        var priority: Int
        var extra: String?
        var summary: String
    }

    static func summary(_ item: Item) -> String { "\(item.title.prefix(5))|\(item.count)|\(item.code.map(String.init) ?? "-")" }

    static func expected(_ old: RichV3.Item) -> Item {
        var item = Item(title: old.title, note: old.note, count: old.count, optionalCount: old.optionalCount, ratio: old.ratio,
                        maybeRatio: old.maybeRatio, when: old.when, blob: old.blob, uuid: old.uuid, street: old.street, city: old.city,
                        zip: old.zip, mood: old.mood, tags: old.tags, code: old.code, legacyScore: old.legacyScore,
                        priority: old.priority, extra: old.extra, summary: "")
        item.summary = summary(item)
        item.note = String(item.note.prefix(100))
        return item
    }
}

/// Lightweight from V4: archived added with a default, blob removed.
enum RichV5: VersionedSchema {
    static let versionIdentifier = Schema.Version(5, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: PersistentRecord {
        static var entityName: String { "Item" }
        static var attributeDefaults: [String: Value] { ["summary": "", "archived": false] }
        var title: String
        var note: String
        var count: String
        var optionalCount: Int?
        var ratio: Double
        var maybeRatio: Double?
        var when: Date
        var uuid: UUID
        var street: String
        var city: String
        var zip: String?
        var mood: RichV2.Mood
        var tags: String
        var code: Int?
        var legacyScore: Int
        var priority: Int
        var extra: String?
        var summary: String
        var archived: Bool
    }

    static func expected(_ old: RichV4.Item) -> Item {
        Item(title: old.title, note: old.note, count: old.count, optionalCount: old.optionalCount, ratio: old.ratio,
             maybeRatio: old.maybeRatio, when: old.when, uuid: old.uuid, street: old.street, city: old.city, zip: old.zip,
             mood: old.mood, tags: old.tags, code: old.code, legacyScore: old.legacyScore, priority: old.priority, extra: old.extra,
             summary: old.summary, archived: false)
    }
}

enum RichPlanTo2: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [RichV1.self, RichV2.self] }
    static var stages: [MigrationStage] { [] }
}

/// The article's didMigrate: fetch everything, change it, update, save.
func richDidMigrate(_ context: Context) throws {
    for match in try context.fetch(FetchDescriptor<RichV4.Item>()) {
        var item = match.record
        item.summary = RichV4.summary(item)
        item.note = String(item.note.prefix(100))
        try context.update(match.id, to: item)
    }
    try context.save()
}

protocol RichChainPlan: SchemaMigrationPlan { static var concurrent: Bool { get } }
extension RichChainPlan {
    static var schemas: [any VersionedSchema.Type] { [RichV1.self, RichV2.self, RichV3.self, RichV4.self] }
    static var stages: [MigrationStage] {
        [
            .lightweight(fromVersion: RichV1.self, toVersion: RichV2.self),
            .custom(fromVersion: RichV2.self, toVersion: RichV3.self, transforms: [
                concurrent ? .mapConcurrently(RichV2.Item.self, to: RichV3.Item.self, RichV3.transform)
                           : .map(RichV2.Item.self, to: RichV3.Item.self) { RichV3.transform($0) },
            ], batchSize: 97),
            .custom(fromVersion: RichV3.self, toVersion: RichV4.self, willMigrate: nil, didMigrate: richDidMigrate),
        ]
    }
}
enum RichPlanTo4: RichChainPlan { static let concurrent = false }
enum RichConcurrentPlanTo4: RichChainPlan { static let concurrent = true }

enum RichPlanTo5: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { RichPlanTo4.schemas + [RichV5.self] }
    static var stages: [MigrationStage] { RichPlanTo4.stages }
}

@Suite(.serialized) struct MigrationAdversaryTests {
    @Test func anAutomaticLightweightStepKeepsEveryValueOfIrregularRecords() throws {
        let seed = SeededRandom.seed(default: 0xAD_01)
        print("seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try createRichStore(at: folder, count: 3_000, seed: seed)
        try RichPlanTo2.validate()
        let expected = old.map { ($0.0, RichV2.expected($0.1)) }
        do {
            let store = try Store(at: folder, schema: RichV2.self, migrationPlan: RichPlanTo2.self)
            let context = Context(store)
            expectExactly(try context.fetch(FetchDescriptor<RichV2.Item>()), expected, "V2 Item")
            // A new record never takes an existing id, nor the deleted highest one's place in a way that overwrites.
            var irregular = Irregular(seed: seed ^ 1)
            let added = RichV2.expected(irregular.richItem())
            let id = try context.insert(added)
            try context.save()
            #expect(id.rawValue > old.last!.0)
            try store.close()
            let reopened = try Store(at: folder, schema: RichV2.self, migrationPlan: RichPlanTo2.self)
            expectExactly(try Context(reopened).fetch(FetchDescriptor<RichV2.Item>()), expected + [(id.rawValue, added)], "V2 Item reopened")
            #expect(try reopened.verify().isValid)
            try reopened.close()
        }
    }

    static func expectedV4(_ old: [(UInt64, RichV1.Item)]) -> [(UInt64, RichV4.Item)] {
        old.map { ($0.0, RichV4.expected(RichV3.transform(RichV2.expected($0.1)))) }
    }

    @Test(arguments: [false, true]) func aChainOfLightweightTransformAndClosureStagesKeepsEveryValue(concurrent: Bool) throws {
        let seed = SeededRandom.seed(default: 0xAD_02)
        print("seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try createRichStore(at: folder, count: 2_500, seed: seed)
        let expected = Self.expectedV4(old)
        let store = concurrent ? try Store(at: folder, schema: RichV4.self, migrationPlan: RichConcurrentPlanTo4.self)
                               : try Store(at: folder, schema: RichV4.self, migrationPlan: RichPlanTo4.self)
        expectExactly(try Context(store).fetch(FetchDescriptor<RichV4.Item>()), expected, "V4 Item")
        #expect(try store.verify().isValid)
        try store.close()
        // Reopened by the same app: nothing changes.
        let reopened = try Store(at: folder, schema: RichV4.self, migrationPlan: RichPlanTo4.self)
        expectExactly(try Context(reopened).fetch(FetchDescriptor<RichV4.Item>()), expected, "V4 Item reopened")
        try reopened.close()
        // A second migration on the migrated store.
        let fifth = try Store(at: folder, schema: RichV5.self, migrationPlan: RichPlanTo5.self)
        expectExactly(try Context(fifth).fetch(FetchDescriptor<RichV5.Item>()), expected.map { ($0.0, RichV5.expected($0.1)) }, "V5 Item")
        try fifth.close()
    }

    @Test func anAppSkippingVersionsMigratesAStoreTheIntermediateAppMigratedHalfway() throws {
        let seed = SeededRandom.seed(default: 0xAD_03)
        print("seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try createRichStore(at: folder, count: 2_000, seed: seed)
        // The 2.0 app migrates to V2, then edits a few records and deletes others.
        let second = try Store(at: folder, schema: RichV2.self, migrationPlan: RichPlanTo2.self)
        let context = Context(second)
        var v2 = old.map { ($0.0, RichV2.expected($0.1)) }
        var irregular = Irregular(seed: seed ^ 2)
        for index in stride(from: 0, to: v2.count, by: 7) {
            var item = v2[index].1
            item.extra = irregular.string()
            item.priority = irregular.int()
            item.mood = .angry
            item.address.zip = irregular.chance(50) ? nil : irregular.string()
            v2[index].1 = item
            try context.update(RecordID<RichV2.Item>(rawValue: v2[index].0), to: item)
        }
        for index in stride(from: v2.count - 1, to: 0, by: -13) {
            try context.delete(RecordID<RichV2.Item>(rawValue: v2[index].0))
            v2.remove(at: index)
        }
        try context.save()
        try second.close()
        // The 4.0 app (1.0 → 4.0 plan) opens the 2.0 store.
        let fourth = try Store(at: folder, schema: RichV4.self, migrationPlan: RichPlanTo4.self)
        let expected = v2.map { ($0.0, RichV4.expected(RichV3.transform($0.1))) }
        expectExactly(try Context(fourth).fetch(FetchDescriptor<RichV4.Item>()), expected, "V4 Item from V2")
        try fourth.close()
    }
}

// MARK: Changes Strata may not see: narrower Swift types, codable types that change shape

enum ShapeV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Reading.self] }
    struct Address: Codable, Hashable { var street: String; var city: String }
    enum Mood: String, Codable, CaseIterable { case happy, sad, meh }
    struct Reading: PersistentRecord {
        static var entityName: String { "Reading" }
        var count: Int
        var ratio: Double
        var address: Address
        var mood: Mood
        var label: String?
    }
}

/// `count: Int` → `Int32` (both stored as int).
enum ShapeInt32: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Reading.self] }
    struct Reading: PersistentRecord {
        static var entityName: String { "Reading" }
        var count: Int32
        var ratio: Double
        var address: ShapeV1.Address
        var mood: ShapeV1.Mood
        var label: String?
    }
}

/// `ratio: Double` → `Float` (both stored as double).
enum ShapeFloat: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Reading.self] }
    struct Reading: PersistentRecord {
        static var entityName: String { "Reading" }
        var count: Int
        var ratio: Float
        var address: ShapeV1.Address
        var mood: ShapeV1.Mood
        var label: String?
    }
}

/// The codable Address gains a required field.
enum ShapeAddressZip: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Reading.self] }
    struct Address: Codable, Hashable { var street: String; var city: String; var zip: String }
    struct Reading: PersistentRecord {
        static var entityName: String { "Reading" }
        var count: Int
        var ratio: Double
        var address: Address
        var mood: ShapeV1.Mood
        var label: String?
    }
}

/// The codable enum loses a case some records hold.
enum ShapeMoodLosesCase: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Reading.self] }
    enum Mood: String, Codable, CaseIterable { case happy, sad }
    struct Reading: PersistentRecord {
        static var entityName: String { "Reading" }
        var count: Int
        var ratio: Double
        var address: ShapeV1.Address
        var mood: Mood
        var label: String?
    }
}

/// `label: String?` → a codable enum (made codable from a plain string, lightweight by the doc).
enum ShapeLabelEnum: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Reading.self] }
    enum Label: String, Codable, CaseIterable { case low, high }
    struct Reading: PersistentRecord {
        static var entityName: String { "Reading" }
        var count: Int
        var ratio: Double
        var address: ShapeV1.Address
        var mood: ShapeV1.Mood
        var label: Label?
    }
}

enum AutoStep<From: VersionedSchema, To: VersionedSchema>: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [From.self, To.self] }
    static var stages: [MigrationStage] { [] }
}

extension MigrationAdversaryTests {
    /// Readings with extreme values; every third has mood `meh`; labels "low", "high", "other", nil.
    static func createReadings(at folder: String, count: Int, seed: UInt64) throws -> [(UInt64, ShapeV1.Reading)] {
        var irregular = Irregular(seed: seed)
        let store = try Store(at: folder, schema: ShapeV1.self)
        let context = Context(store)
        var result: [(UInt64, ShapeV1.Reading)] = []
        for index in 0..<count {
            let reading = ShapeV1.Reading(count: index == 5 ? .max : irregular.int(), ratio: index == 6 ? 1e300 : irregular.double(),
                                          address: ShapeV1.Address(street: irregular.string(), city: irregular.string()),
                                          mood: ShapeV1.Mood.allCases[index % 3], label: [nil, "low", "high", "other"][index % 4])
            result.append((try context.insert(reading).rawValue, reading))
        }
        try context.save()
        try store.close()
        return result
    }

    /// Opens `folder` with `To` through the automatic plan from ShapeV1 and reads every record.
    /// When `validate()` refuses the plan saying the shapes are the same and the new version
    /// should be removed, does what it says: opens the store with the new record type and no
    /// new version. Returns the refusal (validate's message and, after following it, the
    /// open's), or the read's outcome.
    static func openAndReadAll<To: VersionedSchema, Record: PersistentRecord>(
        _ folder: String, _ to: To.Type, _ record: Record.Type
    ) -> (validateMessage: String?, refused: String?, readError: String?, records: [Identified<Record>]) {
        var validateMessage: String?
        do {
            try AutoStep<ShapeV1, To>.validate()
        } catch {
            validateMessage = "\(error)"
            print("REFUSED \(To.self) validate: \(error)")
        }
        let store: Store
        do {
            store = validateMessage == nil ? try Store(at: folder, schema: To.self, migrationPlan: AutoStep<ShapeV1, To>.self)
                                           : try Store(at: folder, for: [Record.self])
        } catch {
            print("REFUSED \(To.self) open: \(error)")
            return (validateMessage, "open: \(error)", nil, [])
        }
        defer { try? store.close() }
        do { return (validateMessage, nil, nil, try Context(store).fetch(FetchDescriptor<Record>())) } catch { return (validateMessage, nil, "\(error)", []) }
    }

    @Test func narrowingIntToInt32IsRefusedOrKeepsEveryValue() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try Self.createReadings(at: folder, count: 300, seed: 0xAD_10)
        let before = try folderContents(folder)
        let outcome = Self.openAndReadAll(folder, ShapeInt32.self, ShapeInt32.Reading.self)
        if let refused = outcome.refused {
            #expect(try folderContents(folder) == before, "refused, but the files changed: \(refused)")
            return
        }
        // Opened: then every value must read back.
        withKnownIssue(Comment(rawValue: Self.sameShapeIssue)) {
            #expect(outcome.readError == nil, "Int → Int32: validate said \(outcome.validateMessage ?? "nothing"); the store then opened and reading failed: \(outcome.readError ?? "")")
        }
        if outcome.readError == nil {
            #expect(outcome.records.map { Int($0.record.count) } == old.map(\.1.count))
        }
    }

    @Test func narrowingDoubleToFloatIsRefusedOrKeepsEveryValue() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try Self.createReadings(at: folder, count: 300, seed: 0xAD_11)
        let outcome = Self.openAndReadAll(folder, ShapeFloat.self, ShapeFloat.Reading.self)
        guard outcome.refused == nil else { return }
        // A stored double beyond Float's range (1e300) or rounding to zero (5e-324) is a typed
        // error when read, not a silent infinity or zero; the others round as JSONDecoder rounds.
        withKnownIssue(Comment(rawValue: Self.sameShapeIssue)) {
            #expect(outcome.readError == nil, "\(outcome.readError ?? "")")
        }
        #expect(outcome.readError?.contains("expected a value of type Float, found double(") ?? true, "\(outcome.readError ?? "")")
        var changed: [String] = []
        for (found, wanted) in zip(outcome.records, old) {
            let back = Double(found.record.ratio)
            if back.bitPattern != wanted.1.ratio.bitPattern && !(back.isNaN && wanted.1.ratio.isNaN) {
                changed.append("Reading#\(found.id.rawValue).ratio stored \(wanted.1.ratio) reads \(found.record.ratio)")
            }
        }
        #expect(changed.allSatisfy { !$0.hasSuffix(" reads inf") && !$0.hasSuffix(" reads 0.0") && !$0.hasSuffix(" reads -0.0") },
                "Double → Float: values read as an infinity or zero: \(changed.prefix(4))")
        withKnownIssue(Comment(rawValue: Self.sameShapeIssue), isIntermittent: true) {
        #expect(changed.isEmpty, "Double → Float: validate said \(outcome.validateMessage ?? "nothing"); the store then opened without a word and \(changed.count) of \(old.count) values changed, e.g. \(changed.prefix(4))")
        }
    }

    @Test func aCodableStructGainingARequiredFieldIsRefusedOrKeepsEveryValue() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        _ = try Self.createReadings(at: folder, count: 200, seed: 0xAD_12)
        let outcome = Self.openAndReadAll(folder, ShapeAddressZip.self, ShapeAddressZip.Reading.self)
        guard outcome.refused == nil else { return }
        withKnownIssue(Comment(rawValue: Self.sameShapeIssue)) {
        #expect(outcome.readError == nil, "Address gaining a required zip: validate said \(outcome.validateMessage ?? "nothing"); the store then opened and reading failed: \(outcome.readError ?? "")")
        }
    }

    @Test func aCodableEnumLosingACaseRecordsHoldIsRefusedOrKeepsEveryValue() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        _ = try Self.createReadings(at: folder, count: 200, seed: 0xAD_13)
        let outcome = Self.openAndReadAll(folder, ShapeMoodLosesCase.self, ShapeMoodLosesCase.Reading.self)
        guard outcome.refused == nil else { return }
        withKnownIssue(Comment(rawValue: Self.sameShapeIssue)) {
        #expect(outcome.readError == nil, "Mood losing .meh: validate said \(outcome.validateMessage ?? "nothing"); the store then opened and reading failed: \(outcome.readError ?? "")")
        }
    }

    @Test func aStringMadeAnEnumWithValuesItLacksIsRefusedOrKeepsEveryValue() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        _ = try Self.createReadings(at: folder, count: 200, seed: 0xAD_14)
        let outcome = Self.openAndReadAll(folder, ShapeLabelEnum.self, ShapeLabelEnum.Reading.self)
        guard outcome.refused == nil else { return }
        withKnownIssue(Comment(rawValue: "Known issue (documented in Migrations.md, \"Making an attribute codable\"): a plain attribute made "
                       + "codable is lightweight, and a stored value its type does not decode is a typed error when read, not a refusal at open")) {
            #expect(outcome.readError == nil, "label String? → enum opened, then reading failed: \(outcome.readError ?? "")")
        }
    }

    static let sameShapeIssue = "Known issue: a type change that keeps the stored shape (Int → Int32, Double → Float, a Codable type changed) is one schema checksum, so no migration can be declared and nothing refuses it at open; values that do not fit the new type fail as typed errors when read"

}

// MARK: Unique constraints added on data with duplicates

enum MemberV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Member.self] }
    struct Member: PersistentRecord {
        static var entityName: String { "Member" }
        var name: String
        var email: String?
        var score: Int
        var joined: Date
    }
}

enum MemberV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Member.self] }
    struct Member: PersistentRecord {
        static var entityName: String { "Member" }
        static var attributeOptions: [String: Attribute.Options] { ["name": [.unique]] }
        var name: String
        var email: String?
        var score: Int
        var joined: Date
    }
}

/// `email` (optional, mostly nil) made unique; the non-nil values are distinct.
enum MemberV2Email: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Member.self] }
    struct Member: PersistentRecord {
        static var entityName: String { "Member" }
        static var attributeOptions: [String: Attribute.Options] { ["email": [.unique]] }
        var name: String
        var email: String?
        var score: Int
        var joined: Date
    }
}

enum MemberNoDedupPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [MemberV1.self, MemberV2.self] }
    static var stages: [MigrationStage] { [] }
}

/// The doc's dedup: keep the first (lowest id) of each name.
enum MemberDedupPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [MemberV1.self, MemberV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: MemberV1.self, toVersion: MemberV2.self, willMigrate: { context in
            var seen = Set<String>()
            for match in try context.fetch(FetchDescriptor<MemberV1.Member>()) where !seen.insert(match.record.name).inserted {
                try context.delete(match.id)
            }
        }, didMigrate: nil)]
    }
}

/// The same dedup written the other way SwiftData users write it: merge the duplicates' scores
/// into the kept one (update), then delete the others, then save explicitly.
enum MemberMergePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [MemberV1.self, MemberV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: MemberV1.self, toVersion: MemberV2.self, willMigrate: { context in
            var kept: [String: Identified<MemberV1.Member>] = [:]
            for match in try context.fetch(FetchDescriptor<MemberV1.Member>()) {
                if var first = kept[match.record.name] {
                    first.record.score &+= match.record.score
                    first.record.email = first.record.email ?? match.record.email
                    kept[match.record.name] = first
                    try context.update(first.id, to: first.record)
                    try context.delete(match.id)
                } else {
                    kept[match.record.name] = match
                }
            }
            try context.save()
        }, didMigrate: nil)]
    }
}

enum MemberEmailPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [MemberV1.self, MemberV2Email.self] }
    static var stages: [MigrationStage] { [] }
}

extension MigrationAdversaryTests {
    /// Members whose names repeat (some only up to unicode normalization); a fifth have an
    /// email, each distinct.
    static func createMembers(at folder: String, count: Int, seed: UInt64) throws -> [(UInt64, MemberV1.Member)] {
        var irregular = Irregular(seed: seed)
        let names = ["José", "Jose\u{301}", "Ångström", "A\u{30A}ngstro\u{308}m", "李雷", "", " ", "bob", "Bob", "👩‍👩‍👧‍👦"]
            + (0..<300).map { "member \($0)" }
        let store = try Store(at: folder, schema: MemberV1.self)
        let context = Context(store)
        var result: [(UInt64, MemberV1.Member)] = []
        for index in 0..<count {
            let member = MemberV1.Member(name: names[irregular.below(names.count)], email: irregular.chance(20) ? "m\(index)@x.org" : nil,
                                         score: irregular.int(), joined: irregular.date())
            result.append((try context.insert(member).rawValue, member))
        }
        try context.save()
        for (index, member) in result.enumerated().reversed() where irregular.chance(5) {
            try context.delete(RecordID<MemberV1.Member>(rawValue: member.0))
            result.remove(at: index)
        }
        try context.save()
        try store.close()
        return result
    }

    static func v2(_ member: MemberV1.Member) -> MemberV2.Member {
        MemberV2.Member(name: member.name, email: member.email, score: member.score, joined: member.joined)
    }

    @Test func aUniqueConstraintOnDuplicatesIsRefusedAtOpenChangingNothing() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let members = try Self.createMembers(at: folder, count: 2_000, seed: 0xAD_20)
        for id in [76, 977] as [UInt64] { print("UNIQUE Member#\(id): \(members.first { $0.0 == id }.map { Array($0.1.name.unicodeScalars) } ?? [])") }
        try MemberNoDedupPlan.validate()
        let before = try folderContents(folder)
        do {
            _ = try Store(at: folder, schema: MemberV2.self, migrationPlan: MemberNoDedupPlan.self)
            Issue.record("a unique constraint on duplicate names was accepted")
        } catch {
            let message = "\(error)"
            print("UNIQUE REFUSAL: \(message)")
            #expect(message.contains("Member") && message.contains("name"), "\(message)")
            #expect(message.contains("willMigrate"), "the refusal does not say the fix (remove the duplicates in willMigrate): \(message)")
        }
        #expect(try folderContents(folder) == before)
    }

    @Test func aWillMigrateDedupKeepsExactlyTheFirstOfEachName() throws {
        let seed = SeededRandom.seed(default: 0xAD_21)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try Self.createMembers(at: folder, count: 2_000, seed: seed)
        var seen = Set<String>()
        let expected = old.filter { seen.insert($0.1.name).inserted }.map { ($0.0, Self.v2($0.1)) }
        let store = try Store(at: folder, schema: MemberV2.self, migrationPlan: MemberDedupPlan.self)
        expectExactly(try Context(store).fetch(FetchDescriptor<MemberV2.Member>()), expected, "deduplicated Member")
        #expect(try store.verify().isValid)
        try store.close()
    }

    @Test func aWillMigrateMergeOfDuplicatesKeepsEveryMergedValue() throws {
        let seed = SeededRandom.seed(default: 0xAD_22)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try Self.createMembers(at: folder, count: 2_000, seed: seed)
        var kept: [String: Int] = [:]
        var expected: [(UInt64, MemberV2.Member)] = []
        for (id, member) in old {
            if let index = kept[member.name] {
                expected[index].1.score &+= member.score
                expected[index].1.email = expected[index].1.email ?? member.email
            } else {
                kept[member.name] = expected.count
                expected.append((id, Self.v2(member)))
            }
        }
        let store = try Store(at: folder, schema: MemberV2.self, migrationPlan: MemberMergePlan.self)
        expectExactly(try Context(store).fetch(FetchDescriptor<MemberV2.Member>()), expected, "merged Member")
        try store.close()
    }

    @Test func aUniqueConstraintOnAMostlyNilOptionalKeepsEveryRecord() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try Self.createMembers(at: folder, count: 1_500, seed: 0xAD_23)
        try MemberEmailPlan.validate()
        do {
            let store = try Store(at: folder, schema: MemberV2Email.self, migrationPlan: MemberEmailPlan.self)
            let found = try Context(store).fetch(FetchDescriptor<MemberV2Email.Member>())
            #expect(found.count == old.count)
            #expect(zip(found, old).allSatisfy { $0.id.rawValue == $1.0 && $0.record.email == $1.1.email && $0.record.name == $1.1.name })
            try store.close()
        } catch {
            Issue.record("a unique constraint on an optional whose non-nil values are distinct was refused: \(error)")
        }
    }
}

// MARK: Relationships: cardinality changes and values moved into a new related entity

enum KennelV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Owner.self, Pet.self, Toy.self] }
    struct Owner: PersistentRecord, Equatable {
        static var entityName: String { "Owner" }
        static var relationshipRules: [String: RelationshipRule] { ["pets": RelationshipRule(inverse: "owner")] }
        var name: String
        var pets: [RecordID<Pet>]
    }
    struct Pet: PersistentRecord, Equatable {
        static var entityName: String { "Pet" }
        static var relationshipRules: [String: RelationshipRule] {
            ["owner": RelationshipRule(inverse: "pets"), "toys": RelationshipRule(inverse: "pets")]
        }
        var name: String
        var owner: RecordID<Owner>?
        var toys: [RecordID<Toy>]
        var vetName: String?
        var vetPhone: String?
    }
    struct Toy: PersistentRecord, Equatable {
        static var entityName: String { "Toy" }
        static var relationshipRules: [String: RelationshipRule] { ["pets": RelationshipRule(inverse: "toys")] }
        var label: String
        var pets: [RecordID<Pet>]
    }
}

/// Pet.owner (to-one) → Pet.owners (to-many, originalName "owner"), lightweight by the doc;
/// the vet's name and phone moved into a new entity Vet (name unique) through a transform.
enum KennelV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Owner.self, Pet.self, Toy.self, Vet.self] }
    struct Owner: PersistentRecord, Equatable {
        static var entityName: String { "Owner" }
        static var relationshipRules: [String: RelationshipRule] { ["pets": RelationshipRule(inverse: "owners")] }
        var name: String
        var pets: [RecordID<Pet>]
    }
    struct Pet: PersistentRecord, Equatable {
        static var entityName: String { "Pet" }
        static var originalAttributeNames: [String: String] { ["owners": "owner"] }
        static var relationshipRules: [String: RelationshipRule] {
            ["owners": RelationshipRule(inverse: "pets"), "toys": RelationshipRule(inverse: "pets"), "vet": RelationshipRule(inverse: "pets")]
        }
        var name: String
        var owners: [RecordID<Owner>]
        var toys: [RecordID<Toy>]
        var vet: RecordID<Vet>?
    }
    struct Toy: PersistentRecord, Equatable {
        static var entityName: String { "Toy" }
        static var relationshipRules: [String: RelationshipRule] { ["pets": RelationshipRule(inverse: "toys")] }
        var label: String
        var pets: [RecordID<Pet>]
    }
    struct Vet: PersistentRecord, Equatable {
        static var entityName: String { "Vet" }
        static var attributeOptions: [String: Attribute.Options] { ["name": [.unique]] }
        static var relationshipRules: [String: RelationshipRule] { ["pets": RelationshipRule(inverse: "vet")] }
        var name: String
        var phone: String?
        var pets: [RecordID<Pet>]
    }
}

enum KennelVetPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [KennelV1.self, KennelV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: KennelV1.self, toVersion: KennelV2.self, transforms: [
            .map(KennelV1.Pet.self, to: KennelV2.Pet.self) { old, writer in
                let vet = try old.vetName.map { try writer.insert(KennelV2.Vet(name: $0, phone: old.vetPhone, pets: [])) }
                return KennelV2.Pet(name: old.name, owners: old.owner.map { [sameID($0)] } ?? [], toys: sameIDs(old.toys), vet: vet)
            },
        ], batchSize: 300)]
    }
}

/// Pet.toys (to-many) → Pet.toy (to-one, originalName "toys"): the pet keeps its first toy.
enum KennelV2ToOne: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Owner.self, Pet.self, Toy.self] }
    struct Owner: PersistentRecord, Equatable {
        static var entityName: String { "Owner" }
        static var relationshipRules: [String: RelationshipRule] { ["pets": RelationshipRule(inverse: "owner")] }
        var name: String
        var pets: [RecordID<Pet>]
    }
    struct Pet: PersistentRecord, Equatable {
        static var entityName: String { "Pet" }
        static var originalAttributeNames: [String: String] { ["toy": "toys"] }
        static var relationshipRules: [String: RelationshipRule] {
            ["owner": RelationshipRule(inverse: "pets"), "toy": RelationshipRule(inverse: "pets")]
        }
        var name: String
        var owner: RecordID<Owner>?
        var toy: RecordID<Toy>?
        var vetName: String?
        var vetPhone: String?
    }
    struct Toy: PersistentRecord, Equatable {
        static var entityName: String { "Toy" }
        static var relationshipRules: [String: RelationshipRule] { ["pets": RelationshipRule(inverse: "toy")] }
        var label: String
        var pets: [RecordID<Pet>]
    }
}

enum KennelToOneNoStagePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [KennelV1.self, KennelV2ToOne.self] }
    static var stages: [MigrationStage] { [] }
}

/// The transform the user writes: each pet keeps its first toy; toys are not touched.
enum KennelToOnePetOnlyPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [KennelV1.self, KennelV2ToOne.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: KennelV1.self, toVersion: KennelV2ToOne.self, transforms: [
            .map(KennelV1.Pet.self, to: KennelV2ToOne.Pet.self) { old in
                KennelV2ToOne.Pet(name: old.name, owner: old.owner.map(sameID), toy: old.toys.first.map(sameID), vetName: old.vetName, vetPhone: old.vetPhone)
            },
        ])]
    }
}

/// The fix the failure asks for: a transform of Toy returning each record as it is.
enum KennelToOneBothPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [KennelV1.self, KennelV2ToOne.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: KennelV1.self, toVersion: KennelV2ToOne.self, transforms: [
            .map(KennelV1.Pet.self, to: KennelV2ToOne.Pet.self) { old in
                KennelV2ToOne.Pet(name: old.name, owner: old.owner.map(sameID), toy: old.toys.first.map(sameID), vetName: old.vetName, vetPhone: old.vetPhone)
            },
            .map(KennelV1.Toy.self, to: KennelV2ToOne.Toy.self) { old in KennelV2ToOne.Toy(label: old.label, pets: sameIDs(old.pets)) },
        ])]
    }
}

/// The same, with the toys' lists recomputed by the user (no stale links).
enum KennelToOneRecomputedPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [KennelV1.self, KennelV2ToOne.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: KennelV1.self, toVersion: KennelV2ToOne.self, transforms: [
            .map(KennelV1.Pet.self, to: KennelV2ToOne.Pet.self) { old in
                KennelV2ToOne.Pet(name: old.name, owner: old.owner.map(sameID), toy: old.toys.first.map(sameID), vetName: old.vetName, vetPhone: old.vetPhone)
            },
            .map(KennelV1.Toy.self, to: KennelV2ToOne.Toy.self) { old in KennelV2ToOne.Toy(label: old.label, pets: []) },
        ])]
    }
}

struct KennelData {
    var owners: [(UInt64, KennelV1.Owner)] = []
    var pets: [(UInt64, KennelV1.Pet)] = []
    var toys: [(UInt64, KennelV1.Toy)] = []
}

extension MigrationAdversaryTests {
    /// Owners, pets and toys linked at random (pets without owner, toys without pets), with a
    /// few records of each deleted; read back after the saves so inverses are as stored.
    static func createKennel(at folder: String, seed: UInt64) throws -> KennelData {
        var irregular = Irregular(seed: seed)
        let store = try Store(at: folder, schema: KennelV1.self)
        let context = Context(store)
        let owners = try (0..<300).map { _ in try context.insert(KennelV1.Owner(name: irregular.string(), pets: [])) }
        let toys = try (0..<200).map { _ in try context.insert(KennelV1.Toy(label: irregular.string(), pets: [])) }
        let vets = (0..<25).map { "Dr. \(Irregular.strings[$0 % Irregular.strings.count]) \($0)" }
        for _ in 0..<1_500 {
            let vet = irregular.chance(30) ? nil : vets[irregular.below(vets.count)]
            try context.insert(KennelV1.Pet(name: irregular.string(), owner: irregular.chance(20) ? nil : owners[irregular.below(owners.count)],
                                            toys: (0..<irregular.below(4)).map { _ in toys[irregular.below(toys.count)] },
                                            vetName: vet, vetPhone: vet == nil || irregular.chance(30) ? nil : "+1 \(irregular.below(1_000_000))"))
        }
        try context.save()
        for owner in owners where irregular.chance(5) { try context.delete(owner) }
        for toy in toys where irregular.chance(5) { try context.delete(toy) }
        for pet in try context.fetch(FetchDescriptor<KennelV1.Pet>()) where irregular.chance(5) { try context.delete(pet.id) }
        try context.save()
        var data = KennelData()
        data.owners = try context.fetch(FetchDescriptor<KennelV1.Owner>()).map { ($0.id.rawValue, $0.record) }
        data.pets = try context.fetch(FetchDescriptor<KennelV1.Pet>()).map { ($0.id.rawValue, $0.record) }
        data.toys = try context.fetch(FetchDescriptor<KennelV1.Toy>()).map { ($0.id.rawValue, $0.record) }
        #expect(try store.verify().isValid)
        try store.close()
        return data
    }

    @Test func aToOneBecomingToManyAndValuesMovedIntoANewEntityKeepEveryLink() throws {
        let seed = SeededRandom.seed(default: 0xAD_30)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try Self.createKennel(at: folder, seed: seed)
        try KennelVetPlan.validate()
        let store = try Store(at: folder, schema: KennelV2.self, migrationPlan: KennelVetPlan.self)
        defer { try? store.close() }
        let context = Context(store)
        // Owners and toys are unchanged (inverses of unchanged links).
        expectExactly(try context.fetch(FetchDescriptor<KennelV2.Owner>()),
                      old.owners.map { ($0.0, KennelV2.Owner(name: $0.1.name, pets: sameIDs($0.1.pets))) }, "Owner")
        expectExactly(try context.fetch(FetchDescriptor<KennelV2.Toy>()),
                      old.toys.map { ($0.0, KennelV2.Toy(label: $0.1.label, pets: sameIDs($0.1.pets))) }, "Toy")
        // Vets: one per name, the phone of the last pet (in id order) that named it (insert updates), every pet linked.
        let vets = try context.fetch(FetchDescriptor<KennelV2.Vet>())
        var phone: [String: String?] = [:]
        var order: [String] = []
        var pets: [String: [UInt64]] = [:]
        for (id, pet) in old.pets {
            guard let name = pet.vetName else { continue }
            if phone[name] == nil { order.append(name) }
            phone[name] = .some(pet.vetPhone)
            pets[name, default: []].append(id)
        }
        #expect(vets.map(\.record.name) == order)
        for vet in vets {
            let wanted = phone[vet.record.name] ?? nil
            #expect(vet.record.phone == wanted, "Vet \(vet.record.name): phone \(String(describing: vet.record.phone)), the last pet's was \(String(describing: wanted))")
            #expect(vet.record.pets.map(\.rawValue).sorted() == pets[vet.record.name] ?? [])
        }
        let vetIDs = Dictionary(vets.map { ($0.record.name, $0.id) }, uniquingKeysWith: { a, _ in a })
        expectExactly(try context.fetch(FetchDescriptor<KennelV2.Pet>()), old.pets.map { id, pet in
            (id, KennelV2.Pet(name: pet.name, owners: pet.owner.map { [sameID($0)] } ?? [], toys: sameIDs(pet.toys), vet: pet.vetName.flatMap { vetIDs[$0] }))
        }, "Pet")
        #expect(try store.verify().isValid)
    }

    @Test func aToManyBecomingToOneIsRefusedWithTheFixOrKeepsConsistentLinks() throws {
        let seed = SeededRandom.seed(default: 0xAD_31)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try Self.createKennel(at: folder, seed: seed)
        // No stage: refused by validate, naming a transform.
        do {
            try KennelToOneNoStagePlan.validate()
            Issue.record("to-many → to-one with no stage validated")
        } catch {
            print("TO-ONE NO STAGE: \(error)")
            #expect("\(error)".contains("Pet") && "\(error)".contains("toy"), "\(error)")
        }
        let before = try folderContents(folder)
        // The pet-only transform: the toys' lists would keep stale links.
        var failures: [String] = []
        for (name, open) in [("pet only", { try Store(at: folder, schema: KennelV2ToOne.self, migrationPlan: KennelToOnePetOnlyPlan.self) }),
                             ("both, toys as they were", { try Store(at: folder, schema: KennelV2ToOne.self, migrationPlan: KennelToOneBothPlan.self) }),
                             ("both, toys emptied", { try Store(at: folder, schema: KennelV2ToOne.self, migrationPlan: KennelToOneRecomputedPlan.self) })]
            as [(String, () throws -> Store)] {
            let store: Store
            do {
                store = try open()
            } catch {
                print("TO-ONE \(name): refused: \(error)")
                #expect("\(error)".contains("Toy"), "\(name): the refusal does not name the entity whose records hold the extra links: \(error)")
                failures.append(name)
                #expect(try folderContents(folder) == before, "\(name): refused but the files changed")
                continue
            }
            let context = Context(store)
            let pets = try context.fetch(FetchDescriptor<KennelV2ToOne.Pet>())
            let toys = try context.fetch(FetchDescriptor<KennelV2ToOne.Toy>())
            print("TO-ONE \(name): opened")
            // Whatever the plan: every pet keeps its first toy, and the toys list exactly the pets pointing at them.
            expectExactly(pets, old.pets.map { ($0.0, KennelV2ToOne.Pet(name: $0.1.name, owner: $0.1.owner.map(sameID), toy: $0.1.toys.first.map(sameID),
                                                                       vetName: $0.1.vetName, vetPhone: $0.1.vetPhone)) }, "Pet (\(name))")
            var pointing: [UInt64: [UInt64]] = [:]
            for (id, pet) in old.pets { if let toy = pet.toys.first { pointing[toy.rawValue, default: []].append(id) } }
            expectExactly(toys.map { Identified(id: $0.id, record: KennelV2ToOne.Toy(label: $0.record.label, pets: $0.record.pets.sorted())) },
                          old.toys.map { ($0.0, KennelV2ToOne.Toy(label: $0.1.label, pets: (pointing[$0.0] ?? []).map { RecordID(rawValue: $0) })) },
                          "Toy (\(name))")
            let report = try store.verify()
            #expect(report.isValid, "\(name): \(report)")
            try store.close()
            break
        }
        #expect(failures.count < 3, "no plan for to-many → to-one ran")
    }
}

// MARK: Inheritance: renames and retypes across a hierarchy

enum ZooV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Animal.self, Dog.self, Cat.self, Keeper.self] }
    struct Animal: PersistentRecord {
        static var entityName: String { "Animal" }
        static var relationshipRules: [String: RelationshipRule] { ["keeper": RelationshipRule(inverse: "animals")] }
        var name: String
        var age: Int
        var keeper: RecordID<Keeper>?
    }
    struct Dog: PersistentRecord {
        static var entityName: String { "Dog" }
        static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
        var name: String
        var age: Int
        var keeper: RecordID<Keeper>?
        var breed: String
    }
    struct Cat: PersistentRecord {
        static var entityName: String { "Cat" }
        static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
        var name: String
        var age: Int
        var keeper: RecordID<Keeper>?
        var lives: Int?
    }
    struct Keeper: PersistentRecord {
        static var entityName: String { "Keeper" }
        static var relationshipRules: [String: RelationshipRule] { ["animals": RelationshipRule(inverse: "keeper")] }
        var name: String
        var animals: [RecordID<Animal>]
    }
}

/// Lightweight: Animal.name renamed title (originalName declared on Animal, as the doc says
/// inherited renames are the parent's), weight added with a default on Animal, Dog.breed
/// renamed breedName on Dog.
enum ZooV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Animal.self, Dog.self, Cat.self, Keeper.self] }
    struct Animal: PersistentRecord {
        static var entityName: String { "Animal" }
        static var relationshipRules: [String: RelationshipRule] { ["keeper": RelationshipRule(inverse: "animals")] }
        static var originalAttributeNames: [String: String] { ["title": "name"] }
        static var attributeDefaults: [String: Value] { ["weight": 1.5] }
        var title: String
        var age: Int
        var keeper: RecordID<Keeper>?
        var weight: Double
    }
    struct Dog: PersistentRecord {
        static var entityName: String { "Dog" }
        static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
        static var originalAttributeNames: [String: String] { ["breedName": "breed"] }
        var title: String
        var age: Int
        var keeper: RecordID<Keeper>?
        var weight: Double
        var breedName: String
    }
    struct Cat: PersistentRecord {
        static var entityName: String { "Cat" }
        static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
        var title: String
        var age: Int
        var keeper: RecordID<Keeper>?
        var weight: Double
        var lives: Int?
    }
    struct Keeper: PersistentRecord {
        static var entityName: String { "Keeper" }
        static var relationshipRules: [String: RelationshipRule] { ["animals": RelationshipRule(inverse: "keeper")] }
        var name: String
        var animals: [RecordID<Animal>]
    }
}

/// A transform: age Int → String across the hierarchy.
enum ZooV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Animal.self, Dog.self, Cat.self, Keeper.self] }
    struct Animal: PersistentRecord {
        static var entityName: String { "Animal" }
        static var relationshipRules: [String: RelationshipRule] { ["keeper": RelationshipRule(inverse: "animals")] }
        static var attributeDefaults: [String: Value] { ["weight": 1.5] }
        var title: String
        var age: String
        var keeper: RecordID<Keeper>?
        var weight: Double
    }
    struct Dog: PersistentRecord {
        static var entityName: String { "Dog" }
        static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
        var title: String
        var age: String
        var keeper: RecordID<Keeper>?
        var weight: Double
        var breedName: String
    }
    struct Cat: PersistentRecord {
        static var entityName: String { "Cat" }
        static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
        var title: String
        var age: String
        var keeper: RecordID<Keeper>?
        var weight: Double
        var lives: Int?
    }
    struct Keeper: PersistentRecord {
        static var entityName: String { "Keeper" }
        static var relationshipRules: [String: RelationshipRule] { ["animals": RelationshipRule(inverse: "keeper")] }
        var name: String
        var animals: [RecordID<Animal>]
    }
}

/// The user's first try: one transform of the parent, expecting it to cover the sub-entities.
enum ZooParentOnlyPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ZooV1.self, ZooV2.self, ZooV3.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: ZooV2.self, toVersion: ZooV3.self, transforms: [
            .map(ZooV2.Animal.self, to: ZooV3.Animal.self) { old in
                ZooV3.Animal(title: old.title, age: String(old.age), keeper: old.keeper.map(sameID), weight: old.weight)
            },
        ])]
    }
}

enum ZooPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ZooV1.self, ZooV2.self, ZooV3.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: ZooV2.self, toVersion: ZooV3.self, transforms: [
            .map(ZooV2.Animal.self, to: ZooV3.Animal.self) { old in
                ZooV3.Animal(title: old.title, age: String(old.age), keeper: old.keeper.map(sameID), weight: old.weight)
            },
            .map(ZooV2.Dog.self, to: ZooV3.Dog.self) { old in
                ZooV3.Dog(title: old.title, age: String(old.age), keeper: old.keeper.map(sameID), weight: old.weight, breedName: old.breedName)
            },
            .mapConcurrently(ZooV2.Cat.self, to: ZooV3.Cat.self) { old in
                ZooV3.Cat(title: old.title, age: String(old.age), keeper: old.keeper.map(sameID), weight: old.weight, lives: old.lives)
            },
        ], batchSize: 211)]
    }
}

enum ZooPlanTo2: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ZooV1.self, ZooV2.self] }
    static var stages: [MigrationStage] { [] }
}

/// What a zoo holds, by id, whatever the entity.
struct ZooRow: Equatable {
    var entity: String
    var name: String
    var age: Int
    var keeper: UInt64?
    var breed: String?
    var lives: Int??
}

extension MigrationAdversaryTests {
    static func createZoo(at folder: String, seed: UInt64) throws -> (rows: [UInt64: ZooRow], keepers: [(UInt64, String)]) {
        var irregular = Irregular(seed: seed)
        let store = try Store(at: folder, schema: ZooV1.self)
        let context = Context(store)
        let keepers = try (0..<40).map { _ in let name = irregular.string(); return (try context.insert(ZooV1.Keeper(name: name, animals: [])), name) }
        var rows: [UInt64: ZooRow] = [:]
        for _ in 0..<2_000 {
            let name = irregular.string(), age = irregular.int()
            let keeper = irregular.chance(25) ? nil : keepers[irregular.below(keepers.count)].0
            switch irregular.below(3) {
            case 0:
                rows[try context.insert(ZooV1.Animal(name: name, age: age, keeper: keeper)).rawValue] =
                    ZooRow(entity: "Animal", name: name, age: age, keeper: keeper?.rawValue)
            case 1:
                let breed = irregular.string()
                rows[try context.insert(ZooV1.Dog(name: name, age: age, keeper: keeper, breed: breed)).rawValue] =
                    ZooRow(entity: "Dog", name: name, age: age, keeper: keeper?.rawValue, breed: breed)
            default:
                let lives = irregular.chance(50) ? nil : irregular.int()
                rows[try context.insert(ZooV1.Cat(name: name, age: age, keeper: keeper, lives: lives)).rawValue] =
                    ZooRow(entity: "Cat", name: name, age: age, keeper: keeper?.rawValue, lives: .some(lives))
            }
        }
        try context.save()
        for id in rows.keys.sorted() where irregular.chance(8) {
            try context.delete(RecordID<ZooV1.Animal>(rawValue: id))
            rows[id] = nil
        }
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<ZooV1.Animal>()) == rows.count)
        try store.close()
        return (rows, keepers.map { ($0.0.rawValue, $0.1) })
    }

    static func checkZoo<Animal: PersistentRecord, Dog: PersistentRecord, Cat: PersistentRecord, Keeper: PersistentRecord>(
        _ store: Store, _ rows: [UInt64: ZooRow], _ keepers: [(UInt64, String)], _: Animal.Type, _: Dog.Type, _: Cat.Type, _: Keeper.Type,
        row: (Any) -> ZooRow, keeperAnimals: (Keeper) -> [UInt64], what: String
    ) throws {
        let context = Context(store)
        let all = try context.fetch(FetchDescriptor<Animal>())
        #expect(all.map(\.id.rawValue) == rows.keys.sorted(), "\(what): every animal once, ids kept")
        let dogs = try context.fetch(FetchDescriptor<Dog>()), cats = try context.fetch(FetchDescriptor<Cat>())
        #expect(dogs.map(\.id.rawValue) == rows.filter { $0.value.entity == "Dog" }.keys.sorted(), "\(what): dogs")
        #expect(cats.map(\.id.rawValue) == rows.filter { $0.value.entity == "Cat" }.keys.sorted(), "\(what): cats")
        var problems: [String] = []
        for match in dogs { adversaryDiff(row(match.record), rows[match.id.rawValue]!, path: "Dog#\(match.id.rawValue)", into: &problems) }
        for match in cats { adversaryDiff(row(match.record), rows[match.id.rawValue]!, path: "Cat#\(match.id.rawValue)", into: &problems) }
        let plain = Set(rows.filter { $0.value.entity == "Animal" }.keys)
        for match in all where plain.contains(match.id.rawValue) {
            adversaryDiff(row(match.record), rows[match.id.rawValue]!, path: "Animal#\(match.id.rawValue)", into: &problems)
        }
        #expect(problems.isEmpty, "\(what): \(problems.count) differences: \(problems.prefix(6))")
        let fetchedKeepers = try context.fetch(FetchDescriptor<Keeper>())
        #expect(fetchedKeepers.map(\.id.rawValue) == keepers.map(\.0))
        for keeper in fetchedKeepers {
            #expect(keeperAnimals(keeper.record).sorted() == rows.filter { $0.value.keeper == keeper.id.rawValue }.keys.sorted(),
                    "\(what): Keeper#\(keeper.id.rawValue).animals")
        }
        let report = try store.verify()
        #expect(report.isValid, "\(what): \(report)")
    }

    @Test func renamesAndAddedDefaultsAcrossAHierarchyKeepEveryValue() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let (rows, keepers) = try Self.createZoo(at: folder, seed: SeededRandom.seed(default: 0xAD_40))
        try ZooPlanTo2.validate()
        let store = try Store(at: folder, schema: ZooV2.self, migrationPlan: ZooPlanTo2.self)
        defer { try? store.close() }
        try Self.checkZoo(store, rows, keepers, ZooV2.Animal.self, ZooV2.Dog.self, ZooV2.Cat.self, ZooV2.Keeper.self, row: { any in
            switch any {
            case let dog as ZooV2.Dog: ZooRow(entity: "Dog", name: dog.title, age: dog.age, keeper: dog.keeper?.rawValue, breed: dog.breedName)
            case let cat as ZooV2.Cat: ZooRow(entity: "Cat", name: cat.title, age: cat.age, keeper: cat.keeper?.rawValue, lives: .some(cat.lives))
            case let animal as ZooV2.Animal: ZooRow(entity: "Animal", name: animal.title, age: animal.age, keeper: animal.keeper?.rawValue)
            default: ZooRow(entity: "?", name: "", age: 0)
            }
        }, keeperAnimals: { $0.animals.map(\.rawValue) }, what: "V2")
        let weights = try Context(store).fetch(FetchDescriptor<ZooV2.Animal>()).map(\.record.weight)
        #expect(weights.allSatisfy { $0 == 1.5 })
    }

    @Test func aTransformOfTheParentAloneIsRefusedBeforeTouchingTheStore() throws {
        var validated = false
        do {
            try ZooParentOnlyPlan.validate()
            validated = true
            Issue.record("a plan retyping an inherited attribute with a transform of the parent only validated")
        } catch {
            print("ZOO PARENT ONLY: \(error)")
            #expect("\(error)".contains("Dog") && "\(error)".contains("Cat"), "\(error)")
        }
        guard validated else { return }
        // It validated: what does opening a store do with it?
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let (rows, keepers) = try Self.createZoo(at: folder, seed: SeededRandom.seed(default: 0xAD_42))
        let before = try folderContents(folder)
        let store: Store
        do {
            store = try Store(at: folder, schema: ZooV3.self, migrationPlan: ZooParentOnlyPlan.self)
        } catch {
            print("ZOO PARENT ONLY open: \(error)")
            Issue.record("validate() accepted the plan; opening then failed: \(error)")
            #expect(try folderContents(folder) == before)
            return
        }
        defer { try? store.close() }
        print("ZOO PARENT ONLY: opened")
        let probe = Context(store)
        for (name, fetch) in [("Animal", { try probe.fetch(FetchDescriptor<ZooV3.Animal>()).count }), ("Dog", { try probe.fetch(FetchDescriptor<ZooV3.Dog>()).count }),
                              ("Cat", { try probe.fetch(FetchDescriptor<ZooV3.Cat>()).count })] as [(String, () throws -> Int)] {
            do { print("ZOO PARENT ONLY fetch \(name): \(try fetch()) records") } catch { print("ZOO PARENT ONLY fetch \(name): \(error)") }
        }
        let firstDog = rows.filter { $0.value.entity == "Dog" }.keys.min()!
        do { print("ZOO PARENT ONLY Dog#\(firstDog): \(String(describing: try probe.record(for: RecordID<ZooV3.Dog>(rawValue: firstDog))))") } catch {
            print("ZOO PARENT ONLY Dog#\(firstDog): \(error)")
        }
        print("ZOO PARENT ONLY storedSchema: \(try Store.storedSchema(at: folder))")
        do {
            try Self.checkZoo(store, rows, keepers, ZooV3.Animal.self, ZooV3.Dog.self, ZooV3.Cat.self, ZooV3.Keeper.self, row: { any in
                switch any {
                case let dog as ZooV3.Dog: ZooRow(entity: "Dog", name: dog.title, age: Int(dog.age) ?? -1, keeper: dog.keeper?.rawValue, breed: dog.breedName)
                case let cat as ZooV3.Cat: ZooRow(entity: "Cat", name: cat.title, age: Int(cat.age) ?? -1, keeper: cat.keeper?.rawValue, lives: .some(cat.lives))
                case let animal as ZooV3.Animal: ZooRow(entity: "Animal", name: animal.title, age: Int(animal.age) ?? -1, keeper: animal.keeper?.rawValue)
                default: ZooRow(entity: "?", name: "", age: 0)
                }
            }, keeperAnimals: { $0.animals.map(\.rawValue) }, what: "V3 (parent-only transform)")
        } catch {
            Issue.record("the parent-only plan opened the store; reading it then failed: \(error)")
        }
    }

    @Test func aRetypeAcrossAHierarchyWithATransformPerEntityKeepsEveryValueAndID() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let (rows, keepers) = try Self.createZoo(at: folder, seed: SeededRandom.seed(default: 0xAD_41))
        try ZooPlan.validate()
        let store = try Store(at: folder, schema: ZooV3.self, migrationPlan: ZooPlan.self)
        defer { try? store.close() }
        try Self.checkZoo(store, rows, keepers, ZooV3.Animal.self, ZooV3.Dog.self, ZooV3.Cat.self, ZooV3.Keeper.self, row: { any in
            switch any {
            case let dog as ZooV3.Dog: ZooRow(entity: "Dog", name: dog.title, age: Int(dog.age)!, keeper: dog.keeper?.rawValue, breed: dog.breedName)
            case let cat as ZooV3.Cat: ZooRow(entity: "Cat", name: cat.title, age: Int(cat.age)!, keeper: cat.keeper?.rawValue, lives: .some(cat.lives))
            case let animal as ZooV3.Animal: ZooRow(entity: "Animal", name: animal.title, age: Int(animal.age)!, keeper: animal.keeper?.rawValue)
            default: ZooRow(entity: "?", name: "", age: 0)
            }
        }, keeperAnimals: { $0.animals.map(\.rawValue) }, what: "V3")
        // A new record after the migration takes an id no record of the hierarchy holds.
        let context = Context(store)
        let id = try context.insert(ZooV3.Cat(title: "new", age: "1", keeper: nil, weight: 2, lives: 9))
        try context.save()
        #expect(!rows.keys.contains(id.rawValue) && id.rawValue > rows.keys.max()!)
    }
}

// MARK: Optional → required, renames without originalName, merging two entities

enum NoteV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Note.self] }
    struct Note: PersistentRecord {
        static var entityName: String { "Note" }
        var body: String
        var subtitle: String?
        var rank: Int?
    }
}

/// subtitle becomes required, no default declared: the article fills the nils in willMigrate.
enum NoteV2Required: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Note.self] }
    struct Note: PersistentRecord {
        static var entityName: String { "Note" }
        var body: String
        var subtitle: String
        var rank: Int?
    }
}

enum NoteFillInWillMigratePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NoteV1.self, NoteV2Required.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: NoteV1.self, toVersion: NoteV2Required.self, willMigrate: { context in
            for match in try context.fetch(FetchDescriptor<NoteV1.Note>()) where match.record.subtitle == nil {
                var note = match.record
                note.subtitle = "untitled"
                try context.update(match.id, to: note)
            }
            try context.save()
        }, didMigrate: nil)]
    }
}

/// `rank` renamed `priority` with no originalName (optional: validate passes).
enum NoteV2Renamed: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Note.self] }
    struct Note: PersistentRecord {
        static var entityName: String { "Note" }
        var body: String
        var subtitle: String?
        var priority: Int?
    }
}

enum NoteRenamePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NoteV1.self, NoteV2Renamed.self] }
    static var stages: [MigrationStage] { [] }
}

enum PetsV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Cat.self, Dog.self] }
    struct Cat: PersistentRecord {
        static var entityName: String { "Cat" }
        var name: String
        var lives: Int
    }
    struct Dog: PersistentRecord {
        static var entityName: String { "Dog" }
        var name: String
        var breed: String?
    }
}

/// Cat and Dog merged into one entity Pet with a kind.
enum PetsV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Pet.self] }
    struct Pet: PersistentRecord {
        static var entityName: String { "Pet" }
        var name: String
        var kind: String
        var lives: Int?
        var breed: String?
    }
}

/// What the user writes first: one transform per old entity, both into Pet.
enum PetsMergePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PetsV1.self, PetsV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PetsV1.self, toVersion: PetsV2.self, transforms: [
            .map(PetsV1.Cat.self, to: PetsV2.Pet.self) { PetsV2.Pet(name: $0.name, kind: "cat", lives: $0.lives, breed: nil) },
            .map(PetsV1.Dog.self, to: PetsV2.Pet.self) { PetsV2.Pet(name: $0.name, kind: "dog", lives: nil, breed: $0.breed) },
        ])]
    }
}

/// The other way: cats mapped, dogs inserted through the writer from the cats' transform is
/// impossible (a transform sees one entity), so: Cat → Pet, and a transform of Dog that inserts
/// its Pet through the writer and drops the dog.
enum PetsWriterMergePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PetsV1.self, PetsV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PetsV1.self, toVersion: PetsV2.self, transforms: [
            .map(PetsV1.Cat.self, to: PetsV2.Pet.self) { PetsV2.Pet(name: $0.name, kind: "cat", lives: $0.lives, breed: nil) },
            .map(PetsV1.Dog.self, to: PetsV2.Pet.self) { old, writer in
                try writer.insert(PetsV2.Pet(name: old.name, kind: "dog", lives: nil, breed: old.breed))
                return nil
            },
        ])]
    }
}

extension MigrationAdversaryTests {
    @Test func optionalBecomingRequiredFilledInWillMigrateKeepsEveryValueOrIsRefusedWithTheFix() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var irregular = Irregular(seed: 0xAD_50)
        let store = try Store(at: folder, schema: NoteV1.self)
        let notes = (0..<1_200).map { _ in NoteV1.Note(body: irregular.string(), subtitle: irregular.chance(40) ? nil : irregular.string(), rank: irregular.chance(50) ? nil : irregular.int()) }
        let ids = try store.write { transaction in try notes.map { try transaction.insert($0).rawValue } }
        try store.close()
        let before = try folderContents(folder)
        do {
            try NoteFillInWillMigratePlan.validate()
        } catch {
            print("OPTIONAL→REQUIRED validate: \(error)")
            let message = "\(error)"
            #expect(message.contains("subtitle") && message.contains("attributeDefaults"), "\(message)")
            return
        }
        let migrated: Store
        do {
            migrated = try Store(at: folder, schema: NoteV2Required.self, migrationPlan: NoteFillInWillMigratePlan.self)
        } catch {
            Issue.record("validate() accepted the willMigrate fill; opening failed: \(error)")
            #expect(try folderContents(folder) == before)
            return
        }
        defer { try? migrated.close() }
        expectExactly(try Context(migrated).fetch(FetchDescriptor<NoteV2Required.Note>()),
                      zip(ids, notes).map { ($0, NoteV2Required.Note(body: $1.body, subtitle: $1.subtitle ?? "untitled", rank: $1.rank)) }, "Note")
    }

    @Test func anOptionalRenamedWithoutOriginalNameIsNotDroppedSilently() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var irregular = Irregular(seed: 0xAD_51)
        let store = try Store(at: folder, schema: NoteV1.self)
        let notes = (0..<500).map { _ in NoteV1.Note(body: irregular.string(), subtitle: nil, rank: irregular.chance(30) ? nil : irregular.int()) }
        try store.write { transaction in for note in notes { try transaction.insert(note) } }
        try store.close()
        let warnings = try NoteRenamePlan.lint()
        print("RENAME lint: \(warnings)")
        #expect(warnings.contains { "\($0)".contains("rank") && "\($0)".contains("priority") })
        do {
            try NoteRenamePlan.validate()
            let migrated = try Store(at: folder, schema: NoteV2Renamed.self, migrationPlan: NoteRenamePlan.self)
            let ranks = try Context(migrated).fetch(FetchDescriptor<NoteV2Renamed.Note>()).map(\.record.priority)
            try migrated.close()
            let lost = zip(ranks, notes).filter { $0 != $1.rank }.count
            withKnownIssue(Comment(rawValue: "Known issue (documented): an optional attribute renamed without originalName is a removal "
                           + "and an addition to validate(); only lint() warns (probableRename)")) {
            #expect(lost == 0, "validate() passed and the open dropped \(lost) of \(notes.filter { $0.rank != nil }.count) stored rank values; only lint() warned")
            }
        } catch {
            print("RENAME refused: \(error)")
        }
    }

    @Test func mergingTwoEntitiesIntoOneKeepsEveryRecordOrIsRefusedWithTheFix() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var irregular = Irregular(seed: 0xAD_52)
        let store = try Store(at: folder, schema: PetsV1.self)
        let cats = (0..<700).map { _ in PetsV1.Cat(name: irregular.string(), lives: irregular.int()) }
        let dogs = (0..<900).map { _ in PetsV1.Dog(name: irregular.string(), breed: irregular.chance(30) ? nil : irregular.string()) }
        try store.write { transaction in
            for cat in cats { try transaction.insert(cat) }
            for dog in dogs { try transaction.insert(dog) }
        }
        try store.close()
        let before = try folderContents(folder)
        for (name, plan) in [("two maps", PetsMergePlan.self), ("map + writer", PetsWriterMergePlan.self)] as [(String, any SchemaMigrationPlan.Type)] {
            do {
                try plan.validate()
            } catch {
                print("MERGE \(name) validate: \(error)")
                // Refused: with the way that works (`mergingTwoEntitiesThroughAnIntermediateVersionKeepsEveryRecord`).
                #expect("\(error)".contains("intermediate version") && "\(error)".contains("didMigrate"), "\(name): \(error)")
                continue
            }
            let merged: Store
            do {
                merged = try Store(at: folder, schema: PetsV2.self, migrationPlan: plan)
            } catch {
                print("MERGE \(name) open: \(error)")
                Issue.record("\(name): validate() passed, open failed: \(error)")
                #expect(try folderContents(folder) == before)
                continue
            }
            print("MERGE \(name): opened")
            let pets = try Context(merged).fetch(FetchDescriptor<PetsV2.Pet>())
            try merged.close()
            #expect(Set(pets.map(\.id)).count == pets.count, "\(name): an id twice")
            let found = pets.map { "\($0.record.kind)|\($0.record.name)|\(String(describing: $0.record.lives))|\(String(describing: $0.record.breed))" }.sorted()
            let wanted = (cats.map { "cat|\($0.name)|\(String(describing: Optional($0.lives)))|nil" }
                + dogs.map { "dog|\($0.name)|nil|\(String(describing: $0.breed))" }).sorted()
            #expect(found == wanted, "\(name): \(pets.count) pets for \(cats.count) cats and \(dogs.count) dogs")
            return
        }
    }
}

/// The merge through an intermediate version holding the three entities: a didMigrate inserts
/// the pets, the next (lightweight) step removes Cat and Dog.
enum PetsV1Both: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 5, 0)
    static var models: [any PersistentRecord.Type] { [PetsV1.Cat.self, PetsV1.Dog.self, PetsV2.Pet.self] }
}

enum PetsIntermediatePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PetsV1.self, PetsV1Both.self, PetsV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PetsV1.self, toVersion: PetsV1Both.self, willMigrate: nil, didMigrate: { context in
            for cat in try context.fetch(FetchDescriptor<PetsV1.Cat>()) {
                try context.insert(PetsV2.Pet(name: cat.record.name, kind: "cat", lives: cat.record.lives, breed: nil))
            }
            for dog in try context.fetch(FetchDescriptor<PetsV1.Dog>()) {
                try context.insert(PetsV2.Pet(name: dog.record.name, kind: "dog", lives: nil, breed: dog.record.breed))
            }
            try context.save()
        })]
    }
}

struct ChainFault: Error {}

/// The rich chain whose last stage throws after rewriting everything.
enum RichFailingPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { RichPlanTo4.schemas }
    static var stages: [MigrationStage] {
        Array(RichPlanTo4.stages.prefix(2)) + [
            .custom(fromVersion: RichV3.self, toVersion: RichV4.self, willMigrate: nil, didMigrate: { context in
                try richDidMigrate(context)
                throw ChainFault()
            }),
        ]
    }
}

extension MigrationAdversaryTests {
    @Test func mergingTwoEntitiesThroughAnIntermediateVersionKeepsEveryRecord() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var irregular = Irregular(seed: 0xAD_53)
        let store = try Store(at: folder, schema: PetsV1.self)
        let cats = (0..<700).map { _ in PetsV1.Cat(name: irregular.string(), lives: irregular.int()) }
        let dogs = (0..<900).map { _ in PetsV1.Dog(name: irregular.string(), breed: irregular.chance(30) ? nil : irregular.string()) }
        try store.write { transaction in
            for cat in cats { try transaction.insert(cat) }
            for dog in dogs { try transaction.insert(dog) }
        }
        try store.close()
        try PetsIntermediatePlan.validate()
        print("MERGE intermediate lint: \(try PetsIntermediatePlan.lint())")
        let merged = try Store(at: folder, schema: PetsV2.self, migrationPlan: PetsIntermediatePlan.self)
        let pets = try Context(merged).fetch(FetchDescriptor<PetsV2.Pet>())
        try merged.close()
        let expected = cats.map { PetsV2.Pet(name: $0.name, kind: "cat", lives: $0.lives, breed: nil) }
            + dogs.map { PetsV2.Pet(name: $0.name, kind: "dog", lives: nil, breed: $0.breed) }
        expectExactly(pets, expected.enumerated().map { (UInt64($0.offset + 1), $0.element) }, "Pet")
    }

    @Test func aChainFailingInItsLastStageLeavesTheFilesAndTheOldAppsRecordsAsTheyWere() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try createRichStore(at: folder, count: 1_500, seed: SeededRandom.seed(default: 0xAD_60))
        let before = try folderContents(folder)
        do {
            _ = try Store(at: folder, schema: RichV4.self, migrationPlan: RichFailingPlan.self)
            Issue.record("the failing chain opened")
        } catch {
            #expect("\(error)".contains("didMigrate"), "\(error)")
        }
        #expect(try folderContents(folder) == before)
        let v1 = try Store(at: folder, schema: RichV1.self)
        expectExactly(try Context(v1).fetch(FetchDescriptor<RichV1.Item>()), old, "V1 Item after the failed chain")
        try v1.close()
        // And the good plan still migrates it completely afterwards.
        let v4 = try Store(at: folder, schema: RichV4.self, migrationPlan: RichPlanTo4.self)
        expectExactly(try Context(v4).fetch(FetchDescriptor<RichV4.Item>()), Self.expectedV4(old), "V4 Item after a failed try")
        try v4.close()
    }
}

// MARK: More hierarchy and relationship edge cases

/// Transforms of the sub-entities only; the parent's own records are not rewritten.
enum ZooSubOnlyPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ZooV1.self, ZooV2.self, ZooV3.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: ZooV2.self, toVersion: ZooV3.self, transforms: [
            .map(ZooV2.Dog.self, to: ZooV3.Dog.self) { old in
                ZooV3.Dog(title: old.title, age: String(old.age), keeper: old.keeper.map(sameID), weight: old.weight, breedName: old.breedName)
            },
            .map(ZooV2.Cat.self, to: ZooV3.Cat.self) { old in
                ZooV3.Cat(title: old.title, age: String(old.age), keeper: old.keeper.map(sameID), weight: old.weight, lives: old.lives)
            },
        ])]
    }
}

/// Pet loses vetPhone; the transform drops the pets without a vet (returns nil). Owners and
/// toys, not rewritten, list some of the dropped pets.
enum KennelV2Drop: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Owner.self, Pet.self, Toy.self] }
    struct Owner: PersistentRecord, Equatable {
        static var entityName: String { "Owner" }
        static var relationshipRules: [String: RelationshipRule] { ["pets": RelationshipRule(inverse: "owner")] }
        var name: String
        var pets: [RecordID<Pet>]
    }
    struct Pet: PersistentRecord, Equatable {
        static var entityName: String { "Pet" }
        static var relationshipRules: [String: RelationshipRule] {
            ["owner": RelationshipRule(inverse: "pets"), "toys": RelationshipRule(inverse: "pets")]
        }
        var name: String
        var owner: RecordID<Owner>?
        var toys: [RecordID<Toy>]
        var vetName: String?
    }
    struct Toy: PersistentRecord, Equatable {
        static var entityName: String { "Toy" }
        static var relationshipRules: [String: RelationshipRule] { ["pets": RelationshipRule(inverse: "toys")] }
        var label: String
        var pets: [RecordID<Pet>]
    }
}

enum KennelDropPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [KennelV1.self, KennelV2Drop.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: KennelV1.self, toVersion: KennelV2Drop.self, transforms: [
            .map(KennelV1.Pet.self, to: KennelV2Drop.Pet.self) { old in
                old.vetName == nil ? nil : KennelV2Drop.Pet(name: old.name, owner: old.owner.map(sameID), toys: sameIDs(old.toys), vetName: old.vetName)
            },
        ])]
    }
}

/// `KennelDropPlan` with the entities that link to pets rewritten as they are: the stage
/// removes the dropped pets from their lists, as a delete's nullify rule would.
enum KennelDropKeepingLinksPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [KennelV1.self, KennelV2Drop.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: KennelV1.self, toVersion: KennelV2Drop.self, transforms: [
            .map(KennelV1.Pet.self, to: KennelV2Drop.Pet.self) { old in
                old.vetName == nil ? nil : KennelV2Drop.Pet(name: old.name, owner: old.owner.map(sameID), toys: sameIDs(old.toys), vetName: old.vetName)
            },
            .map(KennelV1.Owner.self, to: KennelV2Drop.Owner.self) { KennelV2Drop.Owner(name: $0.name, pets: sameIDs($0.pets)) },
            .map(KennelV1.Toy.self, to: KennelV2Drop.Toy.self) { KennelV2Drop.Toy(label: $0.label, pets: sameIDs($0.pets)) },
        ])]
    }
}

extension MigrationAdversaryTests {
    @Test func aTransformOfTheSubEntitiesAloneIsRefusedOrKeepsTheParentsRecords() throws {
        var validated = false
        do {
            try ZooSubOnlyPlan.validate()
            validated = true
        } catch {
            print("ZOO SUB ONLY: \(error)")
            #expect("\(error)".contains("Animal"), "\(error)")
        }
        guard validated else { return }
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let (rows, _) = try Self.createZoo(at: folder, seed: SeededRandom.seed(default: 0xAD_43))
        do {
            let store = try Store(at: folder, schema: ZooV3.self, migrationPlan: ZooSubOnlyPlan.self)
            defer { try? store.close() }
            let context = Context(store)
            let plain = rows.filter { $0.value.entity == "Animal" }.keys.min()!
            do {
                _ = try context.record(for: RecordID<ZooV3.Animal>(rawValue: plain))
                _ = try context.fetch(FetchDescriptor<ZooV3.Animal>())
            } catch {
                Issue.record("validate() and the open accepted sub-entity-only transforms; reading Animal#\(plain) (a plain Animal) then failed: \(error)")
            }
        } catch {
            Issue.record("validate() accepted the plan, the open refused it: \(error)")
        }
    }

    @Test func aTransformDroppingRecordsUnlinksThemFromTheRecordsTheStageRewrites() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try Self.createKennel(at: folder, seed: SeededRandom.seed(default: 0xAD_33))
        try KennelDropKeepingLinksPlan.validate()
        let store = try Store(at: folder, schema: KennelV2Drop.self, migrationPlan: KennelDropKeepingLinksPlan.self)
        defer { try? store.close() }
        let context = Context(store)
        let kept = Set(old.pets.filter { $0.1.vetName != nil }.map(\.0))
        #expect(kept.count < old.pets.count && !kept.isEmpty)
        expectExactly(try context.fetch(FetchDescriptor<KennelV2Drop.Pet>()), old.pets.filter { kept.contains($0.0) }.map {
            ($0.0, KennelV2Drop.Pet(name: $0.1.name, owner: $0.1.owner.map(sameID), toys: sameIDs($0.1.toys), vetName: $0.1.vetName))
        }, "Pet")
        expectExactly(try context.fetch(FetchDescriptor<KennelV2Drop.Owner>()), old.owners.map {
            ($0.0, KennelV2Drop.Owner(name: $0.1.name, pets: $0.1.pets.filter { kept.contains($0.rawValue) }.map(sameID)))
        }, "Owner")
        expectExactly(try context.fetch(FetchDescriptor<KennelV2Drop.Toy>()), old.toys.map {
            ($0.0, KennelV2Drop.Toy(label: $0.1.label, pets: $0.1.pets.filter { kept.contains($0.rawValue) }.map(sameID)))
        }, "Toy")
        let report = try store.verify()
        #expect(report.isValid, "\(report)")
    }

    @Test func aTransformDroppingRecordsOthersReferToLeavesNoDanglingLinkOrIsRefused() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let old = try Self.createKennel(at: folder, seed: SeededRandom.seed(default: 0xAD_32))
        try KennelDropPlan.validate()
        let before = try folderContents(folder)
        let store: Store
        do {
            store = try Store(at: folder, schema: KennelV2Drop.self, migrationPlan: KennelDropPlan.self)
        } catch {
            print("DROP refused: \(error)")
            #expect(try folderContents(folder) == before)
            #expect("\(error)".contains("Owner") || "\(error)".contains("Toy"), "\(error)")
            return
        }
        defer { try? store.close() }
        print("DROP: opened")
        let context = Context(store)
        let kept = Set(old.pets.filter { $0.1.vetName != nil }.map(\.0))
        expectExactly(try context.fetch(FetchDescriptor<KennelV2Drop.Pet>()), old.pets.filter { kept.contains($0.0) }.map {
            ($0.0, KennelV2Drop.Pet(name: $0.1.name, owner: $0.1.owner.map(sameID), toys: sameIDs($0.1.toys), vetName: $0.1.vetName))
        }, "Pet")
        // Owners and toys list only the pets that still exist.
        expectExactly(try context.fetch(FetchDescriptor<KennelV2Drop.Owner>()), old.owners.map {
            ($0.0, KennelV2Drop.Owner(name: $0.1.name, pets: $0.1.pets.filter { kept.contains($0.rawValue) }.map(sameID)))
        }, "Owner")
        expectExactly(try context.fetch(FetchDescriptor<KennelV2Drop.Toy>()), old.toys.map {
            ($0.0, KennelV2Drop.Toy(label: $0.1.label, pets: $0.1.pets.filter { kept.contains($0.rawValue) }.map(sameID)))
        }, "Toy")
        let report = try store.verify()
        #expect(report.isValid, "\(report)")
        // Where an owner still lists a dropped pet: what the app meets.
        if let owner = try context.fetch(FetchDescriptor<KennelV2Drop.Owner>()).first(where: { $0.record.pets.contains { !kept.contains($0.rawValue) } }) {
            let dangling = owner.record.pets.first { !kept.contains($0.rawValue) }!
            print("DROP Owner#\(owner.id.rawValue).pets = \(owner.record.pets.map(\.rawValue)); Pet#\(dangling.rawValue) was dropped; record(for:) = \(String(describing: try context.record(for: dangling))); verify: \(report.isValid)")
            var renamed = owner.record
            renamed.name += " (edited)"
            do {
                try context.update(owner.id, to: renamed)
                try context.save()
                print("DROP editing the owner and saving: ok; pets now \(try Context(store).record(for: owner.id)?.pets.map(\.rawValue) ?? [])")
            } catch {
                print("DROP editing the owner and saving: \(error)")
                Issue.record("after the migration, saving an edit of Owner#\(owner.id.rawValue) (which lists dropped Pet#\(dangling.rawValue)) fails: \(error)")
            }
            // A new pet inserted now: does it take the dropped pet's id (and so become that owner's pet)?
            let fresh = try context.insert(KennelV2Drop.Pet(name: "new", owner: nil, toys: [], vetName: "x"))
            try context.save()
            let listing = try Context(store).fetch(FetchDescriptor<KennelV2Drop.Owner>()).filter { $0.record.pets.contains(sameID(fresh)) }
            print("DROP new Pet#\(fresh.rawValue); owners listing it: \(listing.map(\.id.rawValue))")
            #expect(listing.isEmpty, "a pet inserted after the migration (Pet#\(fresh.rawValue), no owner) is listed by Owner \(listing.map(\.id.rawValue))")
        }
    }
}
