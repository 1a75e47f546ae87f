#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

// An outside user's adversarial tests of relationships (Docs/Architecture.md, "Relationships",
// "Inheritance", "Store API"; README "Relationships are properties holding identifiers"),
// checked against a reference model of SwiftData's semantics: inverses kept by both sides,
// delete rules nullify / cascade / deny / no action, sub-entities as sources and destinations,
// through `Context` (unsaved reads, rollback, save) and `Store.write`, with reopens and
// `verify()` between phases. Where Strata documents a deliberate difference from SwiftData
// (a context's reads show the values it was given until `save()`; contradicting changes of one
// save resolved by (entity id, record id)), Strata's documented behaviour is what is tested.
// What it found and is not fixed yet is a `withKnownIssue`, which fails the day it changes:
// an update from a copy read before an earlier save removes the links that save added. It also
// found `danglingReference`'s documentation promising a refusal that a context's save (which,
// as SwiftData's, applies its deletes last and runs their rules) never made: the documentation
// was corrected and the behaviour is tested as it is.

// MARK: - Record types

/// Owner.items ↔ Item.owner (cascade), Owner.favorite ↔ Item.favoredBy (one-to-one, nullify):
/// two relationships between the same pair of entities.
struct RAOwner: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var items: [RecordID<RAItem>] = []
    var favorite: RecordID<RAItem>?
    static let relationshipRules = [
        "items": RelationshipRule(inverse: "owner", deleteRule: .cascade),
        "favorite": RelationshipRule(inverse: "favoredBy"),
    ]
}

/// A sub-entity of RAOwner (a relationship source through inherited relationships).
struct RAVipOwner: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var items: [RecordID<RAItem>] = []
    var favorite: RecordID<RAItem>?
    var extra: Int
    static var parentRecordType: (any PersistentRecord.Type)? { RAOwner.self }
}

struct RAItem: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var owner: RecordID<RAOwner>?
    var favoredBy: RecordID<RAOwner>?
    var labels: [RecordID<RALabel>] = []
    var parts: [RecordID<RAPart>] = []
    var vault: RecordID<RAVault>?
    static let relationshipRules = [
        "owner": RelationshipRule(inverse: "items"),
        "favoredBy": RelationshipRule(inverse: "favorite"),
        "labels": RelationshipRule(inverse: "items"),
        "parts": RelationshipRule(inverse: "item", deleteRule: .cascade),
        "vault": RelationshipRule(inverse: "items"),
    ]
}

/// A sub-entity of RAItem: inserted into RAOwner.items (a to-many of the parent type).
struct RASpecialItem: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var owner: RecordID<RAOwner>?
    var favoredBy: RecordID<RAOwner>?
    var labels: [RecordID<RALabel>] = []
    var parts: [RecordID<RAPart>] = []
    var vault: RecordID<RAVault>?
    var extra: Int
    static var parentRecordType: (any PersistentRecord.Type)? { RAItem.self }
}

/// Label.items ↔ Item.labels, many-to-many; deleting a label is "no action".
struct RALabel: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var items: [RecordID<RAItem>] = []
    static let relationshipRules = ["items": RelationshipRule(inverse: "labels", deleteRule: .noAction)]
}

/// Item.parts → Part (cascade) → Bolt (cascade): a chain of cascades over four entity types.
struct RAPart: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var item: RecordID<RAItem>?
    var bolts: [RecordID<RABolt>] = []
    static let relationshipRules = [
        "item": RelationshipRule(inverse: "parts"),
        "bolts": RelationshipRule(inverse: "part", deleteRule: .cascade),
    ]
}

struct RABolt: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var part: RecordID<RAPart>?
    static let relationshipRules = ["part": RelationshipRule(inverse: "bolts")]
}

/// A sub-entity of RABolt, reached by cascades.
struct RAWasher: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var part: RecordID<RAPart>?
    var extra: Int
    static var parentRecordType: (any PersistentRecord.Type)? { RABolt.self }
}

/// Vault.items ↔ Item.vault; deleting a vault that holds items is denied.
struct RAVault: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var items: [RecordID<RAItem>] = []
    static let relationshipRules = ["items": RelationshipRule(inverse: "vault", deleteRule: .deny)]
}

// Targeted-test types.

/// Self links: next ↔ previous on one entity (cascade along next), and a symmetric to-many
/// that is its own inverse (allowed by `Schema.validate()`).
struct RANode: PersistentRecord, Equatable {
    var label: Int
    var next: RecordID<RANode>?
    var previous: RecordID<RANode>?
    var friends: [RecordID<RANode>] = []
    static let relationshipRules = [
        "next": RelationshipRule(inverse: "previous", deleteRule: .cascade),
        "previous": RelationshipRule(inverse: "next"),
        "friends": RelationshipRule(inverse: "friends"),
    ]
}

/// A required to-one (House.rooms nullifies, Room.house is required).
struct RAHouse: PersistentRecord, Equatable {
    var name: String
    var rooms: [RecordID<RARoom>] = []
    static let relationshipRules = ["rooms": RelationshipRule(inverse: "house")]
}

struct RARoom: PersistentRecord, Equatable {
    var name: String
    var house: RecordID<RAHouse>
    static let relationshipRules = ["house": RelationshipRule(inverse: "rooms")]
}

/// An inverse declared on one side only (SwiftData's `@Relationship(inverse:)` style).
struct RAShelf: PersistentRecord, Equatable {
    var name: String
    var volumes: [RecordID<RAVolume>] = []
    static let relationshipRules = ["volumes": RelationshipRule(inverse: "shelf", deleteRule: .nullify)]
}

struct RAVolume: PersistentRecord, Equatable {
    var title: String
    var shelf: RecordID<RAShelf>?
}

var raTypes: [any PersistentRecord.Type] {
    [RAOwner.self, RAVipOwner.self, RAItem.self, RASpecialItem.self, RALabel.self, RAPart.self, RABolt.self, RAWasher.self,
     RAVault.self, RANode.self, RAHouse.self, RARoom.self, RAShelf.self, RAVolume.self]
}

// MARK: - Reference model (SwiftData semantics)

/// A record as the model sees it: its concrete type, attributes and relationship values.
struct RARec: Equatable {
    var entity: String
    var name: String
    var rank: Int
    var extra: Int?
    var links: [String: [UInt64]]
}

struct RAKey: Hashable, Comparable, CustomStringConvertible {
    var root: String
    var id: UInt64
    static func < (a: RAKey, b: RAKey) -> Bool { (a.root, a.id) < (b.root, b.id) }
    var description: String { "\(root)#\(id)" }
}

struct RARel {
    var name: String
    var destination: String
    var inverse: String
    var toMany: Bool
    var rule: Relationship.DeleteRule
}

enum RAModelError: Error, Equatable {
    case dangling(RAKey, String, RAKey)
    case denied(RAKey, String, Int)
}

/// The types of the randomized tests, each convertible to and from a model record.
protocol RAModeled: PersistentRecord, Equatable {
    static var root: String { get }
    init(_ rec: RARec)
    var rec: RARec { get }
}

private func one<T>(_ links: [String: [UInt64]], _ name: String) -> RecordID<T>? { links[name]?.first.map { RecordID(rawValue: $0) } }
private func many<T>(_ links: [String: [UInt64]], _ name: String) -> [RecordID<T>] { (links[name] ?? []).map { RecordID(rawValue: $0) } }
private func ids<T>(_ value: RecordID<T>?) -> [UInt64] { value.map { [$0.rawValue] } ?? [] }
private func ids<T>(_ value: [RecordID<T>]) -> [UInt64] { value.map(\.rawValue) }

extension RAOwner: RAModeled {
    static var root: String { "RAOwner" }
    init(_ r: RARec) { self.init(name: r.name, rank: r.rank, items: many(r.links, "items"), favorite: one(r.links, "favorite")) }
    var rec: RARec { RARec(entity: "RAOwner", name: name, rank: rank, links: ["items": ids(items), "favorite": ids(favorite)]) }
}
extension RAVipOwner: RAModeled {
    static var root: String { "RAOwner" }
    init(_ r: RARec) {
        self.init(name: r.name, rank: r.rank, items: many(r.links, "items"), favorite: one(r.links, "favorite"), extra: r.extra ?? 0)
    }
    var rec: RARec { RARec(entity: "RAVipOwner", name: name, rank: rank, extra: extra, links: ["items": ids(items), "favorite": ids(favorite)]) }
}
extension RAItem: RAModeled {
    static var root: String { "RAItem" }
    init(_ r: RARec) {
        self.init(name: r.name, rank: r.rank, owner: one(r.links, "owner"), favoredBy: one(r.links, "favoredBy"),
                  labels: many(r.links, "labels"), parts: many(r.links, "parts"), vault: one(r.links, "vault"))
    }
    var rec: RARec {
        RARec(entity: "RAItem", name: name, rank: rank, links: ["owner": ids(owner), "favoredBy": ids(favoredBy), "labels": ids(labels),
                                                                "parts": ids(parts), "vault": ids(vault)])
    }
}
extension RASpecialItem: RAModeled {
    static var root: String { "RAItem" }
    init(_ r: RARec) {
        self.init(name: r.name, rank: r.rank, owner: one(r.links, "owner"), favoredBy: one(r.links, "favoredBy"),
                  labels: many(r.links, "labels"), parts: many(r.links, "parts"), vault: one(r.links, "vault"), extra: r.extra ?? 0)
    }
    var rec: RARec {
        RARec(entity: "RASpecialItem", name: name, rank: rank, extra: extra,
              links: ["owner": ids(owner), "favoredBy": ids(favoredBy), "labels": ids(labels), "parts": ids(parts), "vault": ids(vault)])
    }
}
extension RALabel: RAModeled {
    static var root: String { "RALabel" }
    init(_ r: RARec) { self.init(name: r.name, rank: r.rank, items: many(r.links, "items")) }
    var rec: RARec { RARec(entity: "RALabel", name: name, rank: rank, links: ["items": ids(items)]) }
}
extension RAPart: RAModeled {
    static var root: String { "RAPart" }
    init(_ r: RARec) { self.init(name: r.name, rank: r.rank, item: one(r.links, "item"), bolts: many(r.links, "bolts")) }
    var rec: RARec { RARec(entity: "RAPart", name: name, rank: rank, links: ["item": ids(item), "bolts": ids(bolts)]) }
}
extension RABolt: RAModeled {
    static var root: String { "RABolt" }
    init(_ r: RARec) { self.init(name: r.name, rank: r.rank, part: one(r.links, "part")) }
    var rec: RARec { RARec(entity: "RABolt", name: name, rank: rank, links: ["part": ids(part)]) }
}
extension RAWasher: RAModeled {
    static var root: String { "RABolt" }
    init(_ r: RARec) { self.init(name: r.name, rank: r.rank, part: one(r.links, "part"), extra: r.extra ?? 0) }
    var rec: RARec { RARec(entity: "RAWasher", name: name, rank: rank, extra: extra, links: ["part": ids(part)]) }
}
extension RAVault: RAModeled {
    static var root: String { "RAVault" }
    init(_ r: RARec) { self.init(name: r.name, rank: r.rank, items: many(r.links, "items")) }
    var rec: RARec { RARec(entity: "RAVault", name: name, rank: rank, links: ["items": ids(items)]) }
}

/// The modeled graph under SwiftData's rules: setting one side of a relationship updates the
/// other at once; a to-one inverse lets go of its previous partner; deletes cascade, nullify,
/// deny (checked over everything deleted together) or leave references (no action).
struct RAModel {
    static let schema: [String: [RARel]] = [
        "RAOwner": [RARel(name: "items", destination: "RAItem", inverse: "owner", toMany: true, rule: .cascade),
                    RARel(name: "favorite", destination: "RAItem", inverse: "favoredBy", toMany: false, rule: .nullify)],
        "RAItem": [RARel(name: "owner", destination: "RAOwner", inverse: "items", toMany: false, rule: .nullify),
                   RARel(name: "favoredBy", destination: "RAOwner", inverse: "favorite", toMany: false, rule: .nullify),
                   RARel(name: "labels", destination: "RALabel", inverse: "items", toMany: true, rule: .nullify),
                   RARel(name: "parts", destination: "RAPart", inverse: "item", toMany: true, rule: .cascade),
                   RARel(name: "vault", destination: "RAVault", inverse: "items", toMany: false, rule: .nullify)],
        "RALabel": [RARel(name: "items", destination: "RAItem", inverse: "labels", toMany: true, rule: .noAction)],
        "RAPart": [RARel(name: "item", destination: "RAItem", inverse: "parts", toMany: false, rule: .nullify),
                   RARel(name: "bolts", destination: "RABolt", inverse: "part", toMany: true, rule: .cascade)],
        "RABolt": [RARel(name: "part", destination: "RAPart", inverse: "bolts", toMany: false, rule: .nullify)],
        "RAVault": [RARel(name: "items", destination: "RAItem", inverse: "vault", toMany: true, rule: .deny)],
    ]
    static let roots = ["RAOwner", "RAItem", "RALabel", "RAPart", "RABolt", "RAVault"]
    static func rel(_ root: String, _ name: String) -> RARel { schema[root]!.first { $0.name == name }! }

    var records: [String: [UInt64: RARec]] = Dictionary(uniqueKeysWithValues: roots.map { ($0, [:]) })

    subscript(key: RAKey) -> RARec? {
        get { records[key.root]![key.id] }
        set { records[key.root]![key.id] = newValue }
    }
    func exists(_ key: RAKey) -> Bool { self[key] != nil }
    var keys: [RAKey] { Self.roots.flatMap { root in records[root]!.keys.sorted().map { RAKey(root: root, id: $0) } } }

    private mutating func removeLink(_ id: UInt64, from key: RAKey, _ relName: String) {
        guard var record = self[key], let current = record.links[relName], current.contains(id) else { return }
        record.links[relName] = current.filter { $0 != id }
        self[key] = record
    }

    private mutating func link(from key: RAKey, _ rel: RARel, to id: UInt64) {
        let destination = RAKey(root: rel.destination, id: id)
        guard var target = self[destination] else { return }
        let inverse = Self.rel(rel.destination, rel.inverse)
        let current = target.links[rel.inverse] ?? []
        if inverse.toMany {
            if !current.contains(key.id) { target.links[rel.inverse] = current + [key.id] }
            self[destination] = target
        } else {
            guard current != [key.id] else { return }
            target.links[rel.inverse] = [key.id]
            self[destination] = target
            for previous in current where previous != key.id {
                removeLink(id, from: RAKey(root: inverse.destination, id: previous), rel.name)
            }
        }
    }

    /// Sets `key`'s relationship to `newIDs` (each kept once, in order) and maintains inverses.
    mutating func set(_ key: RAKey, _ relName: String, _ newIDs: [UInt64]) throws(RAModelError) {
        let rel = Self.rel(key.root, relName)
        var seen: Set<UInt64> = [], value: [UInt64] = []
        for id in newIDs where seen.insert(id).inserted { value.append(id) }
        if !rel.toMany { precondition(value.count <= 1) }
        let old = self[key]!.links[relName] ?? []
        let added = value.filter { !old.contains($0) }
        for id in added where !exists(RAKey(root: rel.destination, id: id)) {
            throw .dangling(key, relName, RAKey(root: rel.destination, id: id))
        }
        var record = self[key]!
        record.links[relName] = value
        self[key] = record
        for id in old where !value.contains(id) {
            removeLink(key.id, from: RAKey(root: rel.destination, id: id), rel.inverse)
        }
        for id in added { link(from: key, rel, to: id) }
    }

    /// Inserts a record: its relationships are set as by `set` from empty.
    mutating func insert(_ key: RAKey, _ rec: RARec) throws(RAModelError) {
        var empty = rec
        empty.links = [:]
        self[key] = empty
        for rel in Self.schema[key.root]! { try set(key, rel.name, rec.links[rel.name] ?? []) }
    }

    /// The records deleting `keys` together deletes (cascades included).
    func doomed(_ keys: [RAKey]) -> [RAKey] {
        var result: [RAKey] = [], seen: Set<RAKey> = []
        var queue = keys.sorted(), next = 0
        while next < queue.count {
            let key = queue[next]
            next += 1
            guard exists(key), seen.insert(key).inserted else { continue }
            result.append(key)
            for rel in Self.schema[key.root]! where rel.rule == .cascade {
                for id in self[key]!.links[rel.name] ?? [] { queue.append(RAKey(root: rel.destination, id: id)) }
            }
        }
        return result
    }

    mutating func delete(_ keys: [RAKey]) throws(RAModelError) {
        let doomed = doomed(keys), doomedSet = Set(doomed)
        for key in doomed {
            for rel in Self.schema[key.root]! where rel.rule == .deny {
                let survivors = (self[key]!.links[rel.name] ?? []).filter {
                    let destination = RAKey(root: rel.destination, id: $0)
                    return exists(destination) && !doomedSet.contains(destination)
                }.count
                if survivors > 0 { throw .denied(key, rel.name, survivors) }
            }
        }
        for key in doomed {
            for rel in Self.schema[key.root]! where rel.rule == .nullify {
                for id in self[key]!.links[rel.name] ?? [] where !doomedSet.contains(RAKey(root: rel.destination, id: id)) {
                    removeLink(key.id, from: RAKey(root: rel.destination, id: id), rel.inverse)
                }
            }
        }
        for key in doomed { self[key] = nil }
    }

    /// Records whose relationship values differ between two models (inserted and deleted ones too).
    func linkDifferences(from other: RAModel) -> Set<RAKey> {
        var result: Set<RAKey> = []
        for root in Self.roots {
            let mine = records[root]!, theirs = other.records[root]!
            for (id, rec) in mine where theirs[id]?.links.filter({ !$0.value.isEmpty }) != rec.links.filter({ !$0.value.isEmpty }) {
                result.insert(RAKey(root: root, id: id))
            }
            for id in theirs.keys where mine[id] == nil { result.insert(RAKey(root: root, id: id)) }
        }
        return result
    }
}

// MARK: - Talking to Strata

func raType(_ entity: String) -> any RAModeled.Type {
    switch entity {
    case "RAOwner": RAOwner.self
    case "RAVipOwner": RAVipOwner.self
    case "RAItem": RAItem.self
    case "RASpecialItem": RASpecialItem.self
    case "RALabel": RALabel.self
    case "RAPart": RAPart.self
    case "RABolt": RABolt.self
    case "RAWasher": RAWasher.self
    case "RAVault": RAVault.self
    default: fatalError(entity)
    }
}

/// Either a context or a write transaction.
enum RAWriter {
    case context(Context)
    case transaction(Store.WriteTransaction)

    func insert<T: RAModeled>(_ type: T.Type, _ rec: RARec) throws -> UInt64 {
        switch self {
        case .context(let context): try context.insert(T(rec)).rawValue
        case .transaction(let transaction): try transaction.insert(T(rec)).rawValue
        }
    }

    func update<T: RAModeled>(_ type: T.Type, _ id: UInt64, _ rec: RARec) throws {
        switch self {
        case .context(let context): try context.update(RecordID<T>(rawValue: id), to: T(rec))
        case .transaction(let transaction): try transaction.update(RecordID<T>(rawValue: id), to: T(rec))
        }
    }

    func delete<T: RAModeled>(_ type: T.Type, _ id: UInt64) throws {
        switch self {
        case .context(let context): try context.delete(RecordID<T>(rawValue: id))
        case .transaction(let transaction): _ = try transaction.delete(RecordID<T>(rawValue: id))
        }
    }

    func record<T: RAModeled>(_ type: T.Type, _ id: UInt64) throws -> RARec? {
        switch self {
        case .context(let context): try context.record(for: RecordID<T>(rawValue: id))?.rec
        case .transaction(let transaction): try transaction.record(for: RecordID<T>(rawValue: id))?.rec
        }
    }
}

private func fetchAll<T: RAModeled>(_ type: T.Type, _ context: Context) throws -> [UInt64: RARec] {
    var result: [UInt64: RARec] = [:]
    for found in try context.fetch(FetchDescriptor<T>()) {
        #expect(result[found.id.rawValue] == nil, "\(T.self) fetch returned \(found.id) twice")
        result[found.id.rawValue] = found.record.rec
    }
    return result
}

/// Relationship values with empty ones dropped (nil to-one and empty list both read as none).
private func trimmed(_ links: [String: [UInt64]]) -> [String: [UInt64]] { links.filter { !$0.value.isEmpty } }

private func deduplicated(_ links: [String: [UInt64]]) -> [String: [UInt64]] {
    links.mapValues { ids in
        var seen: Set<UInt64> = []
        return ids.filter { seen.insert($0).inserted }
    }
}

/// Compares everything the store holds with the model, through a fresh context, and verifies.
func raCompare(_ store: Store, _ model: RAModel, _ phase: String, verify: Bool = true) throws {
    let context = Context(store)
    for root in RAModel.roots {
        let stored = try fetchAll(raType(root), context)
        let expected = model.records[root]!
        #expect(Set(stored.keys) == Set(expected.keys), "\(phase): ids of \(root)")
        for (id, rec) in expected {
            guard let got = stored[id] else { continue }
            #expect(got.name == rec.name && got.rank == rec.rank, "\(phase): \(root)#\(id) attributes")
            #expect(trimmed(got.links) == trimmed(rec.links), "\(phase): \(root)#\(id) relationships \(got.links) != model \(rec.links)")
        }
    }
    for sub in ["RAVipOwner", "RASpecialItem", "RAWasher"] {
        let type = raType(sub)
        let stored = try fetchAll(type, context)
        let expected = model.records[type.root]!.filter { $0.value.entity == sub }
        #expect(Set(stored.keys) == Set(expected.keys), "\(phase): ids of \(sub)")
        for (id, rec) in expected where stored[id] != nil {
            #expect(stored[id]!.extra == rec.extra, "\(phase): \(sub)#\(id) extra")
            #expect(trimmed(stored[id]!.links) == trimmed(rec.links), "\(phase): \(sub)#\(id) relationships")
        }
    }
    if verify {
        let report = try store.verify()
        #expect(report.isValid, "\(phase): verify: \(report)")
    }
}

// MARK: - Suite

@Suite struct RelationshipAdversaryTests {
    func withStore(_ body: (Store, String) throws -> Void) throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: raTypes)
        defer { try? store.close() }
        try body(store, folder)
    }

    // MARK: Randomized model test

    /// The random driver shared by the context and write phases.
    struct Driver {
        var random: SeededRandom
        var model = RAModel()
        /// Every id a saved record ever had, per hierarchy (ids are never reused).
        var everSaved: [String: Set<UInt64>] = Dictionary(uniqueKeysWithValues: RAModel.roots.map { ($0, []) })
        var serial = 0
        /// What the run did (printed at the end): ops performed by kind, saves, rollbacks, denials.
        var stats: [String: Int] = [:]

        mutating func pick(_ root: String) -> UInt64? { model.records[root]!.keys.sorted().randomElement(using: &random) }
        mutating func chance(_ n: Int) -> Bool { Int.random(in: 0..<n, using: &random) == 0 }

        /// A random value for `rel` of a record whose value is now `current`: existing records,
        /// some of the current ones (dangling ones included) kept, shuffled.
        mutating func value(for rel: RARel, current: [UInt64]) -> [UInt64] {
            let candidates = model.records[rel.destination]!.keys.sorted()
            if !rel.toMany {
                if chance(4) || candidates.isEmpty { return [] }
                return [candidates.randomElement(using: &random)!]
            }
            var result = current.filter { _ in !chance(3) }
            for candidate in candidates where chance(max(2, candidates.count / 3)) && !result.contains(candidate) { result.append(candidate) }
            if chance(3) { result.shuffle(using: &random) }
            if chance(8), let first = result.first { result.append(first) }  // a duplicate: kept once
            return result
        }

        mutating func newRec(_ entity: String) -> RARec {
            serial += 1
            let type = raType(entity)
            var rec = RARec(entity: entity, name: "\(entity.dropFirst(2))-\(serial)", rank: Int.random(in: -50...50, using: &random),
                            extra: entity == type.root ? nil : Int.random(in: 0...9, using: &random), links: [:])
            for rel in RAModel.schema[type.root]! where !chance(3) {
                // Vault links only through their own updates (deny is tested apart).
                if rel.destination == "RAVault" || type.root == "RAVault" { continue }
                rec.links[rel.name] = value(for: rel, current: [])
            }
            return rec
        }
    }

    enum RAOp: CustomStringConvertible {
        case insert(RARec)
        case setLinks(RAKey, String, [UInt64], viaParent: Bool)
        case rename(RAKey, viaParent: Bool)
        case delete(RAKey)
        case deleteBolts(below: Int)

        var description: String {
            switch self {
            case .insert(let rec): "insert \(rec.entity) \(rec.links)"
            case .setLinks(let key, let name, let ids, let viaParent): "set \(key).\(name) = \(ids)\(viaParent ? " (via parent type)" : "")"
            case .rename(let key, _): "rename \(key)"
            case .delete(let key): "delete \(key)"
            case .deleteBolts(let below): "delete RABolt where rank < \(below)"
            }
        }
    }

    static let insertable = ["RAOwner", "RAVipOwner", "RAItem", "RASpecialItem", "RALabel", "RAPart", "RABolt", "RAWasher", "RAVault"]

    func randomOp(_ d: inout Driver) -> RAOp {
        let roll = Int.random(in: 0..<100, using: &d.random)
        if roll < 40 || d.model.keys.isEmpty {
            return .insert(d.newRec(Self.insertable.randomElement(using: &d.random)!))
        }
        let key = d.model.keys.randomElement(using: &d.random)!
        let rec = d.model[key]!
        let viaParent = rec.entity != key.root && d.chance(2)
        if roll < 70 {
            let rel = RAModel.schema[key.root]!.randomElement(using: &d.random)!
            if rel.destination == "RAVault" && d.chance(2) { return .rename(key, viaParent: viaParent) }
            return .setLinks(key, rel.name, d.value(for: rel, current: rec.links[rel.name] ?? []), viaParent: viaParent)
        }
        if roll < 88 { return .rename(key, viaParent: viaParent) }
        if roll < 90 { return .deleteBolts(below: Int.random(in: -50...(-30), using: &d.random)) }
        // Owners and items cascade far: deleted less often than the rest.
        if (key.root == "RAOwner" || key.root == "RAItem") && d.chance(2) { return .rename(key, viaParent: viaParent) }
        return .delete(key)
    }

    /// Applies `op` to a copy of the model; nil when SwiftData would refuse it at save.
    func applied(_ op: RAOp, to model: RAModel, newID: UInt64? = nil) -> (RAModel, [RAKey])? {
        var m = model
        do {
            switch op {
            case .insert(let rec):
                guard let newID else { return (m, []) }
                try m.insert(RAKey(root: raType(rec.entity).root, id: newID), rec)
            case .setLinks(let key, let name, let value, _): try m.set(key, name, value)
            case .rename(let key, _): m[key]!.name += "'"
            case .delete(let key): try m.delete([key])
            case .deleteBolts(let below):
                let keys = m.records["RABolt"]!.filter { $0.value.rank < below }.keys.sorted().map { RAKey(root: "RABolt", id: $0) }
                try m.delete(keys)
                return (m, keys)
            }
        } catch { return nil }
        return (m, [])
    }

    /// Performs `op` through `writer`; returns the new record's id for an insert.
    func perform(_ op: RAOp, _ model: RAModel, _ writer: RAWriter) throws -> UInt64? {
        switch op {
        case .insert(let rec):
            return try writer.insert(raType(rec.entity), rec)
        case .setLinks(let key, let name, let value, let viaParent):
            // The app reads the record as its writer shows it, changes one relationship and writes it back.
            let type = viaParent ? raType(key.root) : raType(model[key]!.entity)
            var rec = try #require(try writer.record(type, key.id), "\(key) readable")
            rec.links[name] = value
            try writer.update(type, key.id, rec)
        case .rename(let key, let viaParent):
            let type = viaParent ? raType(key.root) : raType(model[key]!.entity)
            var rec = try #require(try writer.record(type, key.id), "\(key) readable")
            rec.name += "'"
            try writer.update(type, key.id, rec)
        case .delete(let key):
            try writer.delete(raType(key.root), key.id)
        case .deleteBolts(let below):
            switch writer {
            case .context(let context): _ = try context.delete(RABolt.self, where: #Predicate { $0.rank < below })
            case .transaction(let transaction):
                // The transaction has no fetch: the ids come from the model.
                for id in model.records["RABolt"]!.filter({ $0.value.rank < below }).keys.sorted() {
                    _ = try transaction.delete(RecordID<RABolt>(rawValue: id))
                }
            }
        }
        return nil
    }

    func checkNewID(_ id: UInt64, root: String, _ d: inout Driver, _ where_: String) {
        let saved = d.everSaved[root]!
        #expect(!saved.contains(id), "\(where_): \(root)#\(id) was handed out again")
        #expect(id > (saved.max() ?? 0), "\(where_): \(root)#\(id) not above every id saved before (\(saved.max() ?? 0))")
    }

    /// Checks, before a save, that fetches and counts by relationship show the context's
    /// unsaved values exactly as given (Architecture.md, "Relationships": "Until `save()`, a
    /// context's reads show exactly the values it was given").
    func checkUnsavedView(_ context: Context, saved: RAModel, given: [RAKey: RARec?], _ d: inout Driver, _ phase: String) throws {
        var view = saved
        for (key, rec) in given { view[key] = rec ?? nil }
        let items = view.records["RAItem"]!
        if let owner = view.records["RAOwner"]!.keys.sorted().randomElement(using: &d.random) {
            let oid: RecordID<RAOwner>? = RecordID(rawValue: owner)
            let predicate = #Predicate<RAItem> { $0.owner == oid }
            let expected = Set(items.filter { $0.value.links["owner"] == [owner] }.keys)
            #expect(Set(try context.fetch(FetchDescriptor(predicate: predicate)).map(\.id.rawValue)) == expected, "\(phase): items of owner \(owner)")
            #expect(try context.fetchCount(FetchDescriptor(predicate: predicate)) == expected.count, "\(phase): count of items of owner \(owner)")
        }
        if let label = view.records["RALabel"]!.keys.sorted().randomElement(using: &d.random) {
            let lid = RecordID<RALabel>(rawValue: label)
            let predicate = #Predicate<RAItem> { $0.labels.contains(lid) }
            let expected = Set(items.filter { ($0.value.links["labels"] ?? []).contains(label) }.keys)
            #expect(Set(try context.fetch(FetchDescriptor(predicate: predicate)).map(\.id.rawValue)) == expected, "\(phase): items labelled \(label)")
            #expect(try context.fetchCount(FetchDescriptor(predicate: predicate)) == expected.count, "\(phase): count labelled \(label)")
        }
        let unowned = #Predicate<RAItem> { $0.owner == nil }
        let expectedUnowned = items.filter { ($0.value.links["owner"] ?? []).isEmpty }.count
        #expect(try context.fetchCount(FetchDescriptor(predicate: unowned)) == expectedUnowned, "\(phase): count of unowned items")
        #expect(try context.fetch(FetchDescriptor(predicate: unowned)).count == expectedUnowned, "\(phase): unowned items")
        #expect(try context.fetchCount(FetchDescriptor<RAItem>()) == items.count, "\(phase): count of items")
        #expect(try context.fetchCount(FetchDescriptor<RASpecialItem>()) == items.values.filter { $0.entity == "RASpecialItem" }.count,
                "\(phase): count of special items")
        for (key, rec) in given.sorted(by: { $0.key < $1.key }).prefix(5) {
            let got = try RAWriter.context(context).record(raType(key.root), key.id)
            #expect(got.map { deduplicated(trimmed($0.links)) } == rec.map { deduplicated(trimmed($0.links)) }, "\(phase): unsaved \(key) reads as given")
        }
    }

    /// One phase of random changes through contexts: ops grouped into saves whose relationship
    /// changes touch disjoint records (so the order inside a save cannot matter), sometimes
    /// rolled back; the store compared with the model after every save.
    func contextPhase(_ store: Store, _ d: inout Driver, rounds: Int, _ phase: String) throws {
        let context = Context(store, author: phase)
        for round in 0..<rounds {
            let saved = d.model
            var touched: Set<RAKey> = []
            var given: [RAKey: RARec?] = [:]
            var inserted: [RAKey] = []
            var log: [String] = []
            for _ in 0..<Int.random(in: 1...5, using: &d.random) {
                let op = randomOp(&d)
                // A refused change (a denied vault delete) is the deny test's (below); a change whose
                // relationship effects meet those of an earlier change of this save waits.
                guard let (trial, _) = applied(op, to: d.model, newID: UInt64.max / 2) else { continue }
                var opTouched = trial.linkDifferences(from: d.model)
                if case .setLinks(let key, _, _, _) = op { opTouched.insert(key) }
                if !opTouched.isDisjoint(with: touched) { continue }
                touched.formUnion(opTouched)
                log.append("\(op)")
                d.stats["\(op)".split(separator: " ").first.map(String.init) ?? "?", default: 0] += 1
                let newID = try perform(op, d.model, .context(context))
                let (next, _) = try #require(applied(op, to: d.model, newID: newID), "\(phase) round \(round): \(op)")
                switch op {
                case .insert(let rec):
                    let key = RAKey(root: raType(rec.entity).root, id: newID!)
                    checkNewID(key.id, root: key.root, &d, "\(phase) round \(round)")
                    inserted.append(key)
                    given[key] = rec
                    touched.formUnion(next.linkDifferences(from: d.model))
                case .setLinks(let key, _, _, let viaParent), .rename(let key, let viaParent):
                    let type = viaParent ? raType(key.root) : raType(d.model[key]!.entity)
                    given[key] = try RAWriter.context(context).record(type, key.id)
                case .delete(let key): given[key] = .some(nil)
                case .deleteBolts(let below):
                    for (id, rec) in d.model.records["RABolt"]! where rec.rank < below { given[RAKey(root: "RABolt", id: id)] = .some(nil) }
                }
                d.model = next
            }
            // Given values of records changed through parent types read back with their extra.
            for (key, rec) in given { if let rec, let current = d.model[key] { given[key] = RARec(entity: current.entity, name: rec.name, rank: rec.rank, extra: current.extra, links: rec.links) } }
            try checkUnsavedView(context, saved: saved, given: given, &d, "\(phase) round \(round) unsaved")
            if d.chance(6) {
                context.rollback()
                d.stats["rollback", default: 0] += 1
                d.model = saved
                #expect(!context.hasChanges)
                try raCompare(store, d.model, "\(phase) round \(round) after rollback [\(log.joined(separator: "; "))]", verify: false)
                continue
            }
            do {
                try context.save()
            } catch {
                Issue.record("\(phase) round \(round): save failed: \(error) [\(log.joined(separator: "; "))]")
                context.rollback()
                d.model = saved
                continue
            }
            for key in inserted { d.everSaved[key.root]!.insert(key.id) }
            d.stats["save", default: 0] += 1
            try raCompare(store, d.model, "\(phase) round \(round) [\(log.joined(separator: "; "))]", verify: round % 5 == 4)
        }
        try denyCheck(store, &d, phase)
    }

    /// Deleting a vault that still holds items: refused with `deleteDenied`, nothing of the
    /// save stored (other changes included); then allowed when its items are deleted too.
    func denyCheck(_ store: Store, _ d: inout Driver, _ phase: String) throws {
        let context = Context(store)
        var vaultID = d.model.records["RAVault"]!.keys.sorted().first { !(d.model[RAKey(root: "RAVault", id: $0)]!.links["items"] ?? []).isEmpty }
        if vaultID == nil {
            let items = d.model.records["RAItem"]!.keys.sorted().prefix(3)
            guard !items.isEmpty else { return }
            let vault = try context.insert(RAVault(name: "deny", rank: 0, items: items.map { RecordID(rawValue: $0) }))
            try context.save()
            d.everSaved["RAVault"]!.insert(vault.rawValue)
            try d.model.insert(RAKey(root: "RAVault", id: vault.rawValue), RAVault(name: "deny", rank: 0, items: items.map { RecordID(rawValue: $0) }).rec)
            vaultID = vault.rawValue
        }
        let vault = RAKey(root: "RAVault", id: vaultID!)
        let held = d.model[vault]!.links["items"]!.filter { d.model.exists(RAKey(root: "RAItem", id: $0)) }
        // With other changes in the same save: a rename, an insert, a label delete.
        let renamed = d.model.records["RAOwner"]!.keys.min()
        if let renamed { try context.update(RecordID<RAOwner>(rawValue: renamed), to: RAOwner(d.model[RAKey(root: "RAOwner", id: renamed)]!.renamed("denied"))) }
        try context.insert(RALabel(name: "never", rank: 1))
        if let label = d.model.records["RALabel"]!.keys.min() { try context.delete(RecordID<RALabel>(rawValue: label)) }
        try context.delete(RecordID<RAVault>(rawValue: vault.id))
        #expect(throws: StrataError.deleteDenied(record: "RAVault#\(vault.id)", relationship: "items", count: held.count)) { try context.save() }
        #expect(context.hasChanges)
        try raCompare(store, d.model, "\(phase): after a denied delete", verify: true)
        context.rollback()
        // Deleting the held items in the same save satisfies the rule (cascades from items included).
        for id in held { try context.delete(RecordID<RAItem>(rawValue: id)) }
        try context.delete(RecordID<RAVault>(rawValue: vault.id))
        try context.save()
        try d.model.delete(held.map { RAKey(root: "RAItem", id: $0) } + [vault])
        try raCompare(store, d.model, "\(phase): after the vault and its items were deleted")
    }

    /// The same random ops through `Store.write` transactions, applied as they come.
    func writePhase(_ store: Store, _ d: inout Driver, rounds: Int, _ phase: String) throws {
        for round in 0..<rounds {
            let before = d.model
            var log: [String] = []
            var inserted: [RAKey] = []
            let abandon = d.chance(6)
            do {
                try store.write(author: phase) { transaction in
                    for _ in 0..<Int.random(in: 1...6, using: &d.random) {
                        let op = randomOp(&d)
                        log.append("\(op)")
                        d.stats["\(op)".split(separator: " ").first.map(String.init) ?? "?", default: 0] += 1
                        if case .delete(let key) = op {
                            let trial = applied(op, to: d.model)
                            if trial == nil {
                                // A deny: the delete throws, the body goes on (nothing of it was applied).
                                let items = d.model[key]?.links["items"] ?? []
                                let count = items.filter { d.model.exists(RAKey(root: "RAItem", id: $0)) }.count
                                d.stats["denied", default: 0] += 1
                                #expect(throws: StrataError.deleteDenied(record: "\(key)", relationship: "items", count: count)) {
                                    _ = try perform(op, d.model, .transaction(transaction))
                                }
                                continue
                            }
                        }
                        let newID = try perform(op, d.model, .transaction(transaction))
                        let next = try #require(applied(op, to: d.model, newID: newID), "\(phase) round \(round): \(op)").0
                        if case .insert(let rec) = op {
                            let key = RAKey(root: raType(rec.entity).root, id: newID!)
                            checkNewID(key.id, root: key.root, &d, "\(phase) round \(round)")
                            inserted.append(key)
                        }
                        d.model = next
                        // Maintained at once: the transaction reads the inverses already.
                        if let key = next.keys.randomElement(using: &d.random) {
                            let got = try RAWriter.transaction(transaction).record(raType(next[key]!.entity), key.id)
                            #expect(got.map { trimmed($0.links) } == trimmed(next[key]!.links), "\(phase) round \(round): \(key) inside the write")
                        }
                    }
                    if abandon { throw CancellationError() }
                }
            } catch is CancellationError {
                d.model = before
                try raCompare(store, d.model, "\(phase) round \(round) abandoned [\(log.joined(separator: "; "))]", verify: false)
                continue
            }
            for key in inserted { d.everSaved[key.root]!.insert(key.id) }
            try raCompare(store, d.model, "\(phase) round \(round) [\(log.joined(separator: "; "))]", verify: round % 5 == 4)
        }
    }

    @Test func randomGraphMatchesTheSwiftDataModelAcrossContextsWritesAndReopens() throws {
        let seed = SeededRandom.seed(default: 0x5EED_2E1A)
        print("RelationshipAdversaryTests.randomGraphMatchesTheSwiftDataModelAcrossContextsWritesAndReopens seed: \(seed)")
        var d = Driver(random: SeededRandom(seed: seed))
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        for phase in 0..<4 {
            let store = try Store(at: folder, for: raTypes)
            try raCompare(store, d.model, "seed \(seed) phase \(phase) reopened")
            if phase % 2 == 0 {
                try contextPhase(store, &d, rounds: 40, "seed \(seed) context phase \(phase)")
            } else {
                try writePhase(store, &d, rounds: 40, "seed \(seed) write phase \(phase)")
            }
            // Deleting the highest ids, then inserting after the reopen: never handed out again.
            try store.close()
        }
        let store = try Store(at: folder, for: raTypes)
        defer { try? store.close() }
        try raCompare(store, d.model, "seed \(seed) final")
        let counts = RAModel.roots.map { "\($0): \(d.model.records[$0]!.count)" }
        print("RelationshipAdversaryTests seed \(seed) final model: \(counts.joined(separator: ", ")); \(d.stats.sorted { $0.key < $1.key })")
    }

    // MARK: Targeted tests

    @Test func movingBetweenOwnersToOneReplacementAndOrder() throws {
        try withStore { store, _ in
            let context = Context(store)
            let items = try (0..<6).map { try context.insert(RAItem(name: "i\($0)", rank: $0)) }
            let special = try context.insert(RASpecialItem(name: "s", rank: 9, extra: 7))
            let parentView = RecordID<RAItem>(rawValue: special.rawValue)
            let a = try context.insert(RAOwner(name: "a", rank: 0, items: [items[4], parentView, items[0], items[2]]))
            let b = try context.insert(RAVipOwner(name: "b", rank: 1, items: [items[1]], extra: 3))
            try context.save()
            // The app's order is kept; the sub-entity record is in the parent type's list.
            #expect(try context.record(for: a)?.items == [items[4], parentView, items[0], items[2]])
            #expect(try context.record(for: special)?.owner == a)
            // Moving items[0] to b's list: it leaves a's list, its owner follows.
            let bAsOwner = RecordID<RAOwner>(rawValue: b.rawValue)
            try context.update(b, to: RAVipOwner(name: "b", rank: 1, items: [items[0], items[1]], extra: 3))
            try context.save()
            #expect(try context.record(for: a)?.items == [items[4], parentView, items[2]])
            #expect(try context.record(for: items[0])?.owner == bAsOwner)
            #expect(try context.record(for: bAsOwner)?.items == [items[0], items[1]])
            // Setting the to-one side moves it back; the list it joins gets it at the end.
            try context.update(items[0], to: RAItem(name: "i0", rank: 0, owner: a))
            try context.save()
            #expect(try context.record(for: a)?.items == [items[4], parentView, items[2], items[0]])
            #expect(try context.record(for: b)?.items == [items[1]])
            // Reordering only: kept.
            try context.update(a, to: RAOwner(name: "a", rank: 0, items: [items[0], items[2], parentView, items[4]]))
            try context.save()
            #expect(try context.record(for: a)?.items == [items[0], items[2], parentView, items[4]])
            // One-to-one: favorite ↔ favoredBy, on the same pair of entities as items ↔ owner.
            try context.update(a, to: RAOwner(name: "a", rank: 0, items: [items[0], items[2], parentView, items[4]], favorite: items[1]))
            try context.save()
            #expect(try context.record(for: items[1])?.favoredBy == a)
            #expect(try context.record(for: items[1])?.owner == bAsOwner)  // the other relationship untouched
            try context.update(b, to: RAVipOwner(name: "b", rank: 1, items: [items[1]], favorite: items[1], extra: 3))
            try context.save()
            #expect(try context.record(for: a)?.favorite == nil)  // the previous partner lets go
            #expect(try context.record(for: items[1])?.favoredBy == bAsOwner)
            #expect(try context.record(for: b)?.extra == 3)
            // A duplicate in a list is kept once.
            try context.update(a, to: RAOwner(name: "a", rank: 0, items: [items[5], items[0], items[5]]))
            try context.save()
            #expect(try context.record(for: a)?.items == [items[5], items[0]])
            #expect(try store.verify().isValid)
        }
    }

    @Test func cascadeChainsReachSubEntitiesAndOtherTypes() throws {
        try withStore { store, _ in
            let context = Context(store)
            let vip = try context.insert(RAVipOwner(name: "v", rank: 0, extra: 1))
            let owner = RecordID<RAOwner>(rawValue: vip.rawValue)
            let other = try context.insert(RAOwner(name: "o", rank: 0))
            let special = try context.insert(RASpecialItem(name: "s", rank: 0, owner: owner, extra: 2))
            let plain = try context.insert(RAItem(name: "p", rank: 0, owner: owner))
            let kept = try context.insert(RAItem(name: "k", rank: 0, owner: other))
            let label = try context.insert(RALabel(name: "l", rank: 0, items: [RecordID(rawValue: special.rawValue), kept]))
            let part = try context.insert(RAPart(name: "pa", rank: 0, item: RecordID(rawValue: special.rawValue)))
            let part2 = try context.insert(RAPart(name: "pb", rank: 0, item: plain))
            let washer = try context.insert(RAWasher(name: "w", rank: 0, part: part, extra: 3))
            let bolt = try context.insert(RABolt(name: "b", rank: 0, part: part2))
            let keptPart = try context.insert(RAPart(name: "pk", rank: 0, item: kept))
            try context.update(other, to: RAOwner(name: "o", rank: 0, items: [kept], favorite: RecordID(rawValue: special.rawValue)))
            try context.save()
            #expect(try context.record(for: RecordID<RABolt>(rawValue: washer.rawValue))?.part == part)
            #expect(try context.record(for: part)?.bolts == [RecordID(rawValue: washer.rawValue)])

            // Deleted through the parent type, with a predicate: vip → special, plain → parts → washer, bolt.
            #expect(try context.delete(RAOwner.self, where: #Predicate { $0.name == "v" }) == 1)
            // Before the save, nothing has cascaded yet.
            #expect(try context.fetchCount(FetchDescriptor<RAItem>()) == 3)
            try context.save()
            #expect(try context.fetch(FetchDescriptor<RAItem>()).map(\.id) == [kept])
            #expect(try context.fetch(FetchDescriptor<RAPart>()).map(\.id) == [keptPart])
            #expect(try context.fetchCount(FetchDescriptor<RABolt>()) == 0)
            #expect(try context.record(for: washer) == nil && context.record(for: bolt) == nil)
            #expect(try context.record(for: label)?.items == [kept])  // nullify from the deleted items
            #expect(try context.record(for: other)?.favorite == nil)   // the other relationship of the pair
            #expect(try store.verify().isValid)
        }
    }

    @Test func denyRefusesTheWholeSaveThroughBothPaths() throws {
        try withStore { store, _ in
            let context = Context(store)
            let items = try (0..<3).map { try context.insert(RAItem(name: "i\($0)", rank: $0)) }
            let vault = try context.insert(RAVault(name: "v", rank: 0, items: [items[0], items[1]]))
            let owner = try context.insert(RAOwner(name: "o", rank: 0, items: [items[2]]))
            try context.save()
            #expect(try context.record(for: items[0])?.vault == vault)
            // Deny with other changes: nothing stored.
            try context.delete(vault)
            try context.update(items[2], to: RAItem(name: "changed", rank: 2, owner: nil))
            try context.insert(RALabel(name: "new", rank: 0, items: [items[2]]))
            #expect(throws: StrataError.deleteDenied(record: "RAVault#\(vault.rawValue)", relationship: "items", count: 2)) { try context.save() }
            let fresh = Context(store)
            #expect(try fresh.record(for: vault)?.items == [items[0], items[1]])
            #expect(try fresh.record(for: items[2]) == RAItem(name: "i2", rank: 2, owner: owner))
            #expect(try fresh.record(for: owner)?.items == [items[2]])
            #expect(try fresh.fetchCount(FetchDescriptor<RALabel>()) == 0)
            context.rollback()
            // An owner cascading to one of the vault's items and the vault deleted together: one survivor.
            try context.update(owner, to: RAOwner(name: "o", rank: 0, items: [items[0], items[2]]))
            try context.save()
            try context.delete(owner)
            try context.delete(vault)
            #expect(throws: StrataError.deleteDenied(record: "RAVault#\(vault.rawValue)", relationship: "items", count: 1)) { try context.save() }
            context.rollback()
            // Store.write: the refused delete throws; caught, the rest of the body commits.
            try store.write { transaction in
                #expect(throws: StrataError.deleteDenied(record: "RAVault#\(vault.rawValue)", relationship: "items", count: 2)) {
                    _ = try transaction.delete(vault)
                }
                try transaction.update(items[1], to: RAItem(name: "after deny", rank: 1, vault: vault))
            }
            #expect(try fresh.record(for: vault)?.items == [items[0], items[1]])
            #expect(try fresh.record(for: items[1])?.name == "after deny")
            #expect(try store.verify().isValid)
            // Emptying the vault first, then deleting it, works.
            try context.update(vault, to: RAVault(name: "v", rank: 0))
            try context.save()
            #expect(try context.record(for: items[0])?.vault == nil)
            try context.delete(vault)
            try context.save()
            #expect(try context.record(for: vault) == nil)
        }
    }

    @Test func noActionLeavesDanglingReferencesAsDocumented() throws {
        try withStore { store, _ in
            let context = Context(store)
            let item = try context.insert(RAItem(name: "i", rank: 0))
            let label = try context.insert(RALabel(name: "l", rank: 0, items: [item]))
            let keptLabel = try context.insert(RALabel(name: "k", rank: 0, items: [item]))
            try context.save()
            #expect(try context.record(for: item)?.labels == [label, keptLabel])
            try context.delete(label)
            try context.save()
            #expect(try context.record(for: item)?.labels == [label, keptLabel])  // dangling, documented
            #expect(try context.record(for: label) == nil)
            #expect(try store.verify().isValid)
            // A predicate on the dangling reference still matches the stored value.
            #expect(try context.fetchCount(FetchDescriptor<RAItem>(predicate: #Predicate { $0.labels.contains(label) })) == 1)
            // Untouched, it survives an update; added again after being removed, it is refused.
            try context.update(item, to: RAItem(name: "i2", rank: 0, labels: [label, keptLabel]))
            try context.save()
            try context.update(item, to: RAItem(name: "i2", rank: 0, labels: [keptLabel]))
            try context.save()
            try context.update(item, to: RAItem(name: "i2", rank: 0, labels: [keptLabel, label]))
            #expect(throws: StrataError.danglingReference(record: "RAItem#\(item.rawValue)", relationship: "labels",
                                                          destination: "RALabel#\(label.rawValue)")) { try context.save() }
            context.rollback()
            // Deleting the item nullifies from its side: the kept label lets go of it.
            try context.delete(item)
            try context.save()
            #expect(try context.record(for: keptLabel)?.items == [])
        }
    }

    @Test func aRecordLinkingToItself() throws {
        try withStore { store, folder in
            let context = Context(store)
            let lone = try context.insert(RANode(label: 0))
            let other = try context.insert(RANode(label: 1))
            try context.save()
            try context.update(lone, to: RANode(label: 0, next: lone, friends: [lone, other]))
            try context.save()
            #expect(try context.record(for: lone) == RANode(label: 0, next: lone, previous: lone, friends: [lone, other]))
            #expect(try context.record(for: other)?.friends == [lone])  // its own inverse: symmetric
            #expect(try store.verify().isValid)
            // Pointing next elsewhere lets go of the self link on both sides.
            try context.update(lone, to: RANode(label: 0, next: other, previous: lone, friends: [lone, other]))
            try context.save()
            #expect(try context.record(for: lone)?.previous == nil)
            #expect(try context.record(for: other)?.previous == lone)
            // Back to itself; then the cascade along next ends on the cycle and removes only it.
            try context.update(other, to: RANode(label: 1, friends: [lone]))
            try context.update(lone, to: RANode(label: 0, next: lone, friends: [lone, other]))
            try context.save()
            #expect(try context.record(for: lone)?.previous == lone)
            try context.delete(lone)
            try context.save()
            #expect(try context.fetch(FetchDescriptor<RANode>()).map(\.id) == [other])
            #expect(try context.record(for: other)?.friends == [])
            #expect(try store.verify().isValid)
            _ = folder
        }
    }

    @Test func emptyListAndNilToOne() throws {
        try withStore { store, _ in
            let context = Context(store)
            let bare = try context.insert(RAItem(name: "bare", rank: 0))
            let owner = try context.insert(RAOwner(name: "o", rank: 0))
            let owned = try context.insert(RAItem(name: "owned", rank: 0, owner: owner))
            try context.save()
            #expect(try context.record(for: bare) == RAItem(name: "bare", rank: 0))
            #expect(try context.fetch(FetchDescriptor<RAItem>(predicate: #Predicate { $0.owner == nil })).map(\.id) == [bare])
            #expect(try context.fetch(FetchDescriptor<RAItem>(predicate: #Predicate { $0.owner != nil })).map(\.id) == [owned])
            #expect(try context.fetchCount(FetchDescriptor<RAOwner>(predicate: #Predicate { $0.items.isEmpty })) == 0)
            // Emptying the list: the to-one goes to nil, the list reads as empty (not absent).
            try context.update(owner, to: RAOwner(name: "o", rank: 0, items: []))
            try context.save()
            #expect(try context.record(for: owned)?.owner == nil)
            #expect(try context.record(for: owner)?.items == [])
            #expect(try context.fetchCount(FetchDescriptor<RAOwner>(predicate: #Predicate { $0.items.isEmpty })) == 1)
            #expect(try context.fetchCount(FetchDescriptor<RAItem>(predicate: #Predicate { $0.owner == nil })) == 2)
            #expect(try context.fetchCount(FetchDescriptor<RAItem>(predicate: #Predicate { $0.labels.count == 0 })) == 2)
        }
    }

    @Test func idsAreNeverReusedAfterDeletesCascadesAndReopen() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var highest: UInt64 = 0
        do {
            let store = try Store(at: folder, for: raTypes)
            let context = Context(store)
            let owner = try context.insert(RAOwner(name: "o", rank: 0))
            let item = try context.insert(RAItem(name: "i", rank: 0, owner: owner))
            let special = try context.insert(RASpecialItem(name: "s", rank: 0, owner: owner, extra: 1))
            try context.save()
            highest = special.rawValue
            #expect(special.rawValue > item.rawValue)
            try context.delete(owner)  // cascades to both items, the highest of the hierarchy included
            let replacement = try context.insert(RAItem(name: "r", rank: 0))
            #expect(replacement.rawValue > highest)
            try context.save()
            highest = replacement.rawValue
            try context.delete(replacement)
            try context.save()
            // Store.write, same store session.
            let written = try store.write { try $0.insert(RASpecialItem(name: "w", rank: 0, extra: 2)) }
            #expect(written.rawValue > highest)
            highest = written.rawValue
            _ = try store.write { try $0.delete(written) }
            try store.close()
        }
        let store = try Store(at: folder, for: raTypes)
        defer { try? store.close() }
        let context = Context(store)
        let afterReopen = try context.insert(RAItem(name: "n", rank: 0))
        #expect(afterReopen.rawValue > highest)
        let sub = try context.insert(RASpecialItem(name: "n2", rank: 0, extra: 0))
        #expect(sub.rawValue > afterReopen.rawValue)
        try context.save()
        #expect(try context.record(for: RecordID<RAItem>(rawValue: highest)) == nil)
    }

    @Test func thousandsOfLinksInOneList() throws {
        let seed = SeededRandom.seed(default: 0x5EED_2E1B)
        print("RelationshipAdversaryTests.thousandsOfLinksInOneList seed: \(seed)")
        var random = SeededRandom(seed: seed)
        try withStore { store, _ in
            let count = 1_500
            var items: [RecordID<RAItem>] = []
            try store.write { transaction in
                for index in 0..<count {
                    if index % 7 == 3 {
                        items.append(RecordID(rawValue: try transaction.insert(RASpecialItem(name: "s\(index)", rank: index, extra: index)).rawValue))
                    } else {
                        items.append(try transaction.insert(RAItem(name: "i\(index)", rank: index)))
                    }
                }
            }
            let order = items.shuffled(using: &random)
            let context = Context(store)
            let a = try context.insert(RAOwner(name: "a", rank: 0, items: order))
            let label = try context.insert(RALabel(name: "all", rank: 0, items: order.reversed()))
            let aID: RecordID<RAOwner>? = a
            #expect(try context.fetchCount(FetchDescriptor<RAItem>(predicate: #Predicate { $0.owner == aID })) == 0)  // not maintained before save
            try context.save()
            #expect(try context.record(for: a)?.items == order)
            #expect(try context.fetchCount(FetchDescriptor<RAItem>(predicate: #Predicate { $0.owner == aID })) == count)
            #expect(try context.fetchCount(FetchDescriptor<RAItem>(predicate: #Predicate { $0.labels.contains(label) })) == count)
            // Every third moves to b through its to-one side, in one save.
            let b = try context.insert(RAOwner(name: "b", rank: 1))
            let moved = Set(order.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
            for id in moved {
                var item = try #require(try context.record(for: id))
                item.owner = b
                try context.update(id, to: item)
            }
            try context.save()
            #expect(try context.record(for: a)?.items == order.filter { !moved.contains($0) })
            #expect(Set(try #require(try context.record(for: b)).items) == moved)
            #expect(try store.verify().isValid)
            // Deleting a cascades to its ~1,000 items; the label keeps only b's.
            try context.delete(a)
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<RAItem>()) == moved.count)
            #expect(try context.record(for: label)?.items == order.reversed().filter { moved.contains($0) })
            #expect(try store.verify().isValid)
        }
    }

    @Test func aRequiredToOneLeftEmpty() throws {
        try withStore { store, _ in
            let context = Context(store)
            let house = try context.insert(RAHouse(name: "h"))
            let other = try context.insert(RAHouse(name: "o"))
            let rooms = try (0..<3).map { try context.insert(RARoom(name: "r\($0)", house: house)) }
            try context.save()
            #expect(try context.record(for: house)?.rooms == rooms)
            // Removing a room from the list would leave its required house empty.
            try context.update(house, to: RAHouse(name: "h", rooms: [rooms[0], rooms[2]]))
            #expect(throws: StrataError.requiredRelationship(record: "RARoom#\(rooms[1].rawValue)", relationship: "house")) { try context.save() }
            context.rollback()
            // Deleting the house (nullify) would too; nothing is stored.
            try context.delete(house)
            #expect { try context.save() } throws: { isRequired($0, "house") }
            context.rollback()
            #expect(try Context(store).record(for: house)?.rooms == rooms)
            // Deleting the rooms too is fine; moving a room to another house is fine.
            try context.update(other, to: RAHouse(name: "o", rooms: [rooms[1]]))
            try context.save()
            #expect(try context.record(for: rooms[1])?.house == other)
            #expect(try context.record(for: house)?.rooms == [rooms[0], rooms[2]])
            // A required to-one naming no record: id 0 and an id never handed out.
            #expect(throws: (any Error).self) { try context.insert(RARoom(name: "zero", house: RecordID(rawValue: 0))) }
            #expect(!context.hasChanges)
            try context.insert(RARoom(name: "ghost", house: RecordID(rawValue: 999)))
            #expect { try context.save() } throws: {
                if case StrataError.danglingReference(_, "house", "RAHouse#999") = $0 { return true }
                return false
            }
            context.rollback()
            // Store.write reports the same error.
            #expect { try store.write { _ = try $0.delete(house) } } throws: { isRequired($0, "house") }
            #expect(try Context(store).fetchCount(FetchDescriptor<RARoom>()) == 3)
            #expect(try store.verify().isValid)
            // Deleting the rooms with their house is fine.
            try context.delete(rooms[0])
            try context.delete(rooms[2])
            try context.delete(house)
            try context.save()
            #expect(try context.fetch(FetchDescriptor<RARoom>()).map(\.id) == [rooms[1]])
            #expect(try store.verify().isValid)
        }
    }

    @Test func anInverseDeclaredOnOneSideIsMaintainedFromBoth() throws {
        try withStore { store, _ in
            let context = Context(store)
            let shelf = try context.insert(RAShelf(name: "s"))
            let second = try context.insert(RAShelf(name: "t"))
            let volume = try context.insert(RAVolume(title: "v", shelf: shelf))  // set from the side naming no inverse
            try context.save()
            #expect(try context.record(for: shelf)?.volumes == [volume])
            try context.update(second, to: RAShelf(name: "t", volumes: [volume]))
            try context.save()
            #expect(try context.record(for: volume)?.shelf == second)
            #expect(try context.record(for: shelf)?.volumes == [])
            try context.delete(second)
            try context.save()
            #expect(try context.record(for: volume)?.shelf == nil)  // the shelf's nullify
            try context.update(volume, to: RAVolume(title: "v", shelf: shelf))
            try context.save()
            try context.delete(volume)
            try context.save()
            #expect(try context.record(for: shelf)?.volumes == [])
            #expect(try store.verify().isValid)
        }
    }

    /// Two changes of one save that contradict: Strata documents "the later (entity id, then
    /// record id) wins" — not the app's order, as SwiftData's in-memory graph would give. The
    /// outcome must at least be the same whatever the app's order, and both sides agree.
    @Test func contradictingChangesInOneSaveEndConsistent() throws {
        var outcomes: [[String]] = []
        for appOrder in [false, true] {
            try withStore { store, _ in
                let context = Context(store)
                let first = try context.insert(RAOwner(name: "first", rank: 0))
                let second = try context.insert(RAOwner(name: "second", rank: 0))
                let item = try context.insert(RAItem(name: "i", rank: 0))
                try context.save()
                if appOrder {
                    try context.update(item, to: RAItem(name: "i", rank: 0, owner: first))
                    try context.update(second, to: RAOwner(name: "second", rank: 0, items: [item]))
                } else {
                    try context.update(second, to: RAOwner(name: "second", rank: 0, items: [item]))
                    try context.update(item, to: RAItem(name: "i", rank: 0, owner: first))
                }
                try context.save()
                let owner = try context.record(for: item)?.owner
                let lists = [try context.record(for: first)?.items, try context.record(for: second)?.items]
                #expect(owner != nil)
                #expect(lists.compactMap { $0 }.filter { $0 == [item] }.count == 1)
                #expect(owner == (lists[0] == [item] ? first : second))
                #expect(try store.verify().isValid)
                outcomes.append(["\(owner.map { "\($0.rawValue)" } ?? "nil")"])
            }
        }
        #expect(outcomes[0] == outcomes[1], "the outcome depends on the app's order: \(outcomes)")
    }

    /// Unsaved changes: reads, fetches by relationship and counts show the given values; a
    /// rollback forgets them; an insert deleted before the save that another record refers to.
    @Test func unsavedRelationshipChangesInFetchesAndCounts() throws {
        try withStore { store, _ in
            let context = Context(store)
            let owner = try context.insert(RAOwner(name: "o", rank: 0))
            let items = try (0..<4).map { try context.insert(RAItem(name: "i\($0)", rank: $0, owner: $0 < 2 ? owner : nil)) }
            let ownerID: RecordID<RAOwner>? = owner
            // Before the first save: the items say owner, the owner lists none (given values).
            #expect(try context.fetchCount(FetchDescriptor<RAItem>(predicate: #Predicate { $0.owner == ownerID })) == 2)
            #expect(try context.record(for: owner)?.items == [])
            #expect(try context.fetchCount(FetchDescriptor<RAOwner>(predicate: #Predicate { $0.items.isEmpty })) == 1)
            try context.save()
            #expect(try context.record(for: owner)?.items == [items[0], items[1]])
            #expect(try context.fetchCount(FetchDescriptor<RAOwner>(predicate: #Predicate { $0.items.isEmpty })) == 0)

            try context.update(items[3], to: RAItem(name: "i3", rank: 3, owner: owner))
            try context.delete(items[0])
            let byOwner = FetchDescriptor<RAItem>(predicate: #Predicate { $0.owner == ownerID }, sortBy: [RecordSort(\.rank)])
            #expect(try context.fetch(byOwner).map(\.id) == [items[1], items[3]])
            #expect(try context.fetchCount(byOwner) == 2)
            #expect(try context.fetchCount(FetchDescriptor<RAItem>()) == 3)
            context.rollback()
            #expect(try context.fetch(byOwner).map(\.id) == [items[0], items[1]])
            #expect(try context.fetchCount(byOwner) == 2)

            // A record inserted and deleted before the save, still referred to: refused.
            let temporary = try context.insert(RALabel(name: "tmp", rank: 0))
            try context.update(items[2], to: RAItem(name: "i2", rank: 2, labels: [temporary]))
            try context.delete(temporary)
            #expect(throws: StrataError.danglingReference(record: "RAItem#\(items[2].rawValue)", relationship: "labels",
                                                          destination: "RALabel#\(temporary.rawValue)")) { try context.save() }
            context.rollback()
            #expect(try store.verify().isValid)
        }
    }
}

extension RARec {
    func renamed(_ name: String) -> RARec {
        var copy = self
        copy.name = name
        return copy
    }
}

func isRequired(_ error: any Error, _ relationship: String) -> Bool {
    if case StrataError.requiredRelationship(_, let name) = error { return name == relationship }
    return false
}

struct RACollector: PersistentRecord, Equatable {
    var name: String
    var specials: [RecordID<RASpecialItem>] = []
}

extension RelationshipAdversaryTests {
    func isDangling(_ error: any Error, _ relationship: String, _ destination: String) -> Bool {
        if case StrataError.danglingReference(_, let name, let target) = error { return name == relationship && target == destination }
        return false
    }

    /// A reference added by a save to a record the same save deletes. `Store.write` applies
    /// each change as it comes: a reference to a record already deleted is refused
    /// (`danglingReference`). A context's save applies its inserts and updates before its
    /// deletes, as SwiftData's does, so the deleted record's delete rule then meets the new
    /// reference: cascade deletes the new record, nullify empties the reference, no action
    /// leaves it in place (Architecture.md, "Relationships").
    @Test func aReferenceToARecordDeletedInTheSameSave() throws {
        try withStore { store, _ in
            let context = Context(store)
            let owner = try context.insert(RAOwner(name: "o", rank: 0))
            let part = try context.insert(RAPart(name: "p", rank: 0))
            let label = try context.insert(RALabel(name: "l", rank: 0))
            try context.save()
            // Store.write: delete, then refer to it: refused.
            #expect { try store.write { t in
                _ = try t.delete(owner)
                _ = try t.insert(RAItem(name: "x", rank: 0, owner: owner))
            } } throws: { isDangling($0, "owner", "RAOwner#\(owner.rawValue)") }
            // Context, cascade: the new bolt goes with the part it refers to.
            try context.delete(part)
            let bolt = try context.insert(RABolt(name: "b", rank: 0, part: part))
            try context.save()
            #expect(try context.record(for: part) == nil)
            #expect(try context.record(for: bolt) == nil)
            // Context, nullify: the reference to the deleted owner is emptied.
            try context.delete(owner)
            let item = try context.insert(RAItem(name: "i", rank: 0, favoredBy: owner))
            try context.save()
            #expect(try context.record(for: item) == RAItem(name: "i", rank: 0, favoredBy: nil))
            // Context, no action: the reference is left in place, as the rule leaves it.
            try context.delete(label)
            let item2 = try context.insert(RAItem(name: "i2", rank: 0, labels: [label]))
            try context.save()
            #expect(try context.record(for: label) == nil)
            #expect(try context.record(for: item2)?.labels == [label])
            #expect(try store.verify().isValid)
        }
    }

    /// An app keeps a copy of a record, another save links a record to it, and the app then
    /// saves an attribute change from its copy. Architecture.md ("Relationships"): "a
    /// relationship the change did not touch: left as it is, so a record updated from a stale
    /// copy does not undo inverses maintained for others". SwiftData writes only changed
    /// properties: the link stays.
    @Test func aStaleCopySavedLaterUndoesAnotherSavesLink() throws {
        try withStore { store, _ in
            let a = Context(store), b = Context(store)
            let owner = try a.insert(RAOwner(name: "o", rank: 0))
            let first = try a.insert(RAItem(name: "i1", rank: 0, owner: owner))
            try a.save()
            // Across contexts.
            var stale = try #require(try a.record(for: owner))
            let second = try b.insert(RAItem(name: "i2", rank: 0, owner: owner))
            try b.save()
            stale.name = "renamed"
            try a.update(owner, to: stale)
            try a.save()
            let items = try a.record(for: owner)?.items, secondOwner = try a.record(for: second)?.owner
            withKnownIssue(Comment(rawValue: "Known issue: an update from a copy read before another save linked a record to it removes that link (the to-many is compared with the stored value, not with the value the copy was read with)")) {
                #expect(items == [first, second])
                #expect(secondOwner == owner)
            }
            // Within one context, across two saves.
            var copy = try #require(try a.record(for: owner))
            let third = try a.insert(RAItem(name: "i3", rank: 0, owner: owner))
            try a.save()
            copy.name = "renamed again"
            try a.update(owner, to: copy)
            try a.save()
            let thirdOwner = try a.record(for: third)?.owner
            withKnownIssue(Comment(rawValue: "Known issue: within one context, an update from a copy read before an earlier save removes the links that save maintained")) {
                #expect(thirdOwner == owner)
            }
            #expect(try store.verify().isValid)  // consistent, only the link is lost
        }
    }

    /// A relationship whose destination is a sub-entity accepts only that sub-entity's records.
    @Test func aSubEntityDestinationRefusesParentRecords() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: raTypes + [RACollector.self])
        defer { try? store.close() }
        let context = Context(store)
        let plain = try context.insert(RAItem(name: "plain", rank: 0))
        let special = try context.insert(RASpecialItem(name: "special", rank: 0, extra: 1))
        try context.save()
        try context.insert(RACollector(name: "c", specials: [RecordID(rawValue: plain.rawValue)]))
        #expect { try context.save() } throws: { isDangling($0, "specials", "RASpecialItem#\(plain.rawValue)") }
        context.rollback()
        let collector = try context.insert(RACollector(name: "c", specials: [special]))
        try context.save()
        // One-way: deleting the destination leaves the reference (documented, like no action).
        try context.delete(special)
        try context.save()
        #expect(try context.record(for: collector)?.specials == [special])
        #expect(try store.verify().isValid)
    }
}
