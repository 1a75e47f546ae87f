#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
import Strata
import StrataTestSupport

/// Power loss at every sync point of a workload through the public API's bulk path
/// (`Store.write`: ids from reserved blocks, inserts straight into the trees, an indexed
/// attribute kept in step): after reopening, the records are exactly those of one committed
/// transaction at or after the last durable one, the index agrees with a scan, and a new
/// insert never reuses an identifier a recovered record holds.
@Suite struct StoreCrashTests {
    typealias Model = [UInt64: Tagged]

    static func configuration(durability: Durability) -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.durability = durability
        configuration.storage.automaticCompaction = false
        return configuration
    }

    static func open(_ fs: MemoryFileSystem, durability: Durability = .durable) throws -> Store {
        let schema = try Schema(version: Schema.Version(1, 0, 0), types: [Tagged.self])
        return try Store(at: "/store", schema: schema, configuration: configuration(durability: durability), fileSystem: fs)
    }

    /// One transaction of the workload: a run of bulk inserts (sometimes past the id blocks'
    /// largest size), some updates and deletes of existing records.
    static func transaction(_ transaction: Store.WriteTransaction, model: Model, random: inout SeededRandom) throws -> Model {
        var model = model
        let inserts = random.next() % 3 == 0 ? 1_100 + Int(random.next() % 900) : Int(random.next() % 60)
        for _ in 0..<inserts {
            let record = Tagged(tag: Int(random.next() % 23), note: "n\(random.next() % 1_000)")
            model[try transaction.insert(record).rawValue] = record
        }
        for id in model.keys.sorted().filter({ _ in random.next() % 40 == 0 }) {
            if random.next() % 2 == 0 {
                _ = try transaction.delete(RecordID<Tagged>(rawValue: id))
                model[id] = nil
            } else {
                let record = Tagged(tag: Int(random.next() % 23), note: "updated")
                try transaction.update(RecordID<Tagged>(rawValue: id), to: record)
                model[id] = record
            }
        }
        return model
    }

    @Test func crashAtEverySyncPointOfBulkWrites() throws {
        let seed = SeededRandom.seed(default: 0xB0_1C)
        print("StoreCrashTests seed \(seed)")
        func run(_ fs: MemoryFileSystem) -> (states: [Model], lastDurable: Int, inDoubt: Model?) {
            var random = SeededRandom(seed: seed)
            var states: [Model] = [[:]]
            var lastDurable = 0
            do {
                let durableStore = try Self.open(fs)
                for _ in 0..<14 {
                    var candidate: Model?
                    do {
                        let next = try durableStore.write { transaction in
                            let next = try Self.transaction(transaction, model: states.last ?? [:], random: &random)
                            candidate = next
                            return next
                        }
                        states.append(next)
                        lastDurable = states.count - 1  // durable: synced before `write` returned
                    } catch {
                        return (states, lastDurable, candidate)
                    }
                }
                try durableStore.close()
            } catch {}
            return (states, lastDurable, nil)
        }
        let reference = MemoryFileSystem()
        let clean = run(reference)
        #expect(clean.states.count == 15)
        let syncs = reference.counters.syncs
        var tested = 0
        for point in 0...syncs {
            for mode in MemoryFileSystem.CrashMode.allCases {
                var random = SeededRandom(seed: seed &+ UInt64(point))
                let (fs, outcome) = MemoryFileSystem.runUntilPowerCut(atSync: point, mode: mode, using: &random, run)
                let store = try Self.open(fs)
                let context = Context(store)
                let all = try context.fetch(FetchDescriptor<Tagged>())
                var recovered: Model = [:]
                for match in all { recovered[match.id.rawValue] = match.record }
                let acceptable = outcome.states[outcome.lastDurable...].contains(recovered) || recovered == outcome.inDoubt
                #expect(acceptable, "sync point \(point), mode \(mode), seed \(seed): \(recovered.count) records")
                for tag in [0, 7, 22] {
                    let indexed = try context.fetch(FetchDescriptor<Tagged>(predicate: #Predicate { $0.tag == tag })).map(\.id.rawValue)
                    #expect(indexed == all.filter { $0.record.tag == tag }.map(\.id.rawValue), "index, sync point \(point), mode \(mode)")
                }
                let next = try store.write { try $0.insert(Tagged(tag: 1, note: "after")) }
                #expect(recovered[next.rawValue] == nil && next.rawValue > (recovered.keys.max() ?? 0),
                        "id \(next.rawValue) reused, sync point \(point), mode \(mode), seed \(seed)")
                try store.close()
                tested += 1
            }
        }
        print("StoreCrashTests: \(tested) crash points")
        #expect(tested == 3 * (syncs + 1))
    }
}
