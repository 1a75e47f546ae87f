#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
@_spi(Engine) import Strata
import StrataTestSupport

// An outside user's adversarial fetch tests: predicates written the SwiftData way, compared
// (records and order) with Swift's own evaluation of the same `Predicate` over every record.
// Written by a session acting as an outside user (Docs/Testing.md, "FetchAdversaryTests").
// What it found and is not fixed yet is a `withKnownIssue`, which fails the day it changes.

struct FZPoint: Codable, Hashable, Sendable {
    var x: Double
    var y: Double
}

struct FZOwner: PersistentRecord {
    var name: String
    var items: [RecordID<FZItem>] = []
    static let relationshipRules = ["items": RelationshipRule(inverse: "owner")]
}

struct FZItem: PersistentRecord {
    var name: String
    var nick: String?
    var code: String?
    var qty: Int
    var small: Int32
    var opt: Int?
    var weight: Double
    var score: Double?
    var born: Date
    var seen: Date?
    var flag: Bool
    var optFlag: Bool?
    var uid: UUID
    var blob: Data
    var tags: [String]
    var point: FZPoint
    var owner: RecordID<FZOwner>?
    static var attributeOptions: [String: Attribute.Options] {
        ["name": [.indexed], "code": [.unique], "qty": [.indexed], "weight": [.indexed], "born": [.indexed],
         "uid": [.indexed], "flag": [.indexed], "nick": [.indexed]]
    }
    static let relationshipRules = ["owner": RelationshipRule(inverse: "items")]
}

/// A sub-entity of FZItem (no indexes of its own declared).
struct FZSpecial: PersistentRecord {
    var name: String
    var nick: String?
    var code: String?
    var qty: Int
    var small: Int32
    var opt: Int?
    var weight: Double
    var score: Double?
    var born: Date
    var seen: Date?
    var flag: Bool
    var optFlag: Bool?
    var uid: UUID
    var blob: Data
    var tags: [String]
    var point: FZPoint
    var owner: RecordID<FZOwner>?
    var extra: String
    static var parentRecordType: (any PersistentRecord.Type)? { FZItem.self }
}

enum FZData {
    static let strings: [String] = {
        var s: [String] = [
            "", "a", "A", "abc", "ABC", "Abc", "\u{E9}", "e\u{301}", "\u{C9}", "E\u{301}", "Zo\u{EB}", "zoe\u{308}",
            "\u{FB00}", "stra\u{DF}e", "STRASSE", "\u{212A}elvin", "Kelvin", "kelvin", "a\r\nb", "a\r", "a\n",
            "a\u{0903}", "a\u{200D}", "\u{1F44D}\u{1F3FD}", "a\u{0}b", "a\u{0}", "\u{2126}", "\u{3A9}", "\u{1E9B}\u{323}",
            " a", "a ", "1", "10", "9", "b", "ab", "abd", "a\u{301}bc", "\u{E1}bc", "caf\u{E9}", "cafe\u{301}", "CAF\u{C9}",
            "\u{1100}\u{1161}", "\u{AC00}", "x\u{FE0F}", "\u{0958}",
        ]
        s.append(String(repeating: "a", count: 600))
        s.append(String(repeating: "a", count: 600) + "b")
        s.append(String(repeating: "a", count: 511))
        s.append(String(repeating: "a", count: 512) + "\u{E9}")
        s.append(String(repeating: "a", count: 512) + "e\u{301}")
        s.append(String(repeating: "x", count: 509) + "e\u{301}")
        s.append(String(repeating: "\u{0958}", count: 200))
        s.append(String(repeating: "\u{0915}\u{093C}", count: 200))
        s.append(String(repeating: "\u{0958}", count: 100) + "z")
        return s
    }()
    static let doubles: [Double] = [
        0, -0.0, 1, -1, .nan, -.nan, Double(bitPattern: 0x7FF0_0000_0000_0001), .infinity, -.infinity,
        .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
        0.1, 0.30000000000000004, 1e300, 2.5, 3, 100,
    ]
    static let ints: [Int] = [0, 1, -1, .min, .max, .min + 1, .max - 1, 42, 7, 3, 1 << 40, -(1 << 40)]
    static let dates: [Date] = [
        Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.0),
        Date(timeIntervalSinceReferenceDate: 1e9), Date(timeIntervalSinceReferenceDate: -1e9),
        Date(timeIntervalSinceReferenceDate: 0.5), Date(timeIntervalSinceReferenceDate: 0.000_001),
        .distantPast, .distantFuture, Date(timeIntervalSinceReferenceDate: 700_000_000.123_456),
    ]
    static let uuids: [UUID] = (0..<6).map { n in UUID(uuid: (UInt8(n), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8(n * 3))) }
}

extension SeededRandom {
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ array: [T]) -> T { array[below(array.count)] }
    mutating func fzString() -> String {
        switch below(10) {
        case 0..<6: return pick(FZData.strings)
        case 6..<8: return pick(FZData.strings) + pick(FZData.strings)
        default: return String((0..<below(8)).map { _ in pick(Array("abcXYZ\u{E9}\u{301} 0")) })
        }
    }
    mutating func fzDouble() -> Double { chance(60) ? pick(FZData.doubles) : Double(below(2_000)) / 8 - 100 }
    mutating func fzInt() -> Int { chance(30) ? pick(FZData.ints) : below(200) - 100 }
    mutating func fzDate() -> Date { chance(40) ? pick(FZData.dates) : Date(timeIntervalSinceReferenceDate: Double(below(1000)) * 86_400.5) }
}

/// Swift's own order for a sort key, independent of Strata's implementation.
struct FZSort {
    var label: String
    var strata: [RecordSort<FZItem>]
    var precedes: (FZItem, FZItem) -> Bool?  // nil: tie
}

func fzCompare<T: Comparable>(_ a: T, _ b: T) -> Bool? { a == b ? nil : a < b }
func fzCompare<T: Comparable>(_ a: T?, _ b: T?) -> Bool? {
    switch (a, b) {
    case (nil, nil): nil
    case (nil, _): true
    case (_, nil): false
    case (let x?, let y?): fzCompare(x, y)
    }
}

@Suite(.serialized) struct FetchAdversaryTests {
    static func makeItem(_ random: inout SeededRandom, owners: [RecordID<FZOwner>], n: Int) -> FZItem {
        FZItem(name: random.fzString(), nick: random.chance(40) ? nil : random.fzString(),
               code: random.chance(30) ? nil : "code-\(n)-\(random.below(3))",
               qty: random.fzInt(), small: Int32(random.below(100) - 50), opt: random.chance(50) ? nil : random.fzInt(),
               weight: random.fzDouble(), score: random.chance(40) ? nil : random.fzDouble(), born: random.fzDate(),
               seen: random.chance(50) ? nil : random.fzDate(), flag: random.chance(50),
               optFlag: random.chance(33) ? nil : random.chance(50), uid: random.pick(FZData.uuids),
               blob: random.chance(30) ? Data() : Data((0..<random.below(6)).map { _ in UInt8(random.below(3)) }),
               tags: (0..<random.below(4)).map { _ in random.fzString() },
               point: FZPoint(x: random.fzDouble(), y: Double(random.below(10))),
               owner: owners.isEmpty || random.chance(30) ? nil : random.pick(owners))
    }

    static func special(_ item: FZItem, extra: String) -> FZSpecial {
        FZSpecial(name: item.name, nick: item.nick, code: item.code, qty: item.qty, small: item.small, opt: item.opt,
                  weight: item.weight, score: item.score, born: item.born, seen: item.seen, flag: item.flag,
                  optFlag: item.optFlag, uid: item.uid, blob: item.blob, tags: item.tags, point: item.point,
                  owner: item.owner, extra: extra)
    }

    /// The predicates of one round, with constants drawn from the data.
    static func predicates(_ random: inout SeededRandom) -> [(String, Predicate<FZItem>)] {
        let a = random.fzInt(), b = random.fzInt()
        let d = random.fzDouble(), d2 = random.fzDouble()
        let s = random.fzString(), s2 = random.fzString()
        let p = random.pick(["a", "A", "ab", "e", "E", "\u{E9}", "k", "K", "x", "", "aaaa", "a\r", "1", "S", "zo", "\u{0915}"])
        let asciiLow = random.pick(["", "A", "a", "ab", "b", "k", "z", " "]), asciiHigh = random.pick(["b", "c", "z", "~", "a\u{7F}", "aab"])
        let date = random.fzDate(), date2 = random.fzDate()
        let u = random.pick(FZData.uuids)
        let data = random.chance(50) ? Data() : Data([UInt8(random.below(3))])
        let small = Int32(random.below(100) - 50)
        let ownerRaw = UInt64(1 + random.below(20))
        let ownerID = RecordID<FZOwner>(rawValue: ownerRaw)
        let flag = random.chance(50)
        let x: Double = d
        let negInf = -Double.infinity, posInf = Double.infinity
        let same = ComparisonResult.orderedSame
        return [
            ("qty == a [a=\(a)]", #Predicate { $0.qty == a }),
            ("qty != a [a=\(a)]", #Predicate { $0.qty != a }),
            ("qty < a [a=\(a)]", #Predicate { $0.qty < a }),
            ("a <= qty <= b [\(a), \(b)]", #Predicate { $0.qty >= a && $0.qty <= b }),
            ("qty > a || flag [a=\(a)]", #Predicate { $0.qty > a || $0.flag }),
            ("!(qty < a) [a=\(a)]", #Predicate { !($0.qty < a) }),
            ("3 < qty (constant left)", #Predicate { 3 < $0.qty }),
            ("weight < d [d=\(d)]", #Predicate { $0.weight < d }),
            ("weight >= d [d=\(d)]", #Predicate { $0.weight >= d }),
            ("weight == d [d=\(d)]", #Predicate { $0.weight == d }),
            ("weight != d [d=\(d)]", #Predicate { $0.weight != d }),
            ("!(weight > d) [d=\(d)]", #Predicate { !($0.weight > d) }),
            ("d < weight < d2 [\(d), \(d2)]", #Predicate { $0.weight > d && $0.weight < d2 }),
            ("-inf <= weight <= inf", #Predicate { $0.weight >= negInf && $0.weight <= posInf }),
            ("weight == 0", #Predicate { $0.weight == 0 }),
            ("weight == -0.0", #Predicate { $0.weight == -0.0 }),
            ("weight <= 0 && weight >= 0", #Predicate { $0.weight <= 0 && $0.weight >= 0 }),
            ("score == nil", #Predicate { $0.score == nil }),
            ("score != nil", #Predicate { $0.score != nil }),
            ("score ?? 0 > d [d=\(d)]", #Predicate { ($0.score ?? 0) > d }),
            ("score == d [d=\(d)]", #Predicate { $0.score == d }),
            ("score != d [d=\(d)]", #Predicate { $0.score != d }),
            ("score.flatMap > d [d=\(d)]", #Predicate { $0.score.flatMap { $0 > d } ?? false }),
            ("if let score [d=\(d)]", #Predicate { if let score = $0.score { score > d } else { false } }),
            ("name == s [s=\(s.debugDescription.prefix(40))]", #Predicate { $0.name == s }),
            ("name != s [s=\(s.debugDescription.prefix(40))]", #Predicate { $0.name != s }),
            ("name < s [s=\(s.debugDescription.prefix(40))]", #Predicate { $0.name < s }),
            ("name >= s [s=\(s.debugDescription.prefix(40))]", #Predicate { $0.name >= s }),
            ("s <= name < s2 [\(s.debugDescription.prefix(30)), \(s2.debugDescription.prefix(30))]", #Predicate { $0.name >= s && $0.name < s2 }),
            ("ascii range [\(asciiLow.debugDescription), \(asciiHigh.debugDescription)]", #Predicate { $0.name >= asciiLow && $0.name <= asciiHigh }),
            ("ascii open range [\(asciiLow.debugDescription), \(asciiHigh.debugDescription)]", #Predicate { $0.name > asciiLow && $0.name < asciiHigh }),
            ("name.starts(with: p) [p=\(p.debugDescription)]", #Predicate { $0.name.starts(with: p) }),
            ("!name.starts(with: p) [p=\(p.debugDescription)]", #Predicate { !$0.name.starts(with: p) }),
            ("name.contains(p) [p=\(p.debugDescription)]", #Predicate { $0.name.contains(p) }),
            ("name.isEmpty", #Predicate { $0.name.isEmpty }),
            ("name.count > 3", #Predicate { $0.name.count > 3 }),
            ("nick == nil", #Predicate { $0.nick == nil }),
            ("nick != nil", #Predicate { $0.nick != nil }),
            ("nick == s [s=\(s.debugDescription.prefix(40))]", #Predicate { $0.nick == s }),
            ("nick != s [s=\(s.debugDescription.prefix(40))]", #Predicate { $0.nick != s }),
            ("(nick ?? \"\") == s", #Predicate { ($0.nick ?? "") == s }),
            ("nick?.starts(with: p) == true [p=\(p.debugDescription)]", #Predicate { $0.nick?.starts(with: p) == true }),
            ("(nick ?? \"\") == name", #Predicate { ($0.nick ?? "") == $0.name }),
            ("code == s [s=\(s.debugDescription.prefix(40))]", #Predicate { $0.code == s }),
            ("code == code-k", #Predicate { $0.code == "code-17-1" }),
            ("flag", #Predicate { $0.flag }),
            ("!flag", #Predicate { !$0.flag }),
            ("flag == captured [\(flag)]", #Predicate { $0.flag == flag }),
            ("optFlag == true", #Predicate { $0.optFlag == true }),
            ("optFlag != false", #Predicate { $0.optFlag != false }),
            ("optFlag == nil", #Predicate { $0.optFlag == nil }),
            ("born < date [\(date.timeIntervalSinceReferenceDate)]", #Predicate { $0.born < date }),
            ("born == date [\(date.timeIntervalSinceReferenceDate)]", #Predicate { $0.born == date }),
            ("date <= born <= date2", #Predicate { $0.born >= date && $0.born <= date2 }),
            ("seen == nil || seen! > date", #Predicate { $0.seen == nil || $0.seen! > date }),
            ("seen == date", #Predicate { $0.seen == date }),
            ("seen != date", #Predicate { $0.seen != date }),
            ("uid == u", #Predicate { $0.uid == u }),
            ("uid != u", #Predicate { $0.uid != u }),
            ("blob == data", #Predicate { $0.blob == data }),
            ("blob.isEmpty", #Predicate { $0.blob.isEmpty }),
            ("tags.contains(s)", #Predicate { $0.tags.contains(s) }),
            ("tags.contains(where: starts(with: p))", #Predicate { $0.tags.contains { $0.starts(with: p) } }),
            ("tags.isEmpty", #Predicate { $0.tags.isEmpty }),
            ("tags.count > 2", #Predicate { $0.tags.count > 2 }),
            ("point.x > d", #Predicate { $0.point.x > x }),
            ("weight < point.x", #Predicate { $0.weight < $0.point.x }),
            ("qty == opt ?? -1", #Predicate { $0.qty == ($0.opt ?? -1) }),
            ("owner == ownerID [\(ownerRaw)]", #Predicate { $0.owner == ownerID }),
            ("owner == nil", #Predicate { $0.owner == nil }),
            ("owner != nil && flag", #Predicate { $0.owner != nil && $0.flag }),
            ("qty * 2 + 1 > a (small)", #Predicate { $0.small * 2 + 1 > small }),
            ("qty % 7 == 3", #Predicate { $0.qty % 7 == 3 }),
            ("ternary", #Predicate { ($0.flag ? $0.small : -$0.small) > small }),
            ("small == captured [\(small)]", #Predicate { $0.small == small }),
            ("small < captured [\(small)]", #Predicate { $0.small < small }),
            ("opt == a", #Predicate { $0.opt == a }),
            ("opt != a", #Predicate { $0.opt != a }),
            ("opt ?? 0 > 3", #Predicate { ($0.opt ?? 0) > 3 }),
            ("(qty == a && name == s) || weight > d", #Predicate { ($0.qty == a && $0.name == s) || $0.weight > d }),
            ("!(flag && weight > d) || nick == nil", #Predicate { !($0.flag && $0.weight > d) || $0.nick == nil }),
            ("qty > a && qty > b && qty != 0", #Predicate { $0.qty > a && $0.qty > b && $0.qty != 0 }),
            ("name == s && flag && uid == u", #Predicate { $0.name == s && $0.flag && $0.uid == u }),
            ("true", #Predicate { _ in true }),
            ("false", #Predicate { _ in false }),
        ]
    }

    static var sorts: [FZSort] { [
        FZSort(label: "none", strata: [], precedes: { _, _ in nil }),
        FZSort(label: "name", strata: [RecordSort(\.name)], precedes: { fzCompare($0.name, $1.name) }),
        FZSort(label: "name reverse, qty", strata: [RecordSort(\.name, order: .reverse), RecordSort(\.qty)],
               precedes: { a, b in fzCompare(a.name, b.name).map { !$0 } ?? fzCompare(a.qty, b.qty) }),
        FZSort(label: "nick", strata: [RecordSort(\.nick)], precedes: { fzCompare($0.nick, $1.nick) }),
        FZSort(label: "opt reverse", strata: [RecordSort(\.opt, order: .reverse)], precedes: { fzCompare($0.opt, $1.opt).map { !$0 } }),
        FZSort(label: "born, small", strata: [RecordSort(\.born), RecordSort(\.small)],
               precedes: { a, b in fzCompare(a.born, b.born) ?? fzCompare(a.small, b.small) }),
        FZSort(label: "seen reverse, code", strata: [RecordSort(\.seen, order: .reverse), RecordSort(\.code)],
               precedes: { a, b in fzCompare(a.seen, b.seen).map { !$0 } ?? fzCompare(a.code, b.code) }),
        FZSort(label: "qty reverse", strata: [RecordSort(\.qty, order: .reverse)], precedes: { fzCompare($0.qty, $1.qty).map { !$0 } }),
        FZSort(label: "owner", strata: [RecordSort(\.owner)], precedes: { fzCompare($0.owner, $1.owner) }),
    ] }

    /// Swift's answer: every record the predicate accepts, sorted, offset and limited.
    static func expected(_ all: [Identified<FZItem>], _ predicate: Predicate<FZItem>, _ sort: FZSort, offset: Int?, limit: Int?) throws -> [UInt64] {
        var matches = try all.filter { try predicate.evaluate($0.record) }
        matches.sort { a, b in sort.precedes(a.record, b.record) ?? (a.id.rawValue < b.id.rawValue) }
        let skipped = matches.dropFirst(max(0, offset ?? 0))
        return Array(skipped.prefix(limit.map { max(0, $0) } ?? Int.max)).map(\.id.rawValue)
    }

    struct Mismatch: CustomStringConvertible {
        var what: String
        var description: String { what }
    }

    /// Fetches, counts and enumerates `predicate` with `sort` and compares with Swift's answer.
    static func check(_ context: Context, _ all: [Identified<FZItem>], _ label: String, _ predicate: Predicate<FZItem>,
                      _ sort: FZSort, offset: Int?, limit: Int?, seed: UInt64, round: Int, mismatches: inout [String]) {
        let tag = "\(label) sort=\(sort.label) offset=\(offset.map(String.init) ?? "nil") limit=\(limit.map(String.init) ?? "nil") seed=\(seed) round=\(round)"
        let want: [UInt64]
        do {
            want = try expected(all, predicate, sort, offset: offset, limit: limit)
        } catch {
            // Swift throws: Strata must throw too (or we note what it did).
            do {
                let got = try context.fetch(FetchDescriptor(predicate: predicate, sortBy: sort.strata, fetchLimit: limit, fetchOffset: offset))
                mismatches.append("THROWS-IN-SWIFT-BUT-STRATA-RETURNED \(got.count): \(tag): swift error \(error)")
            } catch let strataError {
                _ = strataError
            }
            return
        }
        var descriptor = FetchDescriptor(predicate: predicate, sortBy: sort.strata, fetchLimit: limit, fetchOffset: offset)
        do {
            let got = try context.fetch(descriptor)
            let ids = got.map(\.id.rawValue)
            let stringSort = sort.label.hasPrefix("name") || sort.label.hasPrefix("nick")
            // Swift's own String `<` is not a strict weak order on some canonically equivalent
            // forms ("e\u{301}" vs "\u{E9}a": neither <, > nor ==), so a string sort's order among
            // them depends on the input order: accept any order with no adjacent inversion.
            let ambiguous = stringSort && Set(ids) == Set(want) && ids.count == want.count && (limit != nil || offset != nil || {
                let byID = Dictionary(uniqueKeysWithValues: all.map { ($0.id.rawValue, $0.record) })
                return zip(ids, ids.dropFirst()).allSatisfy { a, b in sort.precedes(byID[b]!, byID[a]!) != true }
            }())
            if ids != want && !ambiguous {
                let gotSet = Set(ids), wantSet = Set(want)
                mismatches.append("FETCH \(tag): got \(ids.count) want \(want.count); extra \(Array(gotSet.subtracting(wantSet)).sorted().prefix(8)) missing \(Array(wantSet.subtracting(gotSet)).sorted().prefix(8))" + (gotSet == wantSet ? " (same set, different order)" : ""))
            }
        } catch {
            mismatches.append("FETCH-THREW \(tag): \(type(of: error)) \(error)")
        }
        do {
            let count = try context.fetchCount(descriptor)
            if count != want.count { mismatches.append("COUNT \(tag): got \(count) want \(want.count)") }
        } catch {
            mismatches.append("COUNT-THREW \(tag): \(error)")
        }
        do {
            var visited: [UInt64] = []
            try context.enumerate(descriptor, batchSize: 97) { visited.append($0.id.rawValue) }
            let stringSort = sort.label.hasPrefix("name") || sort.label.hasPrefix("nick")
            if visited != want && !(stringSort && Set(visited) == Set(want)) {
                mismatches.append("ENUMERATE \(tag): got \(visited.count) want \(want.count)" + (Set(visited) == Set(want) ? " (same set, different order)" : ""))
            }
        } catch {
            mismatches.append("ENUMERATE-THREW \(tag): \(error)")
        }
        descriptor.fetchLimit = nil
    }

    static func populate(_ context: Context, _ random: inout SeededRandom, items: Int, specials: Int) throws -> [RecordID<FZOwner>] {
        var owners: [RecordID<FZOwner>] = []
        for n in 0..<20 { owners.append(try context.insert(FZOwner(name: "owner \(n)"))) }
        try context.save()
        for n in 0..<items { try context.insert(makeItem(&random, owners: owners, n: n)) }
        for n in 0..<specials { try context.insert(special(makeItem(&random, owners: owners, n: items + n), extra: random.fzString())) }
        try context.save()
        return owners
    }

    /// Applies random unsaved inserts, updates and deletes to `context`.
    static func mutate(_ context: Context, _ random: inout SeededRandom, owners: [RecordID<FZOwner>], all: [Identified<FZItem>], n: inout Int) throws {
        for _ in 0..<(5 + random.below(20)) {
            switch random.below(4) {
            case 0:
                n += 1
                if random.chance(30) {
                    try context.insert(special(makeItem(&random, owners: owners, n: n), extra: "x"))
                } else {
                    try context.insert(makeItem(&random, owners: owners, n: n))
                }
            case 1, 2:
                guard !all.isEmpty else { continue }
                let target = random.pick(all)
                var record = makeItem(&random, owners: owners, n: n)
                record.code = target.record.code
                do { try context.update(target.id, to: record) } catch StrataError.recordNotFound { }
            default:
                guard !all.isEmpty else { continue }
                try context.delete(random.pick(all).id)
            }
        }
    }

    static func fuzz(_ name: String, seed: UInt64, rounds: Int, unsaved: Bool) throws {
        print("FetchAdversaryTests.\(name) seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [FZOwner.self, FZItem.self, FZSpecial.self])
        let context = Context(store)
        let owners = try populate(context, &random, items: 900, specials: 120)
        var n = 10_000
        var mismatches: [String] = []
        let start = Date()
        for round in 0..<rounds {
            if unsaved {
                let all = try context.fetch(FetchDescriptor<FZItem>())
                try mutate(context, &random, owners: owners, all: all, n: &n)
            }
            let all = try context.fetch(FetchDescriptor<FZItem>())
            for (label, predicate) in predicates(&random) {
                let sort = random.pick(sorts)
                let offset: Int? = random.chance(25) ? random.below(10) : nil
                let limit: Int? = random.chance(30) ? random.below(15) : nil
                check(context, all, label, predicate, sort, offset: offset, limit: limit, seed: seed, round: round, mismatches: &mismatches)
            }
        }
        print("\(name): \(Date().timeIntervalSince(start)) s, plans \(store.fetchPlanCounts)")
        for line in mismatches.prefix(60) { print("MISMATCH " + line) }
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches (seed \(seed)); first: \(mismatches.first ?? "")")
        try store.close()
    }

    @Test func savedFetchesMatchSwiftEvaluation() throws {
        try Self.fuzz("savedFetchesMatchSwiftEvaluation", seed: SeededRandom.seed(default: 0xF00D_FE7C), rounds: 2, unsaved: false)
    }

    @Test func fetchesWithUnsavedChangesMatchSwiftEvaluation() throws {
        try Self.fuzz("fetchesWithUnsavedChangesMatchSwiftEvaluation", seed: SeededRandom.seed(default: 0xBEEF_0042), rounds: 2, unsaved: true)
    }
}

// MARK: Focused reproductions

struct FZName: PersistentRecord {
    var name: String
    var n: Int
    static var attributeOptions: [String: Attribute.Options] { ["name": [.indexed]] }
}

/// A record whose `Codable` decoding normalizes values (clamps, lowercases), as apps do for
/// legacy data: the stored bytes differ from what the decoded record holds.
struct FZClamped: PersistentRecord {
    var celsius: Double
    var tag: String
    var level: Int
    init(celsius: Double, tag: String, level: Int) { self.celsius = celsius; self.tag = tag; self.level = level }
    enum CodingKeys: String, CodingKey { case celsius, tag, level }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        celsius = max(-273.15, try c.decode(Double.self, forKey: .celsius))
        tag = try c.decode(String.self, forKey: .tag).lowercased()
        level = min(10, try c.decode(Int.self, forKey: .level))
    }
}

struct FZDefaulted: PersistentRecord {
    var name: String
    var note: String?
    var rating: Int?
    static var attributeDefaults: [String: Value] { ["note": .string("none"), "rating": .int(3)] }
}

struct FZOptional: PersistentRecord {
    var name: String
    var rating: Int?
}

struct FZIndexedOptional: PersistentRecord {
    var name: String
    var rating: Int?
    static var attributeOptions: [String: Attribute.Options] { ["name": [.indexed]] }
}

struct FZFloat: PersistentRecord {
    var value: Double
    var label: String
    static var attributeOptions: [String: Attribute.Options] { ["value": [.indexed]] }
}

extension FetchAdversaryTests {
    /// Swift's `String.<` on canonically-equivalent singletons (U+212A KELVIN SIGN ≡ "K",
    /// U+1FEF ≡ "`") is not the order of their NFC bytes, which index keys use: an index range
    /// with ASCII bounds then selects records Swift's predicate rejects and misses records it
    /// accepts.
    @Test func indexedStringRangeAgreesWithSwiftForSingletonDecompositions() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [FZName.self])
        let context = Context(store)
        for i in 0..<200 { try context.insert(FZName(name: "zz\(i)", n: i)) }
        let names = ["\u{212A}", "K", "Ka", "Kb", "\u{212A}elvin", "Kelvin", "\u{1FEF}", "`", "`a"]
        for (i, name) in names.enumerated() { try context.insert(FZName(name: name, n: 1_000 + i)) }
        try context.save()
        let all = try context.fetch(FetchDescriptor<FZName>())
        let cases: [(String, Predicate<FZName>)] = [
            ("name > \"Ka\" && name < \"Z\"", #Predicate { $0.name > "Ka" && $0.name < "Z" }),
            ("name >= \"K\" && name < \"Ka\"", #Predicate { $0.name >= "K" && $0.name < "Ka" }),
            ("name > \"`a\" && name < \"a\"", #Predicate { $0.name > "`a" && $0.name < "a" }),
            ("name >= \"`\" && name < \"`a\"", #Predicate { $0.name >= "`" && $0.name < "`a" }),
            ("name > \"Kelvin\"&& name < \"Z\"", #Predicate { $0.name > "Kelvin" && $0.name < "Z" }),
        ]
        var problems: [String] = []
        for (label, predicate) in cases {
            let want = try all.filter { try predicate.evaluate($0.record) }.map(\.record.name)
            let got = try context.fetch(FetchDescriptor(predicate: predicate)).map(\.record.name)
            let count = try context.fetchCount(FetchDescriptor(predicate: predicate))
            if got != want || count != want.count {
                problems.append("\(label): Swift \(want.map(\.debugDescription)), fetch \(got.map(\.debugDescription)), fetchCount \(count)")
            }
        }
        print("indexedStringRange plans: \(store.fetchPlanCounts)")
        for p in problems { print("SINGLETON " + p) }
        // Swift 6.3's own `<` is not a total order here: U+212A == "K" and "K" < "Ka", yet
        // U+212A > "Ka" (a fast-path defect of the kind swiftlang/swift#16119 fixed in 2018).
        // Index keys are a total order (NFC bytes) and cannot follow it.
        let kelvin = "\u{212A}"
        print("SWIFT ORDER: U+212A == K \(kelvin == "K"), K < Ka \("K" < "Ka"), U+212A < Ka \(kelvin < "Ka")")
        withKnownIssue(Comment(rawValue: "Known issue (Swift's): String.< is not transitive for U+212A KELVIN SIGN and U+1FEF (U+212A == \"K\" < \"Ka\" < U+212A); index keys, a total order of NFC bytes, cannot follow it, so an index range can miss or count such a record")) {
            #expect(problems.isEmpty, "\(problems)")
        }
        try store.close()
    }

    /// The pre-filter reads stored bytes; a type whose `init(from:)` normalizes values (clamp,
    /// lowercase) decodes to other values than those bytes. The key-path probe only checks two
    /// small values, which survive the normalization.
    @Test func preFilterAgreesWithACustomDecoder() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [FZClamped.self])
        let context = Context(store)
        try context.insert(FZClamped(celsius: -500, tag: "ABC", level: 99))
        try context.insert(FZClamped(celsius: 20, tag: "abc", level: 5))
        try context.save()
        let all = try context.fetch(FetchDescriptor<FZClamped>())
        print("decoded: \(all.map { ($0.record.celsius, $0.record.tag, $0.record.level) })")
        let cases: [(String, Predicate<FZClamped>)] = [
            ("celsius < -300", #Predicate { $0.celsius < -300 }),
            ("celsius == -273.15", #Predicate { $0.celsius == -273.15 }),
            ("tag == \"abc\"", #Predicate { $0.tag == "abc" }),
            ("tag == \"ABC\"", #Predicate { $0.tag == "ABC" }),
            ("level > 10", #Predicate { $0.level > 10 }),
            ("level == 10", #Predicate { $0.level == 10 }),
        ]
        var problems: [String] = []
        for (label, predicate) in cases {
            let want = try all.filter { try predicate.evaluate($0.record) }.map(\.id.rawValue)
            let got = try context.fetch(FetchDescriptor(predicate: predicate))
            let count = try context.fetchCount(FetchDescriptor(predicate: predicate))
            if got.map(\.id.rawValue) != want || count != want.count {
                problems.append("\(label): Swift ids \(want), fetch ids \(got.map(\.id.rawValue)) records \(got.map { ($0.record.celsius, $0.record.tag, $0.record.level) }), fetchCount \(count)")
            }
        }
        for p in problems { print("CUSTOMDECODER " + p) }
        #expect(problems.isEmpty, "\(problems)")
        try store.close()
    }

    /// An optional with a declared default: a record saved with nil must read back nil, and
    /// `== nil` must find it.
    @Test func optionalWithDefaultKeepsNil() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [FZDefaulted.self])
        let context = Context(store)
        let id = try context.insert(FZDefaulted(name: "x", note: nil, rating: nil))
        try context.insert(FZDefaulted(name: "y", note: "set", rating: 5))
        let unsaved = try context.record(for: id)
        try context.save()
        let saved = try context.record(for: id)
        let nilNotes = try context.fetch(FetchDescriptor<FZDefaulted>(predicate: #Predicate { $0.note == nil }))
        let noneNotes = try context.fetch(FetchDescriptor<FZDefaulted>(predicate: #Predicate { $0.note == "none" }))
        let all = try context.fetch(FetchDescriptor<FZDefaulted>())
        let swiftNil = try all.filter { try #Predicate<FZDefaulted> { $0.note == nil }.evaluate($0.record) }
        print("DEFAULTED unsaved note=\(String(describing: unsaved?.note)) rating=\(String(describing: unsaved?.rating)); saved note=\(String(describing: saved?.note)) rating=\(String(describing: saved?.rating)); fetch note==nil \(nilNotes.count) (Swift over all: \(swiftNil.count)); note==\"none\" \(noneNotes.count)")
        #expect(unsaved?.note == nil && unsaved?.rating == nil)
        #expect(saved?.note == nil, "inserted with note nil, read back \(String(describing: saved?.note))")
        #expect(saved?.rating == nil, "inserted with rating nil, read back \(String(describing: saved?.rating))")
        #expect(nilNotes.count == swiftNil.count)
        #expect(nilNotes.map(\.id) == [id])
        #expect(noneNotes.isEmpty)
        try store.close()
    }

    /// Sorting by a Double holding NaN: the same records must come back in the same order
    /// whether or not the context holds an (identical) unsaved change.
    @Test func nanSortOrderIsStable() throws {
        let seed = SeededRandom.seed(default: 0x7A7A)
        print("nanSortOrderIsStable seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [FZFloat.self])
        let context = Context(store)
        var ids: [RecordID<FZFloat>] = []
        for i in 0..<60 {
            let v: Double = random.chance(30) ? .nan : Double(random.below(10))
            ids.append(try context.insert(FZFloat(value: v, label: "r\(i)")))
        }
        try context.save()
        for order in [SortOrder.forward, .reverse] {
            let descriptor = FetchDescriptor<FZFloat>(sortBy: [RecordSort(\.value, order: order)])
            let saved = try context.fetch(descriptor).map(\.id.rawValue)
            // An unsaved update that changes nothing.
            let last = ids[ids.count - 1]
            try context.update(last, to: try context.record(for: last)!)
            let withChange = try context.fetch(descriptor).map(\.id.rawValue)
            context.rollback()
            let values = try context.fetch(descriptor).map(\.record.value)
            print("NAN \(order): saved order \(saved.prefix(20)) values \(values.prefix(20).map { $0.isNaN ? "nan" : "\(Int($0))" })")
            // Non-NaN values must ascend (forward) or descend (reverse) once NaNs are ignored.
            let finite = values.filter { !$0.isNaN }
            let sorted = order == .forward ? finite == finite.sorted() : finite == finite.sorted(by: >)
            #expect(saved == withChange, "\(order): order differs with an identical unsaved change")
            #expect(sorted, "\(order): the non-NaN values are not in order: \(values.map { $0.isNaN ? "nan" : "\(Int($0))" })")
        }
        try store.close()
    }

    /// Where Swift's evaluation throws (a force-unwrap of nil), Strata must not quietly answer.
    @Test func throwingPredicateIsNotSkippedByThePreFilter() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [FZOptional.self])
        let context = Context(store)
        try context.insert(FZOptional(name: "a", rating: 4))
        try context.insert(FZOptional(name: "b", rating: nil))
        try context.save()
        let all = try context.fetch(FetchDescriptor<FZOptional>())
        let predicate = #Predicate<FZOptional> { $0.rating! > 3 && $0.name == "zzz" }
        var swiftError: (any Error)?
        do { _ = try all.filter { try predicate.evaluate($0.record) } } catch { swiftError = error }
        var strataResult = "threw"
        var strataError: (any Error)?
        do { strataResult = "returned \(try context.fetch(FetchDescriptor(predicate: predicate)).count) records" } catch { strataError = error }
        var countResult = "threw"
        do { countResult = "counted \(try context.fetchCount(FetchDescriptor(predicate: predicate)))" } catch {}
        print("THROWING swift: \(String(describing: swiftError)); strata fetch: \(strataResult) \(String(describing: strataError)); count: \(countResult)")
        #expect(swiftError != nil)
        #expect((swiftError == nil) == (strataError == nil), "Swift threw \(String(describing: swiftError)), Strata \(strataResult)")
        #expect(countResult == "threw", "fetchCount \(countResult)")
        try store.close()
    }
}

extension FetchAdversaryTests {
    /// `&&` and `||` evaluate left to right and stop early: where the left side throws (a
    /// force unwrap of nil), Swift throws whatever the right side says — also when the right
    /// side could be answered from an index. Where the left side decides, the right side is
    /// not evaluated, and nothing throws.
    @Test func aThrowingLeftSideThrowsWhateverTheRightSideOrAnIndexSays() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [FZIndexedOptional.self])
        let context = Context(store)
        try context.insert(FZIndexedOptional(name: "a", rating: 4))
        try context.insert(FZIndexedOptional(name: "b", rating: nil))
        try context.save()
        let all = try context.fetch(FetchDescriptor<FZIndexedOptional>())
        let cases: [(String, Predicate<FZIndexedOptional>)] = [
            ("rating! > 3 && name == zzz", #Predicate { $0.rating! > 3 && $0.name == "zzz" }),
            ("rating! > 3 || name == a", #Predicate { $0.rating! > 3 || $0.name == "a" }),
            ("name == zzz && rating! > 3", #Predicate { $0.name == "zzz" && $0.rating! > 3 }),
            ("name == b || rating! > 3", #Predicate { $0.name == "b" || $0.rating! > 3 }),
            ("name == a && rating! > 3", #Predicate { $0.name == "a" && $0.rating! > 3 }),
        ]
        for (label, predicate) in cases {
            let swift = Result { try all.filter { try predicate.evaluate($0.record) }.map(\.id.rawValue) }
            let fetched = Result { try context.fetch(FetchDescriptor(predicate: predicate)).map(\.id.rawValue) }
            let counted = Result { try context.fetchCount(FetchDescriptor(predicate: predicate)) }
            switch swift {
            case .success(let ids):
                #expect((try? fetched.get()) == ids, "\(label): Swift \(ids), fetch \(fetched)")
                #expect((try? counted.get()) == ids.count, "\(label): Swift \(ids), count \(counted)")
            case .failure:
                #expect((try? fetched.get()) == nil, "\(label): Swift throws, fetch \(fetched)")
                #expect((try? counted.get()) == nil, "\(label): Swift throws, count \(counted)")
            }
        }
        try store.close()
    }

    /// Whether the indexes declared on a parent entity with a sub-entity are used at all.
    @Test func indexPlansInAHierarchy() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [FZOwner.self, FZItem.self, FZSpecial.self])
        let context = Context(store)
        var random = SeededRandom(seed: 5)
        _ = try Self.populate(context, &random, items: 400, specials: 40)
        let before = store.fetchPlanCounts
        let got = try context.fetch(FetchDescriptor<FZItem>(predicate: #Predicate { $0.code == "code-17-1" }))
        let got2 = try context.fetch(FetchDescriptor<FZItem>(predicate: #Predicate { $0.qty == 42 }))
        print("HIERARCHY plans before \(before) after \(store.fetchPlanCounts); \(got.count) \(got2.count)")
    }
}

struct FZFlat: PersistentRecord {
    var name: String
    var weight: Double
    var qty: Int
    var born: Date
    var nick: String?
    static var attributeOptions: [String: Attribute.Options] {
        ["name": [.indexed], "weight": [.indexed], "qty": [.indexed], "born": [.indexed], "nick": [.indexed]]
    }
}

extension FetchAdversaryTests {
    /// Index plans (equalities, ranges, exact counts) on a flat entity against Swift's answer.
    @Test func indexedFlatFetchesMatchSwiftEvaluation() throws {
        let seed = SeededRandom.seed(default: 0x1DE5)
        print("indexedFlatFetchesMatchSwiftEvaluation seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [FZFlat.self])
        let context = Context(store)
        for _ in 0..<1_500 {
            try context.insert(FZFlat(name: random.fzString(), weight: random.fzDouble(), qty: random.fzInt(), born: random.fzDate(),
                                      nick: random.chance(40) ? nil : random.fzString()))
        }
        try context.save()
        var problems: [String] = []
        for round in 0..<30 {
            if round == 15 {
                let ids = try context.fetch(FetchDescriptor<FZFlat>()).map(\.id)
                for _ in 0..<30 {
                    try context.update(random.pick(ids), to: FZFlat(name: random.fzString(), weight: random.fzDouble(), qty: random.fzInt(),
                                                                    born: random.fzDate(), nick: random.fzString()))
                }
                for _ in 0..<10 { try context.delete(random.pick(ids)) }
            }
            let all = try context.fetch(FetchDescriptor<FZFlat>())
            let s = random.fzString(), a = random.fzInt(), b = random.fzInt(), d = random.fzDouble(), d2 = random.fzDouble()
            let date = random.fzDate(), date2 = random.fzDate()
            let lo = random.pick(["A", "K", "Ka", "a", "`", "`a", "ab", "e", "x", " ", ";", ";a"]), hi = random.pick(["Kb", "L", "Z", "b", "f", "z", "~", "a", "aab"])
            let cases: [(String, Predicate<FZFlat>)] = [
                ("name == s", #Predicate { $0.name == s }),
                ("lo <= name < hi [\(lo), \(hi)]", #Predicate { $0.name >= lo && $0.name < hi }),
                ("lo < name <= hi [\(lo), \(hi)]", #Predicate { $0.name > lo && $0.name <= hi }),
                ("name > lo [\(lo)]", #Predicate { $0.name > lo }),
                ("nick == s", #Predicate { $0.nick == s }),
                ("nick >= lo && nick < hi", #Predicate { $0.nick != nil && $0.nick! >= lo && $0.nick! < hi }),
                ("qty == a", #Predicate { $0.qty == a }),
                ("a <= qty <= b", #Predicate { $0.qty >= a && $0.qty <= b }),
                ("qty > a", #Predicate { $0.qty > a }),
                ("weight == d [\(d)]", #Predicate { $0.weight == d }),
                ("d <= weight <= d2 [\(d), \(d2)]", #Predicate { $0.weight >= d && $0.weight <= d2 }),
                ("weight < d [\(d)]", #Predicate { $0.weight < d }),
                ("born == date", #Predicate { $0.born == date }),
                ("date < born < date2", #Predicate { $0.born > date && $0.born < date2 }),
            ]
            for (label, predicate) in cases {
                let want = try all.filter { try predicate.evaluate($0.record) }.map(\.id.rawValue)
                let got = try context.fetch(FetchDescriptor(predicate: predicate)).map(\.id.rawValue)
                let count = try context.fetchCount(FetchDescriptor(predicate: predicate))
                if got != want || count != want.count {
                    let byID = Dictionary(uniqueKeysWithValues: all.map { ($0.id.rawValue, $0.record) })
                    let extra = Set(got).subtracting(want).map { byID[$0]!.name.unicodeScalars.map { String($0.value, radix: 16) }.prefix(6).joined(separator: " ") }
                    let missing = Set(want).subtracting(got).map { byID[$0]!.name.unicodeScalars.map { String($0.value, radix: 16) }.prefix(6).joined(separator: " ") }
                    problems.append("\(label) round \(round): Swift \(want.count), fetch \(got.count) (extra names \(extra.prefix(4)), missing names \(missing.prefix(4))), fetchCount \(count)")
                }
            }
        }
        print("indexedFlat plans \(store.fetchPlanCounts)")
        for p in problems.prefix(30) { print("FLAT " + p) }
        #expect(problems.isEmpty, "\(problems.count) problems (seed \(seed))")
        try store.close()
    }
}
