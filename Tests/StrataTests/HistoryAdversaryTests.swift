#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

// An outside user's adversarial tests of the history journal (Docs/History.md): irregular
// values, relationships with inverses and delete rules, sub-entities, both write paths, several
// authors, reopen — compared against the data the store actually holds before and after each
// change (a journal entry must describe exactly that difference) — plus queries, retention,
// observers and migrations.

struct HAMeta: Codable, Sendable, Hashable {
    var a: Int
    var b: [String]
}

struct HAOwner: PersistentRecord {
    var title: String
    var items: [RecordID<HAItem>] = []
    static let relationshipRules = ["items": RelationshipRule(inverse: "owner", deleteRule: .cascade)]
    static var attributeOptions: [String: Attribute.Options] { ["title": [.preserveValueOnDeletion]] }
}

struct HATag: PersistentRecord {
    var label: String
    var weight: Float?
    var items: [RecordID<HAItem>] = []
    static let relationshipRules = ["items": RelationshipRule(inverse: "tags")]
}

struct HAItem: PersistentRecord {
    var name: String
    var score: Double
    var ratio: Double?
    var blob: Data?
    var when: Date?
    var meta: HAMeta?
    var count: Int
    var flag: Bool
    var uid: UUID?
    var owner: RecordID<HAOwner>?
    var tags: [RecordID<HATag>] = []
    static let relationshipRules = ["owner": RelationshipRule(inverse: "items"), "tags": RelationshipRule(inverse: "items")]
    static var attributeOptions: [String: Attribute.Options] {
        ["name": [.preserveValueOnDeletion], "ratio": [.preserveValueOnDeletion], "meta": [.preserveValueOnDeletion],
         "blob": [.preserveValueOnDeletion]]
    }
}

struct HASpecial: PersistentRecord {
    var name: String
    var score: Double
    var ratio: Double?
    var blob: Data?
    var when: Date?
    var meta: HAMeta?
    var count: Int
    var flag: Bool
    var uid: UUID?
    var owner: RecordID<HAOwner>?
    var tags: [RecordID<HATag>] = []
    var level: Int8
    var extra: String?
    static var parentRecordType: (any PersistentRecord.Type)? { HAItem.self }
}

/// No relationships, no sub-entities: `Store.write` inserts it through the bulk path (runs).
struct HAPlain: PersistentRecord {
    var text: String
    var number: Double?
    var payload: Data?
    static var attributeOptions: [String: Attribute.Options] { ["text": [.preserveValueOnDeletion], "number": [.preserveValueOnDeletion]] }
}

@Suite struct HistoryAdversaryTests {
    // MARK: Model

    /// A record of any of the four types.
    enum Rec {
        case owner(HAOwner), tag(HATag), item(HAItem), special(HASpecial), plain(HAPlain)

        var entity: String {
            switch self {
            case .owner: "HAOwner"
            case .tag: "HATag"
            case .item: "HAItem"
            case .special: "HASpecial"
            case .plain: "HAPlain"
            }
        }

        /// The values as the journal reports them: absent attributes and empty to-many omitted.
        var values: [String: Value] {
            let encoded: [String: Value]
            switch self {
            case .owner(let r): encoded = try! RecordEncoder().encode(r)
            case .tag(let r): encoded = try! RecordEncoder().encode(r)
            case .item(let r): encoded = try! RecordEncoder().encode(r)
            case .special(let r): encoded = try! RecordEncoder().encode(r)
            case .plain(let r): encoded = try! RecordEncoder().encode(r)
            }
            return encoded.filter {
                if case .references(let ids) = $0.value { return !ids.isEmpty }
                return !$0.value.isNull
            }
        }
    }

    /// 0: owners, 1: tags, 2: items and specials (one id counter).
    struct Key: Hashable, Comparable, CustomStringConvertible {
        var family: Int
        var id: UInt64
        static func < (a: Key, b: Key) -> Bool { (a.family, a.id) < (b.family, b.id) }
        var description: String { "\(["O", "T", "I", "P"][family])\(id)" }
    }

    static func family(_ entity: String) -> Int {
        switch entity {
        case "HAOwner": 0
        case "HATag": 1
        case "HAPlain": 3
        default: 2
        }
    }

    static let tombstoneAttributes: [String: Set<String>] = [
        "HAOwner": ["title"], "HATag": [], "HAItem": ["name", "ratio", "meta", "blob"], "HASpecial": ["name", "ratio", "meta", "blob"],
        "HAPlain": ["text", "number"],
    ]

    /// Strict equality: strings by their UTF-8 bytes (the journal compares bytes), doubles and
    /// dates by bits (Value's ==).
    static func same(_ a: Value, _ b: Value) -> Bool {
        if case .string(let x) = a, case .string(let y) = b { return Array(x.utf8) == Array(y.utf8) }
        return a == b
    }

    struct ModelChange: CustomStringConvertible {
        var kind: HistoryChange.Kind
        var entity: String
        var id: UInt64
        var updated: [String: (Value, Value)] = [:]
        var tombstone: [String: Value] = [:]

        init(kind: HistoryChange.Kind, entity: String, id: UInt64, updated: [String: (Value, Value)] = [:], tombstone: [String: Value] = [:]) {
            self.kind = kind
            self.entity = entity
            self.id = id
            self.updated = updated
            self.tombstone = tombstone
        }

        init(_ change: HistoryChange) {
            kind = change.kind
            entity = change.entityName
            id = change.recordNumber
            for attribute in change.updatedAttributes { updated[attribute.name] = (attribute.oldValue, attribute.newValue) }
            tombstone = change.tombstone
        }

        func matches(_ other: ModelChange) -> Bool {
            guard kind == other.kind, entity == other.entity, id == other.id, Set(updated.keys) == Set(other.updated.keys),
                  Set(tombstone.keys) == Set(other.tombstone.keys) else { return false }
            for (name, (old, new)) in updated {
                guard let (o, n) = other.updated[name], same(old, o), same(new, n) else { return false }
            }
            for (name, value) in tombstone where !same(value, other.tombstone[name]!) { return false }
            return true
        }

        static func short(_ v: Value) -> String {
            switch v {
            case .string(let s) where s.utf8.count > 24: "string(\(s.utf8.count) bytes \(Array(s.utf8.prefix(8))))"
            case .string(let s): "string(\(String(reflecting: s)) \(Array(s.utf8)))"
            case .double(let d): "double(\(d) bits \(String(d.bitPattern, radix: 16)))"
            default: v.description
            }
        }

        var description: String {
            var text = "\(kind) \(entity) \(id)"
            if !updated.isEmpty {
                text += " {" + updated.sorted { $0.key < $1.key }.map { "\($0.key): \(Self.short($0.value.0)) → \(Self.short($0.value.1))" }
                    .joined(separator: ", ") + "}"
            }
            if !tombstone.isEmpty { text += " kept {" + tombstone.sorted { $0.key < $1.key }.map { "\($0.key): \(Self.short($0.value))" }.joined(separator: ", ") + "}" }
            return text
        }
    }

    /// What changed between two states of some records (`keys`), as one save would journal it.
    static func diff(_ before: [Key: Rec], _ after: [Key: Rec], keys: some Sequence<Key>) -> [ModelChange] {
        var changes: [ModelChange] = []
        for key in keys.sorted() {
            switch (before[key], after[key]) {
            case (nil, let new?): changes.append(ModelChange(kind: .insert, entity: new.entity, id: key.id))
            case (let old?, nil):
                let kept = tombstoneAttributes[old.entity] ?? []
                changes.append(ModelChange(kind: .delete, entity: old.entity, id: key.id, tombstone: old.values.filter { kept.contains($0.key) }))
            case (let old?, let new?):
                if old.entity != new.entity { Issue.record("record \(key) changed entity \(old.entity) → \(new.entity)") }
                let o = old.values, n = new.values
                var updated: [String: (Value, Value)] = [:]
                // Strings compare as Swift strings (Value's ==; see canonicallyEquivalentStrings…).
                for name in Set(o.keys).union(n.keys) where (o[name] ?? .null) != (n[name] ?? .null) {
                    updated[name] = (o[name] ?? .null, n[name] ?? .null)
                }
                if !updated.isEmpty { changes.append(ModelChange(kind: .update, entity: new.entity, id: key.id, updated: updated)) }
            case (nil, nil): break
            }
        }
        return changes
    }

    struct ModelTransaction: HistoryModelTransaction {
        var token: UInt64
        var author: String?
        /// Groups of changes: within a group the order is not checked (one `Store.write` call's
        /// changes, or a whole `Context.save()`'s, whose shape is checked separately).
        var groups: [[ModelChange]]
        var viaContext: Bool
        var microseconds: Int64 = 0
        var changeCount: Int { groups.reduce(0) { $0 + $1.count } }

        func keeping(entities: Set<String>) -> ModelTransaction? {
            var kept = self
            kept.groups = groups.map { $0.filter { entities.contains($0.entity) } }.filter { !$0.isEmpty }
            return kept.groups.isEmpty ? nil : kept
        }
    }

    static let entities = ["HAOwner", "HATag", "HAItem", "HASpecial", "HAPlain"]
    static let authors: [String?] = ["app", "sync", "widget", nil, "Sync", ""]

    static func open(_ folder: String, configure: (inout Store.Configuration) -> Void = { _ in }) throws -> Store {
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        configure(&configuration)
        return try Store(at: folder, for: [HAOwner.self, HATag.self, HAItem.self, HASpecial.self, HAPlain.self], configuration: configuration)
    }

    /// Every record the store holds.
    static func storedState(_ store: Store) throws -> [Key: Rec] {
        let context = Context(store)
        var state: [Key: Rec] = [:]
        for r in try context.fetch(FetchDescriptor<HAOwner>()) { state[Key(family: 0, id: r.id.rawValue)] = .owner(r.record) }
        for r in try context.fetch(FetchDescriptor<HATag>()) { state[Key(family: 1, id: r.id.rawValue)] = .tag(r.record) }
        for r in try context.fetch(FetchDescriptor<HAItem>()) { state[Key(family: 2, id: r.id.rawValue)] = .item(r.record) }
        for r in try context.fetch(FetchDescriptor<HASpecial>()) { state[Key(family: 2, id: r.id.rawValue)] = .special(r.record) }
        for r in try context.fetch(FetchDescriptor<HAPlain>()) { state[Key(family: 3, id: r.id.rawValue)] = .plain(r.record) }
        return state
    }

    /// Inverses hold in `state`.
    static func checkInverses(_ state: [Key: Rec], _ where_: String) {
        for (key, rec) in state {
            switch rec {
            case .owner(let o):
                for i in o.items {
                    let owner: RecordID<HAOwner>? = switch state[Key(family: 2, id: i.rawValue)] {
                    case .item(let r)?: r.owner
                    case .special(let r)?: r.owner
                    default: nil
                    }
                    if owner?.rawValue != key.id { Issue.record("owner \(key) lists item \(i.rawValue) whose owner is \(String(describing: owner)) (\(where_))") }
                }
            case .tag(let t):
                for i in t.items {
                    let tags: [RecordID<HATag>] = switch state[Key(family: 2, id: i.rawValue)] {
                    case .item(let r)?: r.tags
                    case .special(let r)?: r.tags
                    default: []
                    }
                    if !tags.contains(where: { $0.rawValue == key.id }) { Issue.record("tag \(key) lists item \(i.rawValue) not tagged back (\(where_))") }
                }
            case .plain: break
            case .item, .special:
                let (owner, tags): (RecordID<HAOwner>?, [RecordID<HATag>]) = switch rec {
                case .item(let r): (r.owner, r.tags)
                case .special(let r): (r.owner, r.tags)
                default: (nil, [])
                }
                if let owner {
                    guard case .owner(let o)? = state[Key(family: 0, id: owner.rawValue)], o.items.contains(where: { $0.rawValue == key.id }) else {
                        Issue.record("item \(key)'s owner \(owner.rawValue) does not list it (\(where_))")
                        continue
                    }
                }
                for tag in tags {
                    guard case .tag(let t)? = state[Key(family: 1, id: tag.rawValue)], t.items.contains(where: { $0.rawValue == key.id }) else {
                        Issue.record("item \(key)'s tag \(tag.rawValue) does not list it (\(where_))")
                        continue
                    }
                }
            }
        }
    }

    // MARK: Irregular values

    static let words = ["alpha", "", "é", "e\u{301}", "日本語", "👩‍👩‍👧‍👦", "a\u{0}b", "Ω≈ç√", " ", "\u{FEFF}", "tab\there", "line\nbreak"]

    static func string(_ random: inout SeededRandom) -> String {
        switch random.next() % 40 {
        case 0: return String(repeating: "long é 日本 ", count: 2_000 + Int(random.next() % 3_000))  // overflow pages
        case 1: return String(repeating: "x", count: 1_000 + Int(random.next() % 20))
        default:
            let count = Int(random.next() % 3)
            return (0..<count).map { _ in words[Int(random.next() % UInt64(words.count))] }.joined(separator: "-")
        }
    }

    static let doubles: [Double] = [0.0, -0.0, .nan, -.nan, Double(bitPattern: 0x7FF8_0000_0000_0001), .infinity, -.infinity,
                                    1.5, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1 + 0.2, 0.3]

    static func double(_ random: inout SeededRandom) -> Double { doubles[Int(random.next() % UInt64(doubles.count))] }

    static func optional<T>(_ random: inout SeededRandom, _ make: (inout SeededRandom) -> T) -> T? {
        random.next() % 3 == 0 ? nil : make(&random)
    }

    static func data(_ random: inout SeededRandom) -> Data {
        switch random.next() % 12 {
        case 0: return Data()
        case 1: return Data(random.bytes(70_000 + Int(random.next() % 1000)))
        default: return Data(random.bytes(Int(random.next() % 20)))
        }
    }

    static func date(_ random: inout SeededRandom) -> Date {
        switch random.next() % 5 {
        case 0: return Date(timeIntervalSinceReferenceDate: 0)
        case 1: return Date(timeIntervalSinceReferenceDate: -0.0)
        case 2: return Date(timeIntervalSince1970: 1_700_000_000.123456789)
        case 3: return Date(timeIntervalSinceReferenceDate: Double(bitPattern: 0x41C6_0000_0000_0001))
        default: return Date(timeIntervalSinceReferenceDate: 1e-7)
        }
    }

    static func meta(_ random: inout SeededRandom) -> HAMeta {
        HAMeta(a: Int(random.next() % 3) - 1, b: (0..<Int(random.next() % 3)).map { _ in words[Int(random.next() % 4)] })
    }

    static let uuids = [UUID(uuidString: "00000000-0000-0000-0000-000000000000")!, UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!]
    static let counts: [Int] = [0, -1, 1, .max, .min, 42]

    // MARK: Writers

    /// A store write's transaction or a context: the same calls.
    enum Writer {
        case transaction(Store.WriteTransaction)
        case context(Context)

        func insert(_ rec: Rec) throws -> UInt64 {
            switch (self, rec) {
            case (.transaction(let t), .owner(let r)): try t.insert(r).rawValue
            case (.transaction(let t), .tag(let r)): try t.insert(r).rawValue
            case (.transaction(let t), .item(let r)): try t.insert(r).rawValue
            case (.transaction(let t), .special(let r)): try t.insert(r).rawValue
            case (.transaction(let t), .plain(let r)): try t.insert(r).rawValue
            case (.context(let c), .plain(let r)): try c.insert(r).rawValue
            case (.context(let c), .owner(let r)): try c.insert(r).rawValue
            case (.context(let c), .tag(let r)): try c.insert(r).rawValue
            case (.context(let c), .item(let r)): try c.insert(r).rawValue
            case (.context(let c), .special(let r)): try c.insert(r).rawValue
            }
        }

        func update(_ id: UInt64, _ rec: Rec) throws {
            switch (self, rec) {
            case (.transaction(let t), .owner(let r)): try t.update(RecordID<HAOwner>(rawValue: id), to: r)
            case (.transaction(let t), .tag(let r)): try t.update(RecordID<HATag>(rawValue: id), to: r)
            case (.transaction(let t), .item(let r)): try t.update(RecordID<HAItem>(rawValue: id), to: r)
            case (.transaction(let t), .special(let r)): try t.update(RecordID<HASpecial>(rawValue: id), to: r)
            case (.transaction(let t), .plain(let r)): try t.update(RecordID<HAPlain>(rawValue: id), to: r)
            case (.context(let c), .plain(let r)): try c.update(RecordID<HAPlain>(rawValue: id), to: r)
            case (.context(let c), .owner(let r)): try c.update(RecordID<HAOwner>(rawValue: id), to: r)
            case (.context(let c), .tag(let r)): try c.update(RecordID<HATag>(rawValue: id), to: r)
            case (.context(let c), .item(let r)): try c.update(RecordID<HAItem>(rawValue: id), to: r)
            case (.context(let c), .special(let r)): try c.update(RecordID<HASpecial>(rawValue: id), to: r)
            }
        }

        func delete(_ key: Key, entity: String) throws {
            switch (self, entity) {
            case (.transaction(let t), "HAOwner"): _ = try t.delete(RecordID<HAOwner>(rawValue: key.id))
            case (.transaction(let t), "HATag"): _ = try t.delete(RecordID<HATag>(rawValue: key.id))
            case (.transaction(let t), "HAItem"): _ = try t.delete(RecordID<HAItem>(rawValue: key.id))
            case (.transaction(let t), "HAPlain"): _ = try t.delete(RecordID<HAPlain>(rawValue: key.id))
            case (.context(let c), "HAPlain"): try c.delete(RecordID<HAPlain>(rawValue: key.id))
            case (.transaction(let t), _): _ = try t.delete(RecordID<HASpecial>(rawValue: key.id))
            case (.context(let c), "HAOwner"): try c.delete(RecordID<HAOwner>(rawValue: key.id))
            case (.context(let c), "HATag"): try c.delete(RecordID<HATag>(rawValue: key.id))
            case (.context(let c), "HAItem"): try c.delete(RecordID<HAItem>(rawValue: key.id))
            case (.context(let c), _): try c.delete(RecordID<HASpecial>(rawValue: key.id))
            }
        }

        /// The record as this writer reads it now (nil: none).
        func read(_ key: Key, entity: String) throws -> Rec? {
            switch (self, entity) {
            case (.transaction(let t), "HAOwner"): try t.record(for: RecordID<HAOwner>(rawValue: key.id)).map(Rec.owner)
            case (.transaction(let t), "HATag"): try t.record(for: RecordID<HATag>(rawValue: key.id)).map(Rec.tag)
            case (.transaction(let t), "HAItem"): try t.record(for: RecordID<HAItem>(rawValue: key.id)).map(Rec.item)
            case (.transaction(let t), "HAPlain"): try t.record(for: RecordID<HAPlain>(rawValue: key.id)).map(Rec.plain)
            case (.context(let c), "HAPlain"): try c.record(for: RecordID<HAPlain>(rawValue: key.id)).map(Rec.plain)
            case (.transaction(let t), _): try t.record(for: RecordID<HASpecial>(rawValue: key.id)).map(Rec.special)
            case (.context(let c), "HAOwner"): try c.record(for: RecordID<HAOwner>(rawValue: key.id)).map(Rec.owner)
            case (.context(let c), "HATag"): try c.record(for: RecordID<HATag>(rawValue: key.id)).map(Rec.tag)
            case (.context(let c), "HAItem"): try c.record(for: RecordID<HAItem>(rawValue: key.id)).map(Rec.item)
            case (.context(let c), _): try c.record(for: RecordID<HASpecial>(rawValue: key.id)).map(Rec.special)
            }
        }
    }

    /// The keys of `view`'s records of `family`, sorted.
    static func keys(_ view: [Key: Rec], family: Int) -> [Key] { view.keys.filter { $0.family == family }.sorted() }

    static func pick<T>(_ array: [T], _ random: inout SeededRandom) -> T? {
        array.isEmpty ? nil : array[Int(random.next() % UInt64(array.count))]
    }

    static func subset(_ keys: [Key], _ random: inout SeededRandom, max: Int = 3) -> [Key] {
        var result: [Key] = []
        for _ in 0..<Int(random.next() % UInt64(max + 1)) { if let k = pick(keys, &random), !result.contains(k) { result.append(k) } }
        return result
    }

    /// A random new item-like record referring to records of `view`.
    static func newItem(_ view: [Key: Rec], special: Bool, _ random: inout SeededRandom) -> Rec {
        let owner = random.next() % 2 == 0 ? pick(keys(view, family: 0), &random).map { RecordID<HAOwner>(rawValue: $0.id) } : nil
        let tags = subset(keys(view, family: 1), &random).map { RecordID<HATag>(rawValue: $0.id) }
        let name = string(&random), score = double(&random), ratio = optional(&random, double), blob = optional(&random, data)
        let when = optional(&random, date), meta = optional(&random, meta), count = pick(counts, &random)!, flag = random.next() % 2 == 0
        let uid = optional(&random) { pick(uuids, &$0)! }
        if special {
            let extra = optional(&random, string)
            return .special(HASpecial(name: name, score: score, ratio: ratio, blob: blob, when: when, meta: meta, count: count, flag: flag,
                                      uid: uid, owner: owner, tags: tags, level: Int8(truncatingIfNeeded: Int(random.next() % 256) - 128), extra: extra))
        }
        return .item(HAItem(name: name, score: score, ratio: ratio, blob: blob, when: when, meta: meta, count: count, flag: flag, uid: uid,
                            owner: owner, tags: tags))
    }

    /// A changed copy of `rec` (often changing nothing, or one field, or a relationship).
    static func mutate(_ rec: Rec, _ view: [Key: Rec], _ random: inout SeededRandom) -> Rec {
        guard random.next() % 6 != 0 else { return rec }  // an update that changes nothing
        let fresh: Rec
        switch rec {
        case .owner: fresh = .owner(HAOwner(title: string(&random), items: subset(keys(view, family: 2), &random).map { RecordID(rawValue: $0.id) }))
        case .tag:
            fresh = .tag(HATag(label: string(&random), weight: optional(&random) { Float(bitPattern: UInt32(truncatingIfNeeded: $0.next())) },
                               items: subset(keys(view, family: 2), &random).map { RecordID(rawValue: $0.id) }))
        case .item: fresh = newItem(view, special: false, &random)
        case .special: fresh = newItem(view, special: true, &random)
        case .plain: fresh = newPlain(&random)
        }
        let fields = Int(random.next() % 13)
        switch (rec, fresh) {
        case (.owner(var r), .owner(let f)):
            if fields % 2 == 0 { r.title = f.title }
            if random.next() % 4 == 0 { r.items = f.items }  // changed from the to-many side
            else if random.next() % 4 == 0 { r.items.reverse() }  // reordered only
            return .owner(r)
        case (.tag(var r), .tag(let f)):
            if fields % 2 == 0 { r.label = f.label }
            if fields % 3 == 0 { r.weight = f.weight }
            if random.next() % 4 == 0 { r.items = f.items }
            return .tag(r)
        case (.item(var r), .item(let f)):
            switch fields {
            case 0: r.name = f.name
            case 1: r.score = f.score
            case 2: r.ratio = f.ratio
            case 3: r.blob = f.blob
            case 4: r.when = f.when
            case 5: r.meta = f.meta
            case 6: r.count = f.count
            case 7: r.flag.toggle()
            case 8: r.uid = f.uid
            case 9: r.owner = f.owner
            case 10: r.tags = f.tags
            case 11: r.tags.reverse()
            default: r = f
            }
            return .item(r)
        case (.special(var r), .special(let f)):
            switch fields {
            case 0: r.name = f.name
            case 1: r.score = f.score
            case 2: r.ratio = f.ratio
            case 3: r.blob = f.blob
            case 4: r.extra = f.extra
            case 5: r.meta = f.meta
            case 6: r.level = f.level
            case 7: r.flag.toggle()
            case 8: r.uid = f.uid
            case 9: r.owner = f.owner
            case 10: r.tags = f.tags
            case 11: r.when = f.when
            default: r = f
            }
            return .special(r)
        case (.plain(var r), .plain(let f)):
            if fields % 2 == 0 { r.text = f.text }
            if fields % 3 == 0 { r.number = f.number }
            if fields % 4 == 1 { r.payload = f.payload }
            return .plain(r)
        default: preconditionFailure()
        }
    }

    static func newPlain(_ random: inout SeededRandom) -> Rec {
        .plain(HAPlain(text: string(&random), number: optional(&random, double), payload: optional(&random, data)))
    }

    /// The records one change of `key` (from `before`, to `rec` or deleted) can touch.
    static func affected(_ key: Key, _ rec: Rec?, _ before: [Key: Rec]) -> Set<Key> {
        var result: Set<Key> = [key]
        func references(_ rec: Rec?) -> [Key] {
            switch rec {
            case .owner(let r)?: r.items.map { Key(family: 2, id: $0.rawValue) }
            case .tag(let r)?: r.items.map { Key(family: 2, id: $0.rawValue) }
            case .item(let r)?: (r.owner.map { [Key(family: 0, id: $0.rawValue)] } ?? []) + r.tags.map { Key(family: 1, id: $0.rawValue) }
            case .special(let r)?: (r.owner.map { [Key(family: 0, id: $0.rawValue)] } ?? []) + r.tags.map { Key(family: 1, id: $0.rawValue) }
            default: []
            }
        }
        var level = references(before[key]) + references(rec)
        result.formUnion(level)
        // One more level: an item moved to another owner leaves its old owner; a cascade's
        // items leave their tags.
        for _ in 0..<2 {
            let next = level.flatMap { references(before[$0]) }
            result.formUnion(next)
            level = next
        }
        return result
    }

    // MARK: The model-based test

    @Test func journalMatchesTheDataOnIrregularRecordsAndRelationships() throws {
        let seed = SeededRandom.seed(default: 0x5EED_4157_0001)
        print("HistoryAdversaryTests.journalMatchesTheData seed \(seed) (STRATA_TEST_SEED)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var store = try Self.open(folder)
        let transactionCount = 480
        var state: [Key: Rec] = [:]
        var journal: [ModelTransaction] = []
        var lastToken: UInt64 = 0
        var stats: [String: Int] = [:]
        var queries = 0

        for step in 0..<transactionCount {
            let where_ = "transaction \(step), seed \(seed)"
            let author = Self.authors[Int(random.next() % UInt64(Self.authors.count))]
            let viaContext = random.next() % 2 == 0
            let operations = 1 + Int(random.next() % 5)
            var groups: [[ModelChange]] = []
            var failed = false
            let before = state

            if viaContext {
                let context = Context(store, author: author)
                var view = state  // as the context reads: the values it was given
                for _ in 0..<operations {
                    try Self.operate(.context(context), &view, &random, &stats) { _, _, modelled in modelled }
                }
                do {
                    try context.save()
                } catch {
                    stats["save error", default: 0] += 1
                    print("save refused (\(where_)): \(error)")
                    failed = true
                }
                if !failed {
                    let after = try Self.storedState(store)
                    let changes = Self.diff(before, after, keys: Set(before.keys).union(after.keys))
                    if !changes.isEmpty { groups = [changes] }
                    state = after
                }
            } else {
                do {
                    groups = try store.write(author: author) { transaction in
                        var view = state
                        var groups: [[ModelChange]] = []
                        for _ in 0..<operations {
                            let writer = Writer.transaction(transaction)
                            try Self.operate(writer, &view, &random, &stats) { keys, viewBefore, modelled in
                                // The state after this call, read back for the records it can touch.
                                var viewAfter = viewBefore
                                for key in keys {
                                    let entity = viewBefore[key]?.entity ?? modelled[key]?.entity
                                    guard let entity else { continue }
                                    viewAfter[key] = try writer.read(key, entity: entity)
                                }
                                let changes = Self.diff(viewBefore, viewAfter, keys: keys)
                                if !changes.isEmpty { groups.append(changes) }
                                return viewAfter
                            }
                        }
                        return groups
                    }
                } catch {
                    stats["write error", default: 0] += 1
                    print("write refused (\(where_)): \(error)")
                    failed = true
                    groups = []
                }
                if !failed { state = try Self.storedState(store) }
            }
            Self.checkInverses(state, where_)
            stats[viaContext ? "context" : "write", default: 0] += 1

            let new = try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: lastToken)))
            if groups.isEmpty {
                if !new.isEmpty { Issue.record("a transaction that changed nothing was journaled: \(new[0].changes.map(ModelChange.init)) (\(where_))") }
                stats["empty", default: 0] += 1
            } else if new.count != 1 {
                Issue.record("\(new.count) new journal entries instead of 1 (\(where_))")
            } else {
                var model = ModelTransaction(token: lastToken + 1, author: author, groups: groups, viaContext: viaContext)
                model.microseconds = historyMicroseconds(new[0].timestamp)
                if let previous = journal.last, model.microseconds < previous.microseconds { Issue.record("timestamp decreased (\(where_))") }
                Self.compare(new, [model], where_)
                journal.append(model)
                lastToken += 1
            }
            #expect(try store.currentHistoryToken() == HistoryToken(rawValue: lastToken), "current token (\(where_))")

            if step % 4 == 3 {
                let (descriptor, answer) = Self.randomQuery(journal, lastToken: lastToken, using: &random)
                Self.compare(try store.fetchHistory(descriptor), answer, "query \(queries) \(descriptor.modelDescription), \(where_)")
                queries += 1
            }
            if random.next() % 100 == 0 {
                try store.close()
                store = try Self.open(folder)
                stats["reopen", default: 0] += 1
                #expect(try store.currentHistoryToken() == HistoryToken(rawValue: lastToken), "current token after reopen (\(where_))")
            }
        }
        Self.compare(try store.fetchHistory(), journal, "whole journal, seed \(seed)")
        var reverse = HistoryDescriptor()
        reverse.order = .reverse
        Self.compare(try store.fetchHistory(reverse), journal.reversed(), "whole journal reversed, seed \(seed)")
        try store.close()
        // Reopened, the whole journal once more.
        store = try Self.open(folder)
        Self.compare(try store.fetchHistory(), journal, "whole journal after reopen, seed \(seed)")
        for _ in 0..<300 {
            let (descriptor, answer) = Self.randomQuery(journal, lastToken: lastToken, using: &random)
            Self.compare(try store.fetchHistory(descriptor), answer, "final query \(descriptor.modelDescription), seed \(seed)")
        }
        try store.close()
        print("HistoryAdversaryTests: \(stats.sorted { $0.key < $1.key }), \(journal.count) journaled, \(journal.reduce(0) { $0 + $1.changeCount }) changes, \(queries) queries")
    }

    /// One random insert, update or delete through `writer` on `view` (what the writer reads);
    /// `after(keys, viewBefore)` is called after the call with the records it can touch.
    static func operate(_ writer: Writer, _ view: inout [Key: Rec], _ random: inout SeededRandom, _ stats: inout [String: Int],
                        after: (Set<Key>, [Key: Rec], [Key: Rec]) throws -> [Key: Rec]) throws {
        let viewBefore = view
        let roll = random.next() % 20
        if roll < 7 || view.isEmpty {
            if random.next() % 4 == 0 {
                // A run of inserts of an entity without relationships (the bulk path), maybe
                // followed at once by a change of one of them.
                for _ in 0..<(1 + Int(random.next() % 4)) {
                    let before = view
                    let rec = newPlain(&random)
                    let id = try writer.insert(rec)
                    let key = Key(family: 3, id: id)
                    if view[key] != nil { Issue.record("id \(key) reused") }
                    view[key] = rec
                    stats["plain insert", default: 0] += 1
                    view = try after([key], before, view)
                }
                return
            }
            let rec: Rec = switch random.next() % 6 {
            case 0: .owner(HAOwner(title: string(&random), items: subset(keys(view, family: 2), &random, max: 2).map { RecordID(rawValue: $0.id) }))
            case 1: .tag(HATag(label: string(&random), weight: optional(&random) { _ in Float.nan }, items: []))
            case 2: newItem(view, special: true, &random)
            default: newItem(view, special: false, &random)
            }
            let id = try writer.insert(rec)
            let key = Key(family: family(rec.entity), id: id)
            if view[key] != nil { Issue.record("id \(key) reused") }
            view[key] = rec
            stats["insert", default: 0] += 1
            view = try after(affected(key, rec, viewBefore), viewBefore, view)
            // Now and then the record just inserted is updated or deleted in the same transaction.
            if random.next() % 6 == 0 {
                let before2 = view
                if random.next() % 2 == 0 {
                    let changed = mutate(rec, view, &random)
                    try writer.update(id, changed)
                    view[key] = changed
                    stats["update of a new record", default: 0] += 1
                    view = try after(affected(key, changed, before2), before2, view)
                } else {
                    try writer.delete(key, entity: rec.entity)
                    view[key] = nil
                    stats["delete of a new record", default: 0] += 1
                    view = try after(affected(key, nil, before2), before2, view)
                }
            }
        } else if roll < 15 {
            let key = pick(view.keys.sorted(), &random)!
            let rec = try writer.read(key, entity: view[key]!.entity) ?? view[key]!
            let changed = mutate(rec, view, &random)
            try writer.update(key.id, changed)
            view[key] = changed
            stats["update", default: 0] += 1
            view = try after(affected(key, changed, viewBefore), viewBefore, view)
        } else {
            let key = pick(view.keys.sorted(), &random)!
            try writer.delete(key, entity: view[key]!.entity)
            view[key] = nil
            stats["delete", default: 0] += 1
            view = try after(affected(key, nil, viewBefore), viewBefore, view)
        }
        // A context's view: references to records deleted in it are dropped from later choices
        // (they are gone from `view`); a store write's view is read back by `after`.
    }

    // MARK: Queries

    static func selected(_ names: Set<String>?) -> Set<String>? {
        names.map { $0.contains("HAItem") ? $0.union(["HASpecial"]) : $0 }
    }

    static func randomQuery(_ journal: [ModelTransaction], lastToken: UInt64, using random: inout SeededRandom) -> (HistoryDescriptor, [ModelTransaction]) {
        let (descriptor, untilMicroseconds) = HistoryDescriptor.random(journal, lastToken: lastToken, entities: entities, entityOdds: 3,
                                                                       fallbackEntities: 4, authors: authors, using: &random)

        let selected = selected(descriptor.entityNames)
        let answer = descriptor.modelAnswer(journal, untilMicroseconds: untilMicroseconds, selected: selected)
        return (descriptor, answer)
    }

    nonisolated(unsafe) static var reported = 0

    /// Records an issue for each difference between the journal's answer and the model's.
    static func compare(_ actual: [HistoryTransaction], _ expected: some Collection<ModelTransaction>, _ where_: String) {
        guard actual.map(\.token.rawValue) == expected.map(\.token) else {
            Issue.record("tokens \(actual.map(\.token.rawValue)) instead of \(expected.map(\.token)) (\(where_))")
            return
        }
        for (transaction, model) in zip(actual, expected) {
            let at = "token \(model.token) (\(where_))"
            if transaction.author != model.author { Issue.record("author \(String(describing: transaction.author)) instead of \(String(describing: model.author)), \(at)") }
            if transaction.schemaVersion != nil { Issue.record("schema version, \(at)") }
            if model.microseconds != 0, historyMicroseconds(transaction.timestamp) != model.microseconds { Issue.record("timestamp, \(at)") }
            let changes = transaction.changes.map(ModelChange.init)
            var ok = changes.count == model.changeCount
            if ok {
                var offset = 0
                for group in model.groups {
                    let slice = Array(changes[offset..<offset + group.count])
                    offset += group.count
                    // Order within a group is checked by shape only: match as a multiset.
                    var remaining = slice
                    for wanted in group {
                        if let index = remaining.firstIndex(where: { $0.matches(wanted) }) { remaining.remove(at: index) } else { ok = false }
                    }
                    if model.viaContext {
                        var seen: [String] = []
                        for change in slice where seen.last != change.entity {
                            if seen.contains(change.entity) { Issue.record("an entity's changes are not together, \(at)") }
                            seen.append(change.entity)
                        }
                        for entity in seen {
                            let entityChanges = slice.filter { $0.entity == entity }
                            let deletes = entityChanges.prefix { $0.kind == .delete }
                            let rest = entityChanges.dropFirst(deletes.count)
                            if rest.contains(where: { $0.kind == .delete }) || deletes.map(\.id) != deletes.map(\.id).sorted()
                                || rest.map(\.id) != rest.map(\.id).sorted() {
                                Issue.record("save order: \(entityChanges.map { "\($0.kind) \($0.id)" }), \(at)")
                            }
                        }
                    }
                }
            }
            if !ok {
                reported += 1
                if reported <= 12 {
                    Issue.record("changes differ, \(at)\n  journal:\n    \(changes.map(\.description).joined(separator: "\n    "))\n  expected (groups):\n    \(model.groups.map { $0.map(\.description).joined(separator: "\n    ") }.joined(separator: "\n    --\n    "))")
                } else {
                    Issue.record("changes differ, \(at)")
                }
            }
            for change in transaction.changes {
                let isItem = change.entityName == "HAItem" || change.entityName == "HASpecial"
                if (change.recordID(as: HAItem.self) != nil) != isItem { Issue.record("recordID(as: HAItem), \(at)") }
                if (change.recordID(as: HASpecial.self) != nil) != (change.entityName == "HASpecial") { Issue.record("recordID(as: HASpecial), \(at)") }
            }
        }
    }

    // MARK: Strings that Swift compares equal

    /// Canonically equivalent strings ("é" precomposed and decomposed) count as unchanged
    /// (Value's ==), although the stored bytes change: the journal then reports, at the next
    /// change, an old value no transaction ever wrote.
    @Test func canonicallyEquivalentStringUpdate() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        let id = try store.write(author: "app") { try $0.insert(HAPlain(text: composed)) }
        // Through a context, then through a store write.
        let context = Context(store, author: "app")
        try context.update(id, to: HAPlain(text: decomposed))
        try context.save()
        let afterContext = try #require(try Context(store).record(for: id)).text
        let tokenAfterContext = try store.currentHistoryToken()
        try store.write(author: "app") { try $0.update(id, to: HAPlain(text: composed)) }
        let afterWrite = try #require(try Context(store).record(for: id)).text
        let tokenAfterWrite = try store.currentHistoryToken()
        try store.write(author: "app") { try $0.update(id, to: HAPlain(text: "x")) }
        let history = try store.fetchHistory()
        print("canonically equivalent: stored after the context save \(Array(afterContext.unicodeScalars.map(\.value))), token \(tokenAfterContext); after the write \(Array(afterWrite.unicodeScalars.map(\.value))), token \(tokenAfterWrite); journal \(history.map { "\($0.token): \($0.changes.map(ModelChange.init))" })")
        // What the code does (Value's ==): no entry for either update.
        #expect(tokenAfterContext == HistoryToken(rawValue: 1))
        #expect(tokenAfterWrite == HistoryToken(rawValue: 1))
        try store.close()
    }

    // MARK: Retention never leaves a silent gap

    /// Random commits, consumers moving their cursors (sometimes backwards, sometimes past the
    /// newest token), deleteHistory, reopen with the journal off for a commit, and small size or
    /// age limits: after each step, every kept transaction is exactly what was committed, reads
    /// after a token the journal no longer covers throw historyTruncated, and with consumers and
    /// no limits the oldest token is exactly where the slowest consumer (or deleteHistory) left it.
    @Test(arguments: [0, 1, 2]) func retentionNeverLeavesASilentGap(limits: Int) throws {
        let seed = SeededRandom.seed(default: 0x7E7E_0000 + UInt64(limits))
        print("HistoryAdversaryTests.retention(\(limits)) seed \(seed) (STRATA_TEST_SEED)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        func open(journal: Bool = true) throws -> Store {
            try Self.open(folder) { configuration in
                configuration.history.isEnabled = journal
                switch limits {
                case 0: configuration.history.maximumAge = nil; configuration.history.maximumBytes = nil
                case 1: configuration.history.maximumAge = nil; configuration.history.maximumBytes = 6_000
                default: configuration.history.maximumAge = .milliseconds(3); configuration.history.maximumBytes = nil
                }
            }
        }
        var store = try open()
        /// token → (author, number of changes) of every journaled transaction.
        var committed: [UInt64: (String?, Int)] = [:]
        var lastToken: UInt64 = 0
        var cursors: [String: UInt64] = [:]
        var deletedBefore: UInt64 = 0  // horizon that deleteHistory (and journal-off commits) forced
        var oldestSeen: UInt64 = 0
        var truncatedReads = 0, completeReads = 0
        var ids: [RecordID<HAPlain>] = []
        var offTokens: Set<UInt64> = []
        var previousOldest: UInt64 = 0

        for step in 0..<220 {
            let where_ = "step \(step), seed \(seed)"
            let operation = random.next() % 10
            let pruned = operation < 7  // a commit or setHistoryCursor prunes
            switch operation {
            case 0..<6:
                let author = ["a", "b", nil][Int(random.next() % 3)]
                let count = 1 + Int(random.next() % 3)
                try store.write(author: author) { transaction in
                    for _ in 0..<count {
                        if !ids.isEmpty, random.next() % 3 == 0 {
                            try transaction.update(ids[Int(random.next() % UInt64(ids.count))],
                                                   to: HAPlain(text: String(repeating: "u", count: Int(random.next() % 300)) + "\(step)"))
                        } else {
                            ids.append(try transaction.insert(HAPlain(text: String(repeating: "v", count: Int(random.next() % 200)), number: 1)))
                        }
                    }
                }
                lastToken += 1
                committed[lastToken] = (author, count)
            case 6:
                let name = ["sync", "widget", "ext"][Int(random.next() % 3)]
                let token = random.next() % 8 == 0 ? lastToken + 5 : random.next() % (lastToken + 1)
                do {
                    try store.setHistoryCursor(HistoryToken(rawValue: token), for: name)
                    // A cursor past the newest token is kept as the newest token.
                    cursors[name] = min(token, lastToken)
                    let stored = try store.historyCursor(for: name)?.rawValue
                    if stored != min(token, lastToken) { Issue.record("cursor \(String(describing: stored)) after setting \(token), newest \(lastToken) (\(where_))") }
                } catch {
                    print("setHistoryCursor(\(token)) for \(name) with newest \(lastToken): \(error) (\(where_))")
                }
            case 7:
                if let name = cursors.keys.sorted().first, random.next() % 2 == 0 {
                    try store.removeHistoryConsumer(name)
                    cursors[name] = nil
                } else if lastToken > 0 {
                    let before = 1 + random.next() % lastToken
                    try store.deleteHistory(before: HistoryToken(rawValue: before))
                    deletedBefore = max(deletedBefore, before - 1)
                }
            case 8:
                try store.close()
                store = try open(journal: false)
                _ = try store.write(author: "off") { try $0.insert(HAPlain(text: "off")) }
                try store.close()
                store = try open()
                let current = try store.currentHistoryToken().rawValue
                let oldest = try store.oldestHistoryToken().rawValue
                // The unjournaled commit takes a token of its own (current moves on), and the
                // horizon moves past it.
                if current != lastToken + 1 && !(limits == 2 && lastToken == 0) { Issue.record("current token \(current) after a commit with the journal off, \(lastToken) before (\(where_))") }
                if oldest < current { Issue.record("oldest token \(oldest) after a commit with the journal off at \(current): readers miss it silently (\(where_))") }
                lastToken = current
                offTokens.insert(current)
                deletedBefore = max(deletedBefore, oldest)
            default:
                try store.close()
                store = try open()
            }

            let oldest = try store.oldestHistoryToken().rawValue
            let current = try store.currentHistoryToken().rawValue
            if current != lastToken { Issue.record("current token \(current) instead of \(lastToken) (\(where_))") }
            if oldest < oldestSeen { Issue.record("oldest token went back from \(oldestSeen) to \(oldest) (\(where_))") }
            oldestSeen = max(oldestSeen, oldest)
            if oldest < deletedBefore { Issue.record("oldest token \(oldest) before the deleted horizon \(deletedBefore) (\(where_))") }
            if limits == 0 {
                // Only consumers and deleteHistory delete: nothing a registered consumer has not
                // passed goes (deletion is for good: a cursor moved back does not bring it back),
                // and what every consumer passed goes at the next prune.
                let passed = cursors.isEmpty ? 0 : min(cursors.values.min()!, lastToken)
                let allowed = max(previousOldest, deletedBefore, passed)
                if oldest > allowed {
                    Issue.record("oldest token \(oldest), at most \(allowed) expected: history a consumer had not passed was deleted (cursors \(cursors.sorted { $0.key < $1.key }), deleted before \(deletedBefore), newest \(lastToken)) (\(where_))")
                }
                if pruned, !cursors.isEmpty, oldest < passed {
                    Issue.record("oldest token \(oldest): history every consumer passed (through \(passed)) was kept (\(where_))")
                }
            }
            previousOldest = oldest
            // Every kept transaction, in order, without a gap, as committed.
            let kept = try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: oldest)))
            let keptTokens = kept.map(\.token.rawValue)
            if keptTokens != (oldest < lastToken ? Array((oldest + 1)...lastToken) : []) {
                Issue.record("after the oldest token \(oldest): tokens \(keptTokens.prefix(5))…\(keptTokens.suffix(3)), newest \(lastToken) (\(where_))")
            }
            for transaction in kept {
                if let (author, count) = committed[transaction.token.rawValue] {
                    if transaction.author != author || transaction.changes.count != count {
                        Issue.record("token \(transaction.token): author \(String(describing: transaction.author)) with \(transaction.changes.count) changes instead of \(String(describing: author)) with \(count) (\(where_))")
                    }
                } else {
                    Issue.record("token \(transaction.token) was never committed (\(where_))")
                }
            }
            // Every consumer, and a few random readers: complete or historyTruncated.
            var readers = Array(cursors.values)
            readers.append(random.next() % (lastToken + 1))
            for after in readers {
                do {
                    let result = try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: after)))
                    let expected = after >= lastToken ? [] : Array((after + 1)...lastToken)
                    if result.map(\.token.rawValue) != expected {
                        Issue.record("read after \(after): \(result.count) transactions \(result.first.map { "\($0.token)" } ?? "-")…, expected \(expected.count) (oldest \(oldest)) (\(where_))")
                    }
                    if after < oldest { Issue.record("read after \(after) < oldest \(oldest) did not throw (\(where_))") }
                    completeReads += 1
                } catch StrataError.historyTruncated(let requested, let oldestAvailable) {
                    if after >= oldest { Issue.record("read after \(after) threw truncated though oldest is \(oldest) (\(where_))") }
                    if requested.rawValue != after || oldestAvailable.rawValue != oldest {
                        Issue.record("historyTruncated(\(requested), \(oldestAvailable)) for a read after \(after), oldest \(oldest) (\(where_))")
                    }
                    truncatedReads += 1
                }
            }
        }
        print("retention(\(limits)): newest \(lastToken), oldest \(try store.oldestHistoryToken()), \(completeReads) complete reads, \(truncatedReads) truncated")
        try store.close()
    }

    // MARK: Observers

    actor Collected {
        var tokens: [UInt64] = []
        var authors: [String?] = []
        var entities: [Set<String>] = []
        func append(_ t: HistoryTransaction) {
            tokens.append(t.token.rawValue)
            authors.append(t.author)
            entities.append(Set(t.changes.map(\.entityName)))
        }
        var ended: Bool { authors.last == "end" }
    }

    /// Observers (all, filtered by entity and excluded author, by authors, and one started in
    /// the middle) see each journaled transaction they select exactly once, in order, while
    /// another task writes through contexts and store writes, some changing nothing.
    @Test func observersSeeEachTransactionOnceInOrderWhileAnotherTaskWrites() async throws {
        let seed = SeededRandom.seed(default: 0x0B5E_7E0)
        print("HistoryAdversaryTests.observers seed \(seed) (STRATA_TEST_SEED)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        // Some history before the observers start.
        for index in 0..<5 { try await store.write(author: "app") { _ = try $0.insert(HAPlain(text: "before \(index)")) } }
        let middle = HistoryToken(rawValue: 3)

        func observe(_ sequence: HistoryObserver, into collected: Collected) -> Task<Void, any Error> {
            Task {
                for try await transaction in sequence {
                    await collected.append(transaction)
                    if transaction.author == "end" { return }
                }
            }
        }
        let all = Collected(), filtered = Collected(), byAuthor = Collected(), late = Collected()
        let tasks = [
            observe(store.observeHistory(after: .start), into: all),
            observe(store.observeHistory(after: .start, entities: [HAItem.self, HAPlain.self], excludedAuthors: ["widget"]), into: filtered),
            observe(store.observeHistory(after: .start, authors: ["sync", "end"]), into: byAuthor),
            observe(store.observeHistory(after: middle, entities: [HASpecial.self, HAPlain.self]), into: late),
        ]
        let writer = Task {
            var random = SeededRandom(seed: seed)
            for step in 0..<250 {
                let author = ["app", "sync", "widget", nil][Int(random.next() % 4)]
                switch random.next() % 4 {
                case 0:
                    let context = Context(store, author: author)
                    _ = try context.insert(HAItem(name: "i\(step)", score: .nan, count: step, flag: false))
                    try await context.save()
                case 1:
                    try await store.write(author: author) { _ = try $0.insert(HASpecial(name: "s", score: -0.0, count: 1, flag: true, level: 1)) }
                case 2:
                    // Changes nothing: no transaction.
                    try await store.write(author: author) { transaction in
                        try transaction.update(RecordID<HAPlain>(rawValue: 1), to: HAPlain(text: "before 0"))
                    }
                default:
                    try await store.write(author: author) { _ = try $0.insert(HAOwner(title: "o\(step)")) }
                }
                if random.next() % 10 == 0 { await Task.yield() }
            }
            try await store.write(author: "end") { _ = try $0.insert(HAPlain(text: "end")) }
        }
        try await writer.value
        // Wait for the observers, at most 20 s.
        let deadline = ContinuousClock.now + .seconds(20)
        for task in tasks {
            while ContinuousClock.now < deadline {
                var done = true
                for c in [all, filtered, byAuthor, late] where !(await c.ended) { done = false }
                if done { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            task.cancel()
            do { try await task.value } catch { Issue.record("observer threw \(error)") }
        }
        func expected(_ descriptor: HistoryDescriptor) throws -> [UInt64] { try store.fetchHistory(descriptor).map(\.token.rawValue) }
        var d = HistoryDescriptor(after: .start)
        let allTokens = await all.tokens, filteredTokens = await filtered.tokens, byAuthorTokens = await byAuthor.tokens
        let lateTokens = await late.tokens, filteredEntities = await filtered.entities, filteredAuthors = await filtered.authors
        #expect(allTokens == (try expected(d)), "all: \(allTokens.count) transactions")
        d = HistoryDescriptor(after: .start, entities: [HAItem.self, HAPlain.self])
        d.excludedAuthors = ["widget"]
        #expect(filteredTokens == (try expected(d)), "filtered")
        #expect(filteredEntities.allSatisfy { $0.isSubset(of: ["HAItem", "HASpecial", "HAPlain"]) && !$0.isEmpty })
        #expect(!filteredAuthors.contains("widget"))
        d = HistoryDescriptor(after: .start)
        d.authors = ["sync", "end"]
        #expect(byAuthorTokens == (try expected(d)), "by author")
        d = HistoryDescriptor(after: middle, entities: [HASpecial.self, HAPlain.self])
        #expect(lateTokens == (try expected(d)), "late")
        #expect(allTokens.count > 150)
        try store.close()
    }

    // MARK: Migrations

    /// HAPlain v2: `text` renamed `body` (originalAttributeNames), an optional attribute added.
    struct HAPlainV2: PersistentRecord {
        var body: String
        var number: Double?
        var payload: Data?
        var added: Int?
        static var entityName: String { "HAPlain" }
        static var originalAttributeNames: [String: String] { ["body": "text"] }
        static var attributeOptions: [String: Attribute.Options] { ["body": [.preserveValueOnDeletion], "number": [.preserveValueOnDeletion]] }
    }

    /// A lightweight migration is one transaction authored "migration" with the new schema
    /// version and no changes; tokens continue; old transactions show the renamed attribute
    /// under its new name; entity filters leave the migration out.
    @Test func aLightweightMigrationKeepsTokensAndRenamesOldChanges() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var store = try Self.open(folder)
        let id = try store.write(author: "app") { try $0.insert(HAPlain(text: "a", number: -0.0)) }
        try store.write(author: "app") { try $0.update(id, to: HAPlain(text: "b", number: 0.0)) }
        let other = try store.write(author: "app") { try $0.insert(HAPlain(text: "gone", number: .nan)) }
        try store.write(author: "app") { _ = try $0.delete(other) }
        try store.write(author: "app") { _ = try $0.insert(HATag(label: "t")) }
        try store.close()

        store = try Store(at: folder, for: [HAOwner.self, HATag.self, HAItem.self, HASpecial.self, HAPlainV2.self],
                          version: Schema.Version(1, 1, 0))
        let history = try store.fetchHistory()
        #expect(history.map(\.token.rawValue) == [1, 2, 3, 4, 5, 6])
        let migration = try #require(history.last)
        #expect(migration.author == "migration")
        #expect(migration.schemaVersion == Schema.Version(1, 1, 0))
        #expect(migration.changes.isEmpty)
        #expect(migration.timestamp >= history[4].timestamp)
        let update = try #require(history[1].changes.first)
        #expect(update.updatedAttributes.map(\.name).sorted() == ["body", "number"], "\(update.updatedAttributes)")
        #expect(update.updatedAttributes.first { $0.name == "number" }.map { $0.oldValue == .double(-0.0) && $0.newValue == .double(0.0) } == true)
        let delete = try #require(history[3].changes.first)
        #expect(delete.tombstone.keys.sorted() == ["body", "number"], "\(delete.tombstone)")
        #expect(delete.tombstone["number"] == .double(.nan))
        #expect(try store.fetchHistory(HistoryDescriptor(after: nil, entities: [HAPlainV2.self])).map(\.token.rawValue) == [1, 2, 3, 4])
        #expect(try store.fetchHistory(HistoryDescriptor(after: nil, entities: [HATag.self])).map(\.token.rawValue) == [5])
        // Writes continue after it; a reopen keeps the numbering.
        try store.write(author: "app") { try $0.update(RecordID<HAPlainV2>(rawValue: id.rawValue), to: HAPlainV2(body: "c", number: 0.0, added: 7)) }
        try store.close()
        store = try Store(at: folder, for: [HAOwner.self, HATag.self, HAItem.self, HASpecial.self, HAPlainV2.self],
                          version: Schema.Version(1, 1, 0))
        let last = try #require(try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: 6))).first)
        #expect(last.token == HistoryToken(rawValue: 7))
        #expect(last.changes.first?.updatedAttributes.map(\.name).sorted() == ["added", "body"])
        #expect(try store.currentHistoryToken() == HistoryToken(rawValue: 7))
        try store.close()
    }

    /// Docs/History.md: "A commit made that way [journal off] still moves the store's history
    /// horizon past itself, so a reader asking for history across it gets historyTruncated
    /// instead of missing it." Checked for a store's very first commit, and for a later one.
    @Test(arguments: [false, true]) func aCommitWithTheJournalOffIsNeverMissedSilently(afterJournaledCommit: Bool) throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var store = try Self.open(folder)
        if afterJournaledCommit { try store.write(author: "app") { _ = try $0.insert(HAPlain(text: "journaled")) } }
        let before = try store.currentHistoryToken()
        try store.close()
        store = try Self.open(folder) { $0.history.isEnabled = false }
        try store.write(author: "off") { _ = try $0.insert(HAPlain(text: "not journaled")) }
        try store.close()
        store = try Self.open(folder)
        try store.write(author: "app") { _ = try $0.insert(HAPlain(text: "journaled again")) }
        print("journal off after \(before): current \(try store.currentHistoryToken()), oldest \(try store.oldestHistoryToken())")
        #expect(try store.oldestHistoryToken() > before, "the horizon did not move past the unjournaled commit")
        do {
            let missed = try store.fetchHistory(HistoryDescriptor(after: before))
            Issue.record("a reader after \(before) got \(missed.map { "\($0.token) \($0.changes.map(ModelChange.init))" }) without the unjournaled commit, and no historyTruncated")
        } catch StrataError.historyTruncated {}
        try store.close()
    }
}
