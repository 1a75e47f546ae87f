#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Strata

// A chain of five schema versions of one entity, `Item`, that the operation fuzzer and the
// crash campaign migrate through, with a version-independent reference model (`ModelItem`).
//
//   V1 ─ declared lightweight ─▶ V2 ─ custom (map, willMigrate, didMigrate) ─▶ V3
//      ─ automatic lightweight (no stage) ─▶ V4 ─ custom (mapConcurrently, willMigrate) ─▶ V5

/// An item as the model keeps it: every attribute any version has, each at the value the
/// version that lacks it would read (so `V.Item(model).model` is the model's normal form).
struct ModelItem: Equatable, Sendable, CustomStringConvertible {
    var name: String
    var score: Int
    var note: String?
    var starred = false
    var label = ""
    var rank = 0
    var code = ""

    var description: String { "\(name) \(score) \(note ?? "nil") \(starred) \(label) \(rank) \(code)" }
}

/// A fetch's filter, answered by the model (`accepts`) and by a version's predicate.
enum FuzzFilter: CustomStringConvertible {
    case all
    case scoreAtLeast(Int)
    case titlePrefix(String)
    case starred
    case noteIsNil
    case rankAtLeast(Int)

    func accepts(_ item: ModelItem) -> Bool {
        switch self {
        case .all: true
        case .scoreAtLeast(let threshold): item.score >= threshold
        case .titlePrefix(let prefix): item.name.starts(with: prefix)
        case .starred: item.starred
        case .noteIsNil: item.note == nil
        case .rankAtLeast(let threshold): item.rank >= threshold
        }
    }

    var description: String {
        switch self {
        case .all: "all"
        case .scoreAtLeast(let threshold): "score >= \(threshold)"
        case .titlePrefix(let prefix): "title starts with \(prefix)"
        case .starred: "starred"
        case .noteIsNil: "note == nil"
        case .rankAtLeast(let threshold): "rank >= \(threshold)"
        }
    }
}

enum FuzzSortKey: CaseIterable { case none, score, title }

/// One version's record type, as the fuzzers drive it.
protocol FuzzItem: PersistentRecord, Equatable, SendableMetatype {
    init(_ model: ModelItem)
    var model: ModelItem { get }
    /// The predicate for `filter` (nil for `.all`, or when this version lacks the attribute:
    /// `supports` says which).
    static func predicate(_ filter: FuzzFilter) -> Predicate<Self>?
    static func supports(_ filter: FuzzFilter) -> Bool
    static func sort(_ key: FuzzSortKey, _ order: SortOrder) -> [RecordSort<Self>]
}

enum FuzzV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: FuzzItem {
        static var entityName: String { "Item" }
        var name: String
        var score: Int
        var note: String?

        init(_ m: ModelItem) { name = m.name; score = m.score; note = m.note }
        var model: ModelItem { ModelItem(name: name, score: score, note: note) }
        static func supports(_ filter: FuzzFilter) -> Bool {
            switch filter {
            case .all, .scoreAtLeast, .titlePrefix, .noteIsNil: true
            case .starred, .rankAtLeast: false
            }
        }
        static func predicate(_ filter: FuzzFilter) -> Predicate<Self>? {
            switch filter {
            case .scoreAtLeast(let t): return #Predicate<Self> { $0.score >= t }
            case .titlePrefix(let p): return #Predicate<Self> { $0.name.starts(with: p) }
            case .noteIsNil: return #Predicate<Self> { $0.note == nil }
            default: return nil
            }
        }
        static func sort(_ key: FuzzSortKey, _ order: SortOrder) -> [RecordSort<Self>] {
            switch key {
            case .none: []
            case .score: [RecordSort(\.score, order: order)]
            case .title: [RecordSort(\.name, order: order)]
            }
        }
    }
}

/// Lightweight from V1 (a declared stage): `name` renamed `title`, `starred` added with a default.
enum FuzzV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: FuzzItem {
        static var entityName: String { "Item" }
        static var originalAttributeNames: [String: String] { ["title": "name"] }
        static var attributeDefaults: [String: Value] { ["starred": false] }
        var title: String
        var score: Int
        var note: String?
        var starred: Bool

        init(_ m: ModelItem) { title = m.name; score = m.score; note = m.note; starred = m.starred }
        var model: ModelItem { ModelItem(name: title, score: score, note: note, starred: starred) }
        static func supports(_ filter: FuzzFilter) -> Bool {
            if case .rankAtLeast = filter { return false }
            return true
        }
        static func predicate(_ filter: FuzzFilter) -> Predicate<Self>? {
            switch filter {
            case .scoreAtLeast(let t): return #Predicate<Self> { $0.score >= t }
            case .titlePrefix(let p): return #Predicate<Self> { $0.title.starts(with: p) }
            case .noteIsNil: return #Predicate<Self> { $0.note == nil }
            case .starred: return #Predicate<Self> { $0.starred }
            default: return nil
            }
        }
        static func sort(_ key: FuzzSortKey, _ order: SortOrder) -> [RecordSort<Self>] {
            switch key {
            case .none: []
            case .score: [RecordSort(\.score, order: order)]
            case .title: [RecordSort(\.title, order: order)]
            }
        }
    }
}

/// Custom from V2: a required `label` (no default) computed by a transform that also drops
/// some records; `willMigrate` deletes others, `didMigrate` fills empty notes.
enum FuzzV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: FuzzItem {
        static var entityName: String { "Item" }
        var title: String
        var score: Int
        var note: String?
        var starred: Bool
        var label: String

        init(_ m: ModelItem) { title = m.name; score = m.score; note = m.note; starred = m.starred; label = m.label }
        var model: ModelItem { ModelItem(name: title, score: score, note: note, starred: starred, label: label) }
        static func supports(_ filter: FuzzFilter) -> Bool { FuzzV2.Item.supports(filter) }
        static func predicate(_ filter: FuzzFilter) -> Predicate<Self>? {
            switch filter {
            case .scoreAtLeast(let t): return #Predicate<Self> { $0.score >= t }
            case .titlePrefix(let p): return #Predicate<Self> { $0.title.starts(with: p) }
            case .noteIsNil: return #Predicate<Self> { $0.note == nil }
            case .starred: return #Predicate<Self> { $0.starred }
            default: return nil
            }
        }
        static func sort(_ key: FuzzSortKey, _ order: SortOrder) -> [RecordSort<Self>] {
            switch key {
            case .none: []
            case .score: [RecordSort(\.score, order: order)]
            case .title: [RecordSort(\.title, order: order)]
            }
        }
    }
}

/// Lightweight from V3 with no stage (applied automatically): `note` removed, `rank` added
/// with a default, `title` indexed (the index is built when the version is bound).
enum FuzzV4: VersionedSchema {
    static let versionIdentifier = Schema.Version(4, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: FuzzItem {
        static var entityName: String { "Item" }
        static var attributeOptions: [String: Attribute.Options] { ["title": [.indexed]] }
        static var attributeDefaults: [String: Value] { ["rank": 0] }
        var title: String
        var score: Int
        var starred: Bool
        var label: String
        var rank: Int

        init(_ m: ModelItem) { title = m.name; score = m.score; starred = m.starred; label = m.label; rank = m.rank }
        var model: ModelItem { ModelItem(name: title, score: score, starred: starred, label: label, rank: rank) }
        static func supports(_ filter: FuzzFilter) -> Bool {
            if case .noteIsNil = filter { return false }
            return true
        }
        static func predicate(_ filter: FuzzFilter) -> Predicate<Self>? {
            switch filter {
            case .scoreAtLeast(let t): return #Predicate<Self> { $0.score >= t }
            case .titlePrefix(let p): return #Predicate<Self> { $0.title.starts(with: p) }
            case .starred: return #Predicate<Self> { $0.starred }
            case .rankAtLeast(let t): return #Predicate<Self> { $0.rank >= t }
            default: return nil
            }
        }
        static func sort(_ key: FuzzSortKey, _ order: SortOrder) -> [RecordSort<Self>] {
            switch key {
            case .none: []
            case .score: [RecordSort(\.score, order: order)]
            case .title: [RecordSort(\.title, order: order)]
            }
        }
    }
}

/// Custom from V4: a required `code` computed by a pure transform run with `mapConcurrently`;
/// `willMigrate` raises the rank of starred items.
enum FuzzV5: VersionedSchema {
    static let versionIdentifier = Schema.Version(5, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self] }
    struct Item: FuzzItem {
        static var entityName: String { "Item" }
        static var attributeOptions: [String: Attribute.Options] { ["title": [.indexed]] }
        var title: String
        var score: Int
        var starred: Bool
        var label: String
        var rank: Int
        var code: String

        init(_ m: ModelItem) { title = m.name; score = m.score; starred = m.starred; label = m.label; rank = m.rank; code = m.code }
        var model: ModelItem { ModelItem(name: title, score: score, starred: starred, label: label, rank: rank, code: code) }
        static func supports(_ filter: FuzzFilter) -> Bool { FuzzV4.Item.supports(filter) }
        static func predicate(_ filter: FuzzFilter) -> Predicate<Self>? {
            switch filter {
            case .scoreAtLeast(let t): return #Predicate<Self> { $0.score >= t }
            case .titlePrefix(let p): return #Predicate<Self> { $0.title.starts(with: p) }
            case .starred: return #Predicate<Self> { $0.starred }
            case .rankAtLeast(let t): return #Predicate<Self> { $0.rank >= t }
            default: return nil
            }
        }
        static func sort(_ key: FuzzSortKey, _ order: SortOrder) -> [RecordSort<Self>] {
            switch key {
            case .none: []
            case .score: [RecordSort(\.score, order: order)]
            case .title: [RecordSort(\.title, order: order)]
            }
        }
    }
}

/// The stages, and what each does to the model.
enum FuzzStages {
    static let batchSize = 16

    static func label(_ score: Int, _ starred: Bool) -> String { "L\(score % 10)\(starred ? "*" : "")" }

    static var v1ToV2: MigrationStage { .lightweight(fromVersion: FuzzV1.self, toVersion: FuzzV2.self) }

    static var v2ToV3: MigrationStage {
        .custom(
        fromVersion: FuzzV2.self, toVersion: FuzzV3.self,
        transforms: [.map(FuzzV2.Item.self, to: FuzzV3.Item.self) { old in
            guard old.score % 11 != 0 else { return nil }
            return FuzzV3.Item(title: old.title, score: old.score, note: old.note, starred: old.starred, label: label(old.score, old.starred))
        }],
        batchSize: batchSize,
        willMigrate: { context in
            for match in try context.fetch(FetchDescriptor<FuzzV2.Item>()) where match.record.score % 7 == 0 {
                try context.delete(match.id)
            }
        },
        didMigrate: { context in
            for match in try context.fetch(FetchDescriptor<FuzzV3.Item>(predicate: #Predicate { $0.note == nil })) {
                var item = match.record
                item.note = "m" + item.label
                try context.update(match.id, to: item)
            }
        })
    }

    static var v4ToV5: MigrationStage {
        .custom(
        fromVersion: FuzzV4.self, toVersion: FuzzV5.self,
        transforms: [.mapConcurrently(FuzzV4.Item.self, to: FuzzV5.Item.self) { old in
            FuzzV5.Item(title: old.title, score: old.score, starred: old.starred, label: old.label, rank: old.rank, code: "\(old.label)-\(old.score)")
        }],
        batchSize: batchSize,
        willMigrate: { context in
            for match in try context.fetch(FetchDescriptor<FuzzV4.Item>(predicate: #Predicate { $0.starred })) {
                var item = match.record
                item.rank += 1
                try context.update(match.id, to: item)
            }
        })
    }

    /// The model's items after migrating from `from` to `to` (each step in turn).
    static func migrate(_ items: [UInt64: ModelItem], from: Int, to: Int) -> [UInt64: ModelItem] {
        var items = items
        guard from < to else { return items }
        for version in from..<to {
            for (id, old) in items {
                var item = old
                switch version {
                case 2:
                    guard item.score % 7 != 0 && item.score % 11 != 0 else { items[id] = nil; continue }
                    item.label = label(item.score, item.starred)
                    if item.note == nil { item.note = "m" + item.label }
                case 3:
                    item.note = nil
                    item.rank = 0
                case 4:
                    if item.starred { item.rank += 1 }
                    item.code = "\(item.label)-\(item.score)"
                default:
                    break
                }
                items[id] = item
            }
        }
        return items
    }
}

extension FuzzV3.Item {
    init(title: String, score: Int, note: String?, starred: Bool, label: String) {
        self.title = title; self.score = score; self.note = note; self.starred = starred; self.label = label
    }
}

extension FuzzV5.Item {
    init(title: String, score: Int, starred: Bool, label: String, rank: Int, code: String) {
        self.title = title; self.score = score; self.starred = starred; self.label = label; self.rank = rank; self.code = code
    }
}

// One plan per current version: each lists the versions up to it.
enum FuzzPlan2: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FuzzV1.self, FuzzV2.self] }
    static var stages: [MigrationStage] { [FuzzStages.v1ToV2] }
}
enum FuzzPlan3: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FuzzV1.self, FuzzV2.self, FuzzV3.self] }
    static var stages: [MigrationStage] { [FuzzStages.v1ToV2, FuzzStages.v2ToV3] }
}
enum FuzzPlan4: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FuzzV1.self, FuzzV2.self, FuzzV3.self, FuzzV4.self] }
    static var stages: [MigrationStage] { [FuzzStages.v1ToV2, FuzzStages.v2ToV3] }
}
enum FuzzPlan5: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FuzzV1.self, FuzzV2.self, FuzzV3.self, FuzzV4.self, FuzzV5.self] }
    static var stages: [MigrationStage] { [FuzzStages.v1ToV2, FuzzStages.v2ToV3, FuzzStages.v4ToV5] }
}

enum FuzzVersions {
    static let latest = 5

    /// Version `version`'s schema, plan (nil for the first) and record type.
    static func version(_ version: Int) -> (schema: any VersionedSchema.Type, plan: (any SchemaMigrationPlan.Type)?, item: any FuzzItem.Type) {
        switch version {
        case 1: (FuzzV1.self, nil, FuzzV1.Item.self)
        case 2: (FuzzV2.self, FuzzPlan2.self, FuzzV2.Item.self)
        case 3: (FuzzV3.self, FuzzPlan3.self, FuzzV3.Item.self)
        case 4: (FuzzV4.self, FuzzPlan4.self, FuzzV4.Item.self)
        default: (FuzzV5.self, FuzzPlan5.self, FuzzV5.Item.self)
        }
    }
}
