#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import Testing
@_spi(Engine) import Strata
import StrataTestSupport

/// A record whose every decoding is counted (it decodes itself by hand, through
/// `init(from: RecordReader)`), with a payload after its small fields. Used by
/// `FetchCountTests.aCountWithoutPredicateDecodesNoRecord` only, so the count is that test's.
struct Parcel: PersistentRecord, Equatable {
    var label: String
    var weight: Int
    var payload: Data
    static let decodes = Atomic<Int>(0)
}

extension Parcel {
    init(from reader: RecordReader) throws {
        Parcel.decodes.add(1, ordering: .relaxed)
        self.init(label: try reader.decode(String.self, forKey: "label"), weight: try reader.decode(Int.self, forKey: "weight"),
                  payload: try reader.decode(Data.self, forKey: "payload"))
    }
}

/// A record stored in overflow pages (a payload of several 1 MiB chunks) between small fields:
/// `weight` is stored before the payload, `stamp` after it (attribute ids follow declaration
/// order). Its decodings are counted. Used by `FetchCountTests.aFilterOnASmallFieldReadsNoOverflowChunk`
/// only.
struct Crate: PersistentRecord, Equatable {
    var label: String
    var weight: Int
    var payload: Data
    var stamp: Int
    static let decodes = Atomic<Int>(0)
}

extension Crate {
    init(from reader: RecordReader) throws {
        Crate.decodes.add(1, ordering: .relaxed)
        self.init(label: try reader.decode(String.self, forKey: "label"), weight: try reader.decode(Int.self, forKey: "weight"),
                  payload: try reader.decode(Data.self, forKey: "payload"), stamp: try reader.decode(Int.self, forKey: "stamp"))
    }
}

/// A record with an indexed rank and an indexed name, for counts read from an index.
struct Tally: PersistentRecord, Equatable {
    static var attributeOptions: [String: Attribute.Options] { ["rank": [.indexed], "name": [.indexed]] }
    var rank: Int
    var name: String
    var score: Double
    var note: String?
}

/// `fetchCount` (issue 19, item 8): it equals `fetch(...).count` — without a predicate, with
/// predicates the pre-filter decides or not, through an index, with offsets and limits,
/// unsaved inserts, updates and deletes, across an inheritance family — and reads no more
/// than it needs: no record without a predicate, no record decoded when the stored bytes
/// decide, no overflow chunk but the first of a record whose tested fields come first.
@Suite struct FetchCountTests {
    /// The descriptors every round compares (`count` against `fetch(...).count`).
    static func tallyDescriptors(_ random: inout SeededRandom) -> [FetchDescriptor<Tally>] {
        let low = Int.random(in: 0..<100, using: &random), high = low + Int.random(in: 0..<40, using: &random)
        let name = "N\(Int.random(in: 0..<20, using: &random))"
        let score = Double.random(in: 0..<1, using: &random)
        let predicates: [Predicate<Tally>?] = [
            nil,
            #Predicate { $0.rank >= low && $0.rank <= high },              // the index holds exactly the answer
            #Predicate { $0.rank == low },                                  // likewise
            #Predicate { $0.name == name },                                 // an indexed string equality
            #Predicate { $0.rank > low },                                   // bounded on one side: records re-checked
            #Predicate { $0.score < score && $0.note != nil },              // decided on the stored bytes
            #Predicate { $0.note?.contains("7") == true || $0.rank == 3 },  // partly left to the predicate
            #Predicate { $0.name.contains("1") },                           // always decoded
        ]
        var descriptors: [FetchDescriptor<Tally>] = []
        for predicate in predicates {
            descriptors.append(FetchDescriptor(predicate: predicate))
            let offset = Bool.random(using: &random) ? Int.random(in: -2..<30, using: &random) : nil
            let limit = Bool.random(using: &random) ? Int.random(in: -1..<30, using: &random) : nil
            descriptors.append(FetchDescriptor(predicate: predicate, sortBy: [RecordSort(\.rank)], fetchLimit: limit, fetchOffset: offset))
        }
        return descriptors
    }

    static func tally(_ random: inout SeededRandom) -> Tally {
        Tally(rank: Int.random(in: 0..<150, using: &random), name: "N\(Int.random(in: 0..<20, using: &random))",
              score: Double.random(in: 0..<1, using: &random), note: Bool.random(using: &random) ? "n\(Int.random(in: 0..<100, using: &random))" : nil)
    }

    @Test func countsEqualFetchCountsWithUnsavedChanges() throws {
        let seed = SeededRandom.seed(default: 0xC0_417)
        print("FetchCountTests.countsEqualFetchCountsWithUnsavedChanges seed \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        let store = try Store(at: folder, for: [Tally.self], configuration: configuration)
        defer { try? store.close() }
        try store.write { transaction in
            for _ in 0..<1_500 { _ = try transaction.insert(Self.tally(&random)) }
        }
        var indexedCounts = 0
        for round in 0..<40 {
            let context = Context(store)
            // Unsaved changes: inserts, updates and deletes of saved and unsaved records.
            var ids = try context.fetch(FetchDescriptor<Tally>()).map(\.id)
            for _ in 0..<Int.random(in: 0..<30, using: &random) {
                switch Int.random(in: 0..<4, using: &random) {
                case 0: ids.append(try context.insert(Self.tally(&random)))
                case 1: if let id = ids.randomElement(using: &random) { try context.update(id, to: Self.tally(&random)) }
                case 2:
                    if let index = ids.indices.randomElement(using: &random) { try context.delete(ids.remove(at: index)) }
                default: break
                }
            }
            let indexedBefore = store.fetchPlanCounts.indexed
            for descriptor in Self.tallyDescriptors(&random) {
                let expected = try context.fetch(descriptor).count
                #expect(try context.fetchCount(descriptor) == expected, "seed \(seed), round \(round): \(descriptor.fetchOffset as Any) \(descriptor.fetchLimit as Any)")
                // A read transaction sees the saved records only.
                let saved = try store.read { try ($0.fetchCount(descriptor), $0.fetch(descriptor).count) }
                #expect(saved.0 == saved.1, "seed \(seed), round \(round), read transaction")
            }
            indexedCounts += store.fetchPlanCounts.indexed - indexedBefore
            if Bool.random(using: &random) { try context.save() }
        }
        #expect(indexedCounts > 0, "seed \(seed): no count or fetch read an index")

        // A range holding most records: a fetch scans the tree, a count reads the index alone.
        let wide = FetchDescriptor<Tally>(predicate: #Predicate { $0.rank >= 0 && $0.rank <= 140 })
        let plans = store.fetchPlanCounts
        let counted = try Context(store).fetchCount(wide)
        #expect(store.fetchPlanCounts.indexed == plans.indexed + 1 && store.fetchPlanCounts.scanned == plans.scanned)
        #expect(try counted == Context(store).fetch(wide).count)
        #expect(store.fetchPlanCounts.scanned == plans.scanned + 1)
    }

    @Test func countsAcrossAnInheritanceFamily() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: graphTypes)
        defer { try? store.close() }
        let context = Context(store)
        try InheritanceTests().insertMenagerie(context)  // Animal, Dog, Cat, Puppy, Dog, Cat
        try context.save()
        func check(_ context: Context, _ line: Int = #line) throws {
            let old = #Predicate<Animal> { $0.age >= 4 }
            for descriptor in [FetchDescriptor<Animal>(), FetchDescriptor(predicate: old), FetchDescriptor(fetchLimit: 2, fetchOffset: 3)] {
                #expect(try context.fetchCount(descriptor) == context.fetch(descriptor).count, "line \(line)")
            }
            for descriptor in [FetchDescriptor<Dog>(), FetchDescriptor(predicate: #Predicate<Dog> { $0.breed == "Pug" })] {
                #expect(try context.fetchCount(descriptor) == context.fetch(descriptor).count, "line \(line)")
            }
            #expect(try context.fetchCount(FetchDescriptor<Puppy>()) == context.fetch(FetchDescriptor<Puppy>()).count, "line \(line)")
            #expect(try context.fetchCount(FetchDescriptor<Cat>()) == context.fetch(FetchDescriptor<Cat>()).count, "line \(line)")
        }
        try check(context)
        #expect(try context.fetchCount(FetchDescriptor<Animal>()) == 6)
        // Unsaved: a Puppy inserted, a Dog deleted through its parent's id, a Cat updated
        // through its parent's type, an unsaved Cat inserted then deleted.
        _ = try context.insert(Puppy(name: "New", age: 0, breed: "Pug", toy: nil))
        try context.delete(RecordID<Animal>(rawValue: 2))
        try context.update(RecordID<Animal>(rawValue: 3), to: Animal(name: "Tom", age: 8))
        let stray = try context.insert(Cat(name: "Stray", age: 3, isIndoor: false))
        try context.delete(stray)
        try check(context)
        #expect(try context.fetchCount(FetchDescriptor<Animal>()) == 6)
        #expect(try context.fetchCount(FetchDescriptor<Dog>()) == 3)
        #expect(try context.fetchCount(FetchDescriptor<Puppy>()) == 2)
        try context.save()
        try check(Context(store))
        #expect(try store.read { try $0.fetchCount(FetchDescriptor<Dog>()) } == 3)
    }

    /// Fails on the code before issue 19's fix, which counted with `fetch(...).count` and so
    /// decoded all 2,048 records (and read every overflowed payload).
    @Test func aCountWithoutPredicateDecodesNoRecord() throws {
        let seed = SeededRandom.seed(default: 0x2048)
        print("FetchCountTests.aCountWithoutPredicateDecodesNoRecord seed \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        let store = try Store(at: folder, for: [Parcel.self], configuration: configuration)
        defer { try? store.close() }
        // 3 KiB payloads: every record is stored in an overflow chunk.
        try store.write { transaction in
            for index in 0..<2_048 {
                _ = try transaction.insert(Parcel(label: "p\(index)", weight: index % 100, payload: Data(random.bytes(3 << 10))))
            }
        }
        let decodesBefore = Parcel.decodes.load(ordering: .relaxed)
        let readsBefore = store.overflowReadCounts
        let context = Context(store)
        #expect(try context.fetchCount(FetchDescriptor<Parcel>()) == 2_048)
        #expect(try context.fetchCount(FetchDescriptor<Parcel>(fetchLimit: 100, fetchOffset: 2_000)) == 48)
        #expect(try store.read { try $0.fetchCount(FetchDescriptor<Parcel>()) } == 2_048)
        // Unsaved changes adjust the count; an unsaved update changes nothing.
        _ = try context.insert(Parcel(label: "new", weight: 1, payload: Data()))
        try context.delete(RecordID<Parcel>(rawValue: 5))
        try context.delete(RecordID<Parcel>(rawValue: 6))
        try context.update(RecordID<Parcel>(rawValue: 7), to: Parcel(label: "seven", weight: 7, payload: Data()))
        #expect(try context.fetchCount(FetchDescriptor<Parcel>()) == 2_047)
        #expect(Parcel.decodes.load(ordering: .relaxed) == decodesBefore, "seed \(seed): records were decoded to be counted")
        #expect(store.overflowReadCounts.prefixesRead == readsBefore.prefixesRead, "seed \(seed): records were read to be counted")
        // Predicates decided on the stored bytes decode nothing either.
        #expect(try context.fetchCount(FetchDescriptor<Parcel>(predicate: #Predicate { $0.weight < 10 })) == 209)
        #expect(Parcel.decodes.load(ordering: .relaxed) == decodesBefore, "seed \(seed): records were decoded to be counted")
        #expect(store.overflowReadCounts.chunksRead == readsBefore.chunksRead, "seed \(seed): overflowed values were read to be counted")
        // The same counts by fetching decode every record (what counting used to cost).
        #expect(try context.fetch(FetchDescriptor<Parcel>()).count == 2_047)
        #expect(Parcel.decodes.load(ordering: .relaxed) - decodesBefore >= 2_046)
    }

    /// A filtered count or fetch testing fields stored before a large value reads only the
    /// first chunk of each overflowed record (verified as a whole page, decompressed only as
    /// far as the tested fields) and assembles none it rejects; a field stored after the value
    /// needs the whole record.
    @Test func aFilterOnASmallFieldReadsNoOverflowChunk() throws {
        let seed = SeededRandom.seed(default: 0xC4A7E)
        print("FetchCountTests.aFilterOnASmallFieldReadsNoOverflowChunk seed \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        let store = try Store(at: folder, for: [Crate.self], configuration: configuration)
        defer { try? store.close() }
        // Six records of about 2.2 MiB (three chunks each), weights 0…5, and small ones.
        var crates: [Crate] = []
        for index in 0..<6 {
            crates.append(Crate(label: "big\(index)", weight: index, payload: Data(random.bytes((2 << 20) + 200 << 10)), stamp: index))
        }
        for index in 6..<40 { crates.append(Crate(label: "small\(index)", weight: index, payload: Data(random.bytes(64)), stamp: index)) }
        try store.write { transaction in for crate in crates { _ = try transaction.insert(crate) } }
        let context = Context(store)
        func reads() -> (chunks: Int, prefixes: Int, decodes: Int) {
            let counts = store.overflowReadCounts
            return (counts.chunksRead, counts.prefixesRead, Crate.decodes.load(ordering: .relaxed))
        }

        // A count on a field before the payload: each big record judged from its first chunk.
        var before = reads()
        #expect(try context.fetchCount(FetchDescriptor<Crate>(predicate: #Predicate { $0.weight >= 3 })) == 37)
        #expect(try context.fetchCount(FetchDescriptor<Crate>(predicate: #Predicate { $0.weight < 2 || $0.label == "big4" })) == 3)
        var after = reads()
        #expect(after.chunks == before.chunks, "seed \(seed): overflow chunks assembled for a count")
        #expect(after.prefixes - before.prefixes == 12)
        #expect(after.decodes == before.decodes)

        // A fetch rejecting every big record assembles none; one accepting two assembles
        // exactly those (three chunks each).
        before = reads()
        #expect(try context.fetch(FetchDescriptor<Crate>(predicate: #Predicate { $0.weight >= 6 })).map(\.record) == Array(crates[6...]))
        after = reads()
        #expect(after.chunks == before.chunks && after.prefixes - before.prefixes == 6)
        before = reads()
        #expect(try context.fetch(FetchDescriptor<Crate>(predicate: #Predicate { $0.weight == 1 || $0.weight == 4 })).map(\.record)
                == [crates[1], crates[4]])
        after = reads()
        #expect(after.chunks - before.chunks == 6)

        // A field stored after the payload: the whole record is needed, and the answer is the same.
        #expect(try context.fetchCount(FetchDescriptor<Crate>(predicate: #Predicate { $0.stamp >= 3 })) == 37)
        #expect(try context.fetchCount(FetchDescriptor<Crate>(predicate: #Predicate { $0.stamp == 2 })) == 1)
        // A predicate the bytes leave undecided decodes the records (and reads them whole).
        #expect(try context.fetchCount(FetchDescriptor<Crate>(predicate: #Predicate { $0.label.contains("big") })) == 6)
        #expect(reads().decodes > after.decodes)
    }
}
