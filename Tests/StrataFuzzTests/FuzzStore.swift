#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat
import StrataIO
import StrataTestSupport
@testable import Strata

// The small real store the decoder and store-file campaigns start from: two entities, a unique
// and an indexed attribute, overflowed records, a history journal with several authors, a
// completed custom migration that quarantined records, several segment files — and copies of
// its files taken before its later commits (stale pages to put back).

enum FzV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self, Tag.self] }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "FzItem" }
        var name: String
        var rank: Int
        var note: String
        var score: Double
        static var attributeOptions: [String: Attribute.Options] { ["name": [.unique], "rank": [.indexed]] }
    }
    struct Tag: PersistentRecord, Equatable, Hashable {
        static var entityName: String { "FzTag" }
        var label: String
        var weight: Int
        static var attributeOptions: [String: Attribute.Options] { ["label": [.preserveValueOnDeletion]] }
    }
}

/// V1 → V2 is custom: `summary` derived from the name and rank; records of some ranks rejected
/// (quarantined).
enum FzV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self, FzV1.Tag.self] }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "FzItem" }
        var name: String
        var rank: Int
        var note: String
        var score: Double
        var summary: String
        static var attributeOptions: [String: Attribute.Options] { ["name": [.unique], "rank": [.indexed]] }
    }
}

/// V2 → V3 is lightweight (an optional attribute added).
enum FzV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self, FzV1.Tag.self] }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "FzItem" }
        var name: String
        var rank: Int
        var note: String
        var score: Double
        var summary: String
        var flag: Bool?
        static var attributeOptions: [String: Attribute.Options] { ["name": [.unique], "rank": [.indexed]] }
    }
}

/// V3 → V4 is custom: `score` becomes text (a type change), `summary` rewritten.
enum FzV4: VersionedSchema {
    static let versionIdentifier = Schema.Version(4, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self, FzV1.Tag.self] }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "FzItem" }
        var name: String
        var rank: Int
        var note: String
        var score: String
        var summary: String
        var flag: Bool?
        static var attributeOptions: [String: Attribute.Options] { ["name": [.unique], "rank": [.indexed]] }
    }
}

struct FzRejection: Error, CustomStringConvertible {
    let rank: Int
    var description: String { "rank \(rank) rejected" }
}

/// The V1 → V2 transform (nil: the record is quarantined).
func fzSummarize(_ old: FzV1.Item) -> FzV2.Item? {
    if old.rank % 13 == 5 { return nil }
    return FzV2.Item(name: old.name, rank: old.rank, note: old.note, score: old.score, summary: "\(old.name)/\(old.rank)")
}

/// The V2 → V4 records (through V3's added attribute, absent).
func fzRewrite(_ item: FzV2.Item) -> FzV4.Item {
    FzV4.Item(name: item.name, rank: item.rank, note: item.note, score: "\(item.score)", summary: item.summary + "!", flag: nil)
}

enum FzPlanV2: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FzV1.self, FzV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: FzV1.self, toVersion: FzV2.self,
                 transforms: [.map(FzV1.Item.self, to: FzV2.Item.self) { old in
                     guard let new = fzSummarize(old) else { throw FzRejection(rank: old.rank) }
                     return new
                 }],
                 batchSize: 16, rejectedRecords: .quarantine)]
    }
}

enum FzPlanV4: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FzV1.self, FzV2.self, FzV3.self, FzV4.self] }
    static var stages: [MigrationStage] {
        FzPlanV2.stages + [
            .lightweight(fromVersion: FzV2.self, toVersion: FzV3.self),
            .custom(fromVersion: FzV3.self, toVersion: FzV4.self,
                    transforms: [.map(FzV3.Item.self, to: FzV4.Item.self) { old in
                        FzV4.Item(name: old.name, rank: old.rank, note: old.note, score: "\(old.score)", summary: old.summary + "!", flag: old.flag)
                    }],
                    batchSize: 16),
        ]
    }
}

/// The records of one committed state, in V2 terms.
struct FzState: Equatable {
    var items: [UInt64: FzV2.Item] = [:]
    var tags: [UInt64: FzV1.Tag] = [:]
}

/// A built store: its files, the committed states (in commit order; the last is the store's),
/// its journal, and copies of its files taken along the way.
struct FzStore {
    static let path = "/store"
    /// The files after a clean close, and before it (the newest commits only in the tail).
    var files: [String: [UInt8]]
    var tailFiles: [String: [UInt8]]
    var states: [FzState]
    var history: [HistoryTransaction]
    var quarantined: Int
    var olderFiles: [[String: [UInt8]]]

    static func configuration(compression: Bool = true) -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.storage.compression = compression
        configuration.storage.segmentSize = 16 << 10  // several segment files
        configuration.storage.automaticCompaction = false
        configuration.storage.spaceReserve = 0  // zeros only: damage drawn on it would be wasted
        configuration.cacheBytes = 1 << 20
        return configuration
    }

    static func note(_ index: Int, _ random: inout SeededRandom) -> String {
        // Every 9th note is longer than a leaf's inline limit (an overflowed record).
        index % 9 == 4 ? String(repeating: "long note \(index) ", count: 260) : "note \(index) " + String(repeating: "x", count: Int(random.next() % 40))
    }

    /// Builds the store with `random`: about 50 items and 12 tags over ~10 transactions, the
    /// migration to V2 in the middle; pages LZ4-compressed when that pays, or never.
    static func build(_ random: inout SeededRandom, compression: Bool = true) throws -> FzStore {
        func configuration() -> Store.Configuration { Self.configuration(compression: compression) }
        let fs = MemoryFileSystem()
        var states: [FzState] = [FzState()]
        var olderFiles: [[String: [UInt8]]] = []
        func readV1(_ store: Store) throws -> FzState {
            let context = Context(store)
            var state = FzState()
            for item in try context.fetch(FetchDescriptor<FzV1.Item>()) {
                if let new = fzSummarize(item.record) { state.items[item.id.rawValue] = new }
            }
            for tag in try context.fetch(FetchDescriptor<FzV1.Tag>()) { state.tags[tag.id.rawValue] = tag.record }
            return state
        }
        func readV2(_ store: Store) throws -> FzState {
            let context = Context(store)
            var state = FzState()
            for item in try context.fetch(FetchDescriptor<FzV2.Item>()) { state.items[item.id.rawValue] = item.record }
            for tag in try context.fetch(FetchDescriptor<FzV1.Tag>()) { state.tags[tag.id.rawValue] = tag.record }
            return state
        }
        var next = 0
        do {
            let store = try Store(at: path, schema: FzV1.self, migrationPlan: nil, configuration: configuration(), fileSystem: fs)
            for round in 0..<4 {
                try store.write(author: round % 2 == 0 ? "loader" : nil) { transaction in
                    for _ in 0..<12 {
                        _ = try transaction.insert(FzV1.Item(name: "item \(next)", rank: next % 17, note: note(next, &random),
                                                             score: Double(random.next() % 1_000) / 8))
                        next += 1
                    }
                    for _ in 0..<3 { _ = try transaction.insert(FzV1.Tag(label: "tag \(random.next() % 100)", weight: Int(random.next() % 10))) }
                }
                states.append(try readV1(store))
            }
            let context = Context(store, author: "editor")
            try context.delete(RecordID<FzV1.Item>(rawValue: 3))
            try context.update(RecordID<FzV1.Item>(rawValue: 7), to: FzV1.Item(name: "item 7b", rank: 3, note: "edited", score: 1.5))
            try context.delete(RecordID<FzV1.Tag>(rawValue: 2))
            try context.save()
            states.append(try readV1(store))
            try store.close()
        }
        olderFiles.append(fs.allFiles())
        // The migration, then more commits under V2.
        let store = try Store(at: path, schema: FzV2.self, migrationPlan: FzPlanV2.self, configuration: configuration(), fileSystem: fs)
        let quarantined = try store.quarantinedRecords().count
        states.append(try readV2(store))
        olderFiles.append(fs.allFiles())
        for round in 0..<4 {
            let context = Context(store, author: "app")
            for _ in 0..<4 {
                _ = try context.insert(FzV2.Item(name: "item \(next)", rank: next % 17, note: note(next, &random), score: 2,
                                                 summary: "new \(next)"))
                next += 1
            }
            let ids = states[states.count - 1].items.keys.sorted()
            let victim = ids[Int(random.next() % UInt64(ids.count))]
            if round % 2 == 0 {
                try context.delete(RecordID<FzV2.Item>(rawValue: victim))
            } else if var item = states[states.count - 1].items[victim] {
                item.summary += " (updated)"
                item.score += 1
                try context.update(RecordID<FzV2.Item>(rawValue: victim), to: item)
            }
            _ = try context.insert(FzV1.Tag(label: "later \(round)", weight: round))
            try context.save()
            states.append(try readV2(store))
            if round == 1 { olderFiles.append(fs.allFiles()) }
        }
        let history = try store.fetchHistory()
        // The files as a power cut would leave them now: the last commits durable in the log's
        // tail, not yet checkpointed (closing checkpoints).
        let tailFiles = fs.allFiles()
        try store.close()
        return FzStore(files: fs.allFiles(), tailFiles: tailFiles, states: states, history: history, quarantined: quarantined,
                       olderFiles: olderFiles)
    }
}

/// The frames of a segment file: each one's offset and length (stops at the first bytes that
/// are not a valid frame).
func fzFrames(of bytes: [UInt8]) -> [(offset: Int, length: Int, header: FrameHeader, payload: [UInt8])] {
    var result: [(Int, Int, FrameHeader, [UInt8])] = []
    var position = SegmentHeader.size
    while position + FrameHeader.size <= bytes.count {
        let decoded: (FrameHeader, [UInt8])? = bytes.withUnsafeBytes { raw in
            try? FrameCodec.decode(UnsafeRawBufferPointer(rebasing: raw[position...]))
        }
        guard let (header, payload) = decoded, position + header.frameLength <= bytes.count else { break }
        result.append((position, header.frameLength, header, payload))
        position += header.frameLength
    }
    return result
}
