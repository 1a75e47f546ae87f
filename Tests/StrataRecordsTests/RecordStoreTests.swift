import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataTestSupport

@Suite struct RecordStoreTests {
    typealias Model = [UInt32: [UInt64: [UInt8]]]

    static func options() -> PageLogOptions {
        var options = PageLogOptions()
        options.segmentSize = 64 << 10
        options.checkpointInterval = 96 << 10
        options.automaticCompaction = false
        return options
    }

    static func treeOptions() -> RecordTreeOptions {
        var options = RecordTreeOptions()
        options.maximumNodeSize = 600
        options.maximumInlineRecord = 200
        options.overflowChunkSize = 400
        return options
    }

    static func contents(_ store: RecordStore) throws -> Model {
        let snapshot = try store.snapshot()
        var model: Model = [:]
        for entityID in snapshot.root.entities.keys {
            var records: [UInt64: [UInt8]] = [:]
            try snapshot.reader(for: entityID).scan { id, bytes in records[id] = Array(bytes); return true }
            if !records.isEmpty { model[entityID] = records }
            #expect(UInt64(records.count) == snapshot.root.entities[entityID]?.tree.count)
        }
        return model
    }

    /// One seeded transaction over several entities; returns the model after it.
    static func transaction(_ records: RecordTransaction, model: Model, random: inout SeededRandom) throws -> Model {
        var model = model
        for _ in 0..<Int.random(in: 1...25, using: &random) {
            let entity = UInt32.random(in: 1...3, using: &random)
            let tree = records.tree(for: entity, schemaVersion: 1)
            let existing = model[entity]?.keys.sorted().randomElement(using: &random)  // sorted: reproducible from the seed
            switch Int.random(in: 0..<6, using: &random) {
            case 0..<3:
                let id = records.allocateRowID(for: entity)
                let bytes = Bool.random(using: &random) ? random.recordLikeBytes(Int.random(in: 0...150, using: &random))
                                                        : random.bytes(Int.random(in: 0...900, using: &random))
                try tree.insert(id, bytes: bytes)
                model[entity, default: [:]][id] = bytes
            case 3, 4:
                if let id = existing {
                    let bytes = random.recordLikeBytes(Int.random(in: 0...300, using: &random))
                    try tree.update(id, bytes: bytes)
                    model[entity]?[id] = bytes
                }
            default:
                if let id = existing {
                    try tree.delete(id)
                    model[entity]?[id] = nil
                    if model[entity]?.isEmpty == true { model[entity] = nil }
                }
            }
        }
        return model
    }

    @Test func entitiesChangeTogetherAtomically() throws {
        struct Abort: Error {}
        let seed = SeededRandom.seed(default: 0x5707E)
        print("entitiesChangeTogetherAtomically seed \(seed)")
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        var store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: Self.options()), treeOptions: Self.treeOptions())
        var model: Model = [:]
        var usedIDs: [UInt32: Set<UInt64>] = [:]
        for round in 0..<150 {
            let abort = round % 7 == 3
            do {
                let next = try store.write(durability: .relaxed) { records -> Model in
                    let next = try Self.transaction(records, model: model, random: &random)
                    if round == 0 { try records.setCatalog(Array("catalog v1".utf8)) }
                    if abort { throw Abort() }
                    return next
                }
                for (entity, records) in next { usedIDs[entity, default: []].formUnion(records.keys) }
                model = next
            } catch is Abort {}
            #expect(try Self.contents(store) == model, "round \(round)")
            if round % 40 == 39 {
                try store.log.close()
                store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: Self.options()), treeOptions: Self.treeOptions())
                #expect(try Self.contents(store) == model, "after reopen, round \(round)")
            }
        }
        #expect(try store.snapshot().catalogBytes() == Array("catalog v1".utf8))
        // Ids of committed records are never handed out again, even after deletes.
        let fresh = try store.write { records in (1...3).map { records.allocateRowID(for: UInt32($0)) } }
        for (index, id) in fresh.enumerated() {
            #expect(!(usedIDs[UInt32(index + 1)] ?? []).contains(id))
        }
    }

    /// Power loss at every sync point of a multi-entity workload: every entity's records are
    /// exactly those of one committed transaction, at or after the last durable one.
    @Test func crashAtEverySyncPoint() throws {
        let seed = SeededRandom.seed(default: 0x5707F)
        print("RecordStore crashAtEverySyncPoint seed \(seed)")
        func run(_ fs: MemoryFileSystem) -> (states: [Model], lastDurable: Int, inDoubt: Model?) {
            var random = SeededRandom(seed: seed)
            var states: [Model] = [[:]]
            var lastDurable = 0
            do {
                let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: Self.options()),
                                        treeOptions: Self.treeOptions())
                for round in 0..<60 {
                    let durable = round % 4 == 0
                    var candidate: Model?
                    do {
                        let next = try store.write(durability: durable ? .durable : .relaxed) { records in
                            let next = try Self.transaction(records, model: states.last ?? [:], random: &random)
                            candidate = next
                            return next
                        }
                        states.append(next)
                        if durable { lastDurable = states.count - 1 }
                    } catch {
                        return (states, lastDurable, candidate)
                    }
                    if round % 15 == 14 {
                        try store.log.checkpoint()
                        lastDurable = states.count - 1
                    }
                }
            } catch {}
            return (states, lastDurable, nil)
        }
        let reference = MemoryFileSystem()
        let clean = run(reference)
        #expect(clean.states.count == 61)
        let syncs = reference.counters.syncs
        var tested = 0
        for point in 0...syncs {
            for mode in MemoryFileSystem.CrashMode.allCases {
                var random = SeededRandom(seed: seed &+ UInt64(point))
                let (fs, outcome) = MemoryFileSystem.runUntilPowerCut(atSync: point, mode: mode, using: &random, run)
                let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: Self.options()),
                                        treeOptions: Self.treeOptions())
                let recovered = try Self.contents(store)
                let acceptable = outcome.states[outcome.lastDurable...].contains(recovered) || recovered == outcome.inDoubt
                #expect(acceptable, "sync point \(point), mode \(mode), seed \(seed)")
                tested += 1
            }
        }
        print("RecordStore crashAtEverySyncPoint: \(tested) crash points")
        #expect(tested == 3 * (syncs + 1))
    }
}
