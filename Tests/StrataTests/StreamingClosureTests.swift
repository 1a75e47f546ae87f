#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
import StrataIO
import Strata
import StrataTestSupport

// Issue 19, item 7: a migration closure written as SwiftData's articles write it — enumerate,
// change, update, save — streams: `Context.enumerate` reads in batches, and the stage's context
// flushes its changes into the store as they pile up.

/// From `PeopleV1`: `firstName` and `lastName` added with declared defaults (lightweight), filled
/// by the stage's `didMigrate`.
enum StreamV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeDefaults: [String: Value] { ["firstName": "", "lastName": ""] }
        var fullName: String
        var age: Int
        var firstName: String
        var lastName: String
    }
}

/// The knobs and counters of `StreamPlan`, per thread (the closures run on the opening thread;
/// suites run in parallel).
struct StreamProbe {
    var willRuns = 0
    var didRuns = 0
    /// The most unsaved changes the didMigrate context held, and its flush bound.
    var mostUnsaved = 0
    var flushLimit: Int?
    var flushes = 0
    /// Leaf images the flushes took from the enumeration's reads (`Context.stageImagesTaken`).
    var imagesTaken = 0
    /// didMigrate throws when it reaches this age.
    var failingAge: Int?
    /// Records didMigrate visited more than once, or visited after deleting them.
    var revisits = 0
    /// Whether didMigrate's enumerate and fetch disagreed after its loop (a flush may be in flight).
    var enumerateDiffers = false
    /// `AheadPlan`: each record didMigrate visited, as it saw it, and how many times.
    var seen: [UInt64: StreamV2.Person] = [:]
    var visits: [UInt64: Int] = [:]
}

private let streamProbes = Lock<[UInt: StreamProbe]>([:])

func withStreamProbe<T>(_ body: (inout StreamProbe) -> T) -> T {
    #if canImport(Glibc)
    let thread = UInt(pthread_self())
    #else
    let thread = UInt(bitPattern: pthread_self())
    #endif
    return streamProbes.withLock { body(&$0[thread, default: StreamProbe()]) }
}

/// V1 → StreamV2 with a custom stage whose didMigrate enumerates every person: deletes those
/// whose age ends in 3, splits the others' names, inserts an extra person per hundred (not
/// visited: inserted after the enumeration began), then updates every extra and deletes the
/// first one (records inserted by earlier flushes, for the journal's counts).
enum StreamPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, StreamV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PeopleV1.self, toVersion: StreamV2.self, willMigrate: { _ in
            withStreamProbe { $0.willRuns += 1 }
        }, didMigrate: { context in
            withStreamProbe { $0.didRuns += 1; $0.flushLimit = context.stageFlushLimit }
            var extras: [RecordID<StreamV2.Person>] = []
            var visited = Set<UInt64>()
            try context.enumerate(FetchDescriptor<StreamV2.Person>(), batchSize: 32) { match in
                if !visited.insert(match.id.rawValue).inserted || match.record.fullName.hasPrefix("Extra") {
                    withStreamProbe { $0.revisits += 1 }
                }
                if match.record.age == withStreamProbe({ $0.failingAge }) { throw StageFault.didMigrate }
                if match.record.age % 10 == 3 {
                    try context.delete(match.id)
                } else {
                    try context.update(match.id, to: StreamPlan.split(match.record))
                }
                if match.record.age % 100 == 0 {
                    extras.append(try context.insert(StreamV2.Person(fullName: "Extra, \(match.record.age)", age: -match.record.age,
                                                                     firstName: "", lastName: "")))
                }
                let unsaved = context.unsavedChangeCount, flushes = context.stageFlushCount
                withStreamProbe { $0.mostUnsaved = max($0.mostUnsaved, unsaved); $0.flushes = flushes }
            }
            for id in extras {
                guard let extra = try context.record(for: id) else { continue }
                try context.update(id, to: StreamPlan.split(extra))
            }
            if let first = extras.first { try context.delete(first) }
            // What the context sees — unsaved changes, a flush perhaps still being written, the
            // store — is the same through enumerate and fetch.
            var enumerated: [Identified<StreamV2.Person>] = []
            try context.enumerate(FetchDescriptor<StreamV2.Person>(), batchSize: 50) { enumerated.append($0) }
            let fetched = try context.fetch(FetchDescriptor<StreamV2.Person>())
            if enumerated.map(\.id) != fetched.map(\.id) || enumerated.map(\.record) != fetched.map(\.record) {
                withStreamProbe { $0.enumerateDiffers = true }
            }
            try context.save()
            let flushes = context.stageFlushCount, taken = context.stageImagesTaken
            withStreamProbe { $0.flushes = flushes; $0.imagesTaken = taken }
        })]
    }

    static func split(_ person: StreamV2.Person) -> StreamV2.Person {
        let parts = person.fullName.split(separator: ", ", maxSplits: 1).map(String.init)
        var split = person
        split.lastName = parts[0]
        split.firstName = parts.count > 1 ? parts[1] : ""
        return split
    }

    /// What the plan makes of `MigrationTests.v1People(count)`, by identifier.
    static func expected(from count: Int) -> [UInt64: StreamV2.Person] {
        var result: [UInt64: StreamV2.Person] = [:]
        var next = UInt64(count + 1)
        var extras: [UInt64] = []
        for (index, old) in MigrationTests.v1People(count).enumerated() {
            let person = StreamV2.Person(fullName: old.fullName, age: old.age, firstName: "", lastName: "")
            if old.age % 10 != 3 { result[UInt64(index + 1)] = split(person) }
            if old.age % 100 == 0 {
                result[next] = split(StreamV2.Person(fullName: "Extra, \(old.age)", age: -old.age, firstName: "", lastName: ""))
                extras.append(next)
                next += 1
            }
        }
        if let first = extras.first { result[first] = nil }
        return result
    }
}

/// V1 → StreamV2 whose didMigrate changes records ahead of its enumeration as well as the one
/// it visits: the visited record is split; the one 20 further (in the next batch, with
/// batches of 16) is renamed, and for every third record the one 37 further is deleted —
/// flushed into the store (every 25 changes) before their turn. `rule` is the reference: what
/// each record should be when its turn comes.
enum AheadPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, StreamV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: PeopleV1.self, toVersion: StreamV2.self, willMigrate: nil, didMigrate: { context in
            try context.enumerate(FetchDescriptor<StreamV2.Person>(), batchSize: 16) { match in
                let id = match.id.rawValue
                withStreamProbe { $0.seen[id] = match.record; $0.visits[id, default: 0] += 1 }
                try context.update(match.id, to: StreamPlan.split(match.record))
                if let later = try context.record(for: RecordID<StreamV2.Person>(rawValue: id + 20)) {
                    try context.update(RecordID(rawValue: id + 20), to: renamed(later, id + 20))
                }
                if id % 3 == 0 { try context.delete(RecordID<StreamV2.Person>(rawValue: id + 37)) }
            }
            try context.save()
        })]
    }

    static func renamed(_ person: StreamV2.Person, _ id: UInt64) -> StreamV2.Person {
        StreamV2.Person(fullName: "Ahead, \(id)", age: person.age, firstName: "", lastName: "")
    }

    /// What didMigrate should see of each record of `MigrationTests.v1People(count)` at its
    /// turn (records deleted before their turn are absent).
    static func expectedVisits(_ count: Int) -> [UInt64: StreamV2.Person] {
        var current: [UInt64: StreamV2.Person] = [:]
        for (index, old) in MigrationTests.v1People(count).enumerated() {
            current[UInt64(index + 1)] = StreamV2.Person(fullName: old.fullName, age: old.age, firstName: "", lastName: "")
        }
        var seen: [UInt64: StreamV2.Person] = [:]
        for id in 1...UInt64(count) {
            guard let person = current[id] else { continue }
            seen[id] = person
            current[id] = StreamPlan.split(person)
            if let later = current[id + 20] { current[id + 20] = renamed(later, id + 20) }
            if id % 3 == 0 { current[id + 37] = nil }
        }
        return seen
    }
}

@Suite(.serialized) struct StreamingClosureTests {
    // MARK: enumerate

    /// A store of animals across an inheritance hierarchy, with unsaved inserts, updates and
    /// deletes on top: `enumerate` gives what `fetch` gives, for predicates (decided by the
    /// pre-filter or not), offsets, limits, sort orders and batch sizes.
    @Test func enumerateEqualsFetch() throws {
        let seed = SeededRandom.seed(default: 0xE_0719)
        print("StreamingClosureTests enumerate seed \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: graphTypes)
        defer { try? store.close() }
        let context = Context(store)
        func randomAnimal(_ index: Int) -> any PersistentRecord {
            let name = "n\(random.next() % 50)", age = Int(random.next() % 20)
            switch random.next() % 4 {
            case 0: return Animal(name: name, age: age)
            case 1: return Dog(name: name, age: age, breed: random.next() % 2 == 0 ? "Pug" : "Husky")
            case 2: return Puppy(name: name, age: age, breed: "Pug", toy: index % 3 == 0 ? nil : "ball")
            default: return Cat(name: name, age: age, isIndoor: random.next() % 2 == 0)
            }
        }
        func insert(_ record: any PersistentRecord) throws {
            switch record {
            case let dog as Dog: try context.insert(dog)
            case let puppy as Puppy: try context.insert(puppy)
            case let cat as Cat: try context.insert(cat)
            case let animal as Animal: try context.insert(animal)
            default: Issue.record("unexpected \(record)")
            }
        }
        for index in 0..<600 { try insert(randomAnimal(index)) }
        try context.save()
        // Unsaved changes: inserts, updates (some moving in and out of the predicates), deletes.
        for index in 0..<80 { try insert(randomAnimal(index)) }
        for animal in try context.fetch(FetchDescriptor<Animal>()) where random.next() % 5 == 0 {
            if random.next() % 2 == 0 {
                try context.delete(animal.id)
            } else {
                var changed = animal.record
                changed.age = Int(random.next() % 20)
                try context.update(animal.id, to: changed)
            }
        }
        #expect(context.hasChanges)

        func check<Record: PersistentRecord & Equatable>(_ descriptor: FetchDescriptor<Record>, _ what: String) throws {
            let fetched = try context.fetch(descriptor)
            for batchSize in [1, 7, 64, 5_000] {
                var enumerated: [Identified<Record>] = []
                try context.enumerate(descriptor, batchSize: batchSize) { enumerated.append($0) }
                #expect(enumerated.map(\.id) == fetched.map(\.id), "\(what), batch \(batchSize), seed \(seed)")
                #expect(enumerated.map(\.record) == fetched.map(\.record), "\(what), batch \(batchSize), seed \(seed)")
            }
        }
        try check(FetchDescriptor<Animal>(), "every animal")
        try check(FetchDescriptor<Dog>(), "dogs and puppies")
        try check(FetchDescriptor<Puppy>(), "puppies")
        try check(FetchDescriptor<Animal>(predicate: #Predicate { $0.age < 8 }), "age < 8 (pre-filtered)")
        try check(FetchDescriptor<Animal>(predicate: #Predicate { $0.name == "n7" || $0.age == 3 }), "name or age")
        try check(FetchDescriptor<Dog>(predicate: #Predicate { $0.breed.starts(with: "P") }), "breed prefix")
        try check(FetchDescriptor<Animal>(predicate: #Predicate { $0.name.count == 2 }), "not pre-filtered")
        try check(FetchDescriptor<Animal>(fetchLimit: 17, fetchOffset: 5), "limit and offset")
        try check(FetchDescriptor<Animal>(predicate: #Predicate { $0.age > 10 }, fetchLimit: 9, fetchOffset: 3), "predicate, limit, offset")
        try check(FetchDescriptor<Animal>(sortBy: [RecordSort(\.age), RecordSort(\.name, order: .reverse)]), "sorted")
        try check(FetchDescriptor<Cat>(predicate: #Predicate { $0.isIndoor }, sortBy: [RecordSort(\.name)], fetchLimit: 5, fetchOffset: 2),
                  "sorted, limited")
        // A read transaction (one pinned snapshot) enumerates what it fetches too.
        try context.save()
        try store.read { transaction in
            var names: [String] = []
            try transaction.enumerate(FetchDescriptor<Animal>(), batchSize: 10) { names.append($0.record.name) }
            #expect(names == (try transaction.fetch(FetchDescriptor<Animal>())).map(\.record.name))
        }
    }

    /// The block changes records while they are enumerated: each record is visited once, a
    /// record deleted before its turn is not visited, one updated before its turn is visited
    /// with its new values, records inserted meanwhile are not visited — with and without saves
    /// (which make the batch read so far stale) in the middle.
    @Test func enumerateVisitsEachRecordOnceWhileTheBlockChangesRecords() throws {
        for saving in [false, true] {
            let folder = try temporaryDirectory()
            defer { removeDirectory(folder) }
            let store = try Store(at: folder, schema: PeopleV1.self)
            defer { try? store.close() }
            try store.write { transaction in for person in MigrationTests.v1People(500) { try transaction.insert(person) } }
            let context = Context(store)
            var visits: [UInt64: Int] = [:]
            var seen: [UInt64: PeopleV1.Person] = [:]
            var deleted = Set<UInt64>(), marked = Set<UInt64>()
            try context.enumerate(FetchDescriptor<PeopleV1.Person>(), batchSize: 16) { match in
                let id = match.id.rawValue
                visits[id, default: 0] += 1
                seen[id] = match.record
                #expect(!deleted.contains(id), "record \(id) visited after its deletion (saving \(saving))")
                // Ahead of the cursor: delete the record 5 further, mark the one 7 further.
                if try context.record(for: RecordID<PeopleV1.Person>(rawValue: id + 5)) != nil {
                    try context.delete(RecordID<PeopleV1.Person>(rawValue: id + 5))
                    deleted.insert(id + 5)
                }
                if let later = try context.record(for: RecordID<PeopleV1.Person>(rawValue: id + 7)) {
                    try context.update(RecordID(rawValue: id + 7), to: PeopleV1.Person(fullName: "Marked", age: later.age))
                    marked.insert(id + 7)
                }
                try context.insert(PeopleV1.Person(fullName: "New", age: -1))
                if saving && id % 50 == 0 { try context.save() }
            }
            #expect(visits.values.allSatisfy { $0 == 1 }, "saving \(saving)")
            #expect(seen.values.allSatisfy { $0.fullName != "New" }, "an inserted record was visited (saving \(saving))")
            // Every record neither deleted nor inserted meanwhile was visited.
            #expect(Set(visits.keys) == Set(1...500).subtracting(deleted), "saving \(saving)")
            let original = MigrationTests.v1People(500)
            for (id, person) in seen {
                #expect(person == (marked.contains(id) ? PeopleV1.Person(fullName: "Marked", age: original[Int(id) - 1].age) : original[Int(id) - 1]),
                        "record \(id) (saving \(saving))")
            }
        }
    }

    /// Records the predicate rejected when their stretch was read, changed by the block to
    /// match before their turn (past the last record the batch visited, at the store's end), are
    /// visited with their new values — unsaved, or saved by the block meanwhile.
    @Test func recordsChangedToMatchBeforeTheirTurnAreVisited() throws {
        for saving in [false, true] {
            for batchSize in [4, 7, 5_000] {
                let folder = try temporaryDirectory()
                defer { removeDirectory(folder) }
                let store = try Store(at: folder, schema: PeopleV1.self)
                defer { try? store.close() }
                try store.write { transaction in
                    for age in 1...30 { try transaction.insert(PeopleV1.Person(fullName: "P\(age)", age: age)) }
                }
                let context = Context(store)
                var seen: [UInt64: Int] = [:]
                try context.enumerate(FetchDescriptor<PeopleV1.Person>(predicate: #Predicate { $0.age < 25 }), batchSize: batchSize) { match in
                    #expect(seen[match.id.rawValue] == nil, "record \(match.id) visited twice (batch \(batchSize), saving \(saving))")
                    seen[match.id.rawValue] = match.record.age
                    if match.id.rawValue == 10 {
                        for id in UInt64(26)...30 { try context.update(RecordID(rawValue: id), to: PeopleV1.Person(fullName: "P\(id)", age: 0)) }
                        if saving { try context.save() }
                    }
                }
                var expected: [UInt64: Int] = [:]
                for id in UInt64(1)...24 { expected[id] = Int(id) }
                for id in UInt64(26)...30 { expected[id] = 0 }
                #expect(seen == expected, "batch \(batchSize), saving \(saving)")
            }
        }
    }

    // MARK: didMigrate over a large store

    @Test func didMigrateOverMoreRecordsThanTheFlushBoundChecksEveryValue() throws {
        let count = 1_000
        withStreamProbe { $0 = StreamProbe() }
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: count)
        var configuration = Store.Configuration()
        configuration.migrationFlushChanges = 100
        let store = try Store(at: folder, schema: StreamV2.self, migrationPlan: StreamPlan.self, configuration: configuration)
        let probe = withStreamProbe { $0 }
        #expect(probe.didRuns == 1 && probe.revisits == 0)
        #expect(!probe.enumerateDiffers)
        #expect(probe.flushLimit == 100)
        #expect(probe.flushes >= 9, "\(probe.flushes) flushes")
        // The flushes rewrote leaves the enumeration had just read: they took their images — or,
        // for a leaf an earlier flush wrote, the node that flush wrote (`WrittenNodes`).
        #expect(probe.imagesTaken + store.writtenNodesReused >= probe.flushes,
                "\(probe.imagesTaken) leaf images taken, \(store.writtenNodesReused) written nodes reused")
        // Memory is bounded by the flush, not the store: never more unsaved changes than the bound.
        #expect(probe.mostUnsaved < 100 && probe.mostUnsaved > 50, "\(probe.mostUnsaved) unsaved changes")
        let people = try Context(store).fetch(FetchDescriptor<StreamV2.Person>())
        let expected = StreamPlan.expected(from: count)
        #expect(people.count == expected.count)
        for person in people { #expect(person.record == expected[person.id.rawValue], "record \(person.id)") }
        // The journal: one summary per entity for the whole closure, its flushes included — the
        // extras inserted by one flush and updated or deleted by later ones count as inserted once.
        let transactions = try MigrationTests.migrationHistory(store, after: HistoryToken(rawValue: 1))
        let counts = transactions.flatMap(\.changes).compactMap(\.migratedRecords)
        #expect(counts == [HistoryChange.MigrationCounts(inserted: 9, updated: 900, deleted: 100)], "\(counts)")
        try store.close()
        // Migrated for good.
        let reopened = try Store(at: folder, schema: StreamV2.self)
        #expect(try Context(reopened).fetchCount(FetchDescriptor<StreamV2.Person>()) == expected.count)
        try reopened.close()
    }

    /// Changes a migration closure makes ahead of its enumeration's position — flushed into the
    /// store before their turn, the flushes ending at different places in the batches — are
    /// what it sees at their turn: each record visited once, none after its deletion, every
    /// value as the reference.
    /// (Flush bounds that end flushes at different places in the batches.)
    @Test(arguments: [5, 16, 25, 33, 40])
    func changesAheadOfTheEnumerationAreSeenAcrossFlushes(flushBound: Int) throws {
        let count = 600
        withStreamProbe { $0 = StreamProbe() }
        defer { withStreamProbe { $0 = StreamProbe() } }
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try MigrationTests.createV1(at: folder, count: count)
        var configuration = Store.Configuration()
        configuration.migrationFlushChanges = flushBound
        let store = try Store(at: folder, schema: StreamV2.self, migrationPlan: AheadPlan.self, configuration: configuration)
        defer { try? store.close() }
        let probe = withStreamProbe { $0 }
        let expected = AheadPlan.expectedVisits(count)
        #expect(probe.visits.values.allSatisfy { $0 == 1 }, "records visited more than once (flushes of \(flushBound))")
        #expect(Set(probe.seen.keys) == Set(expected.keys), "flushes of \(flushBound)")
        for (id, person) in expected { #expect(probe.seen[id] == person, "record \(id) at its turn (flushes of \(flushBound))") }
        // Every change to a record came before its turn: the store holds each visited record
        // split from what the closure saw, and nothing else.
        let stored = try Context(store).fetch(FetchDescriptor<StreamV2.Person>())
        #expect(stored.count == expected.count)
        for record in stored {
            #expect(expected[record.id.rawValue].map(StreamPlan.split) == record.record, "record \(record.id) stored (flushes of \(flushBound))")
        }
    }

    @Test func aDidMigrateFailingAfterSeveralFlushesLeavesEveryFileByteIdentical() throws {
        withStreamProbe { $0 = StreamProbe(); $0.failingAge = 850 }
        defer { withStreamProbe { $0 = StreamProbe() } }
        let fs = MemoryFileSystem()
        try MigrationTests.createV1(at: "/store", count: 1_000, fileSystem: fs)
        let before = fs.allFiles()
        var configuration = Store.Configuration()
        configuration.migrationFlushChanges = 100
        do {
            _ = try Store(at: "/store", schema: StreamV2.self, migrationPlan: StreamPlan.self, configuration: configuration, fileSystem: fs)
            Issue.record("the migration did not fail")
        } catch StrataError.migrationFailed(let report) {
            #expect(report.category == .didMigrate)
            #expect(report.underlyingError.contains("didMigrate"), "\(report.underlyingError)")
        }
        // It had flushed several times before failing.
        #expect(withStreamProbe { $0.flushes } >= 7, "\(withStreamProbe { $0.flushes }) flushes")
        #expect(fs.allFiles() == before, "files changed after a failing didMigrate that had flushed")
        let old = try Store(at: "/store", schema: PeopleV1.self, migrationPlan: nil, configuration: Store.Configuration(), fileSystem: fs)
        #expect(try Context(old).fetch(FetchDescriptor<PeopleV1.Person>()).map(\.record) == MigrationTests.v1People(1_000))
        try old.close()
    }

    /// Power cut before every write and every sync of a migration whose didMigrate flushes (so
    /// at every sync point and between the flushes), in every crash mode: a crash after a flush
    /// finds a flagged marker, and the app undoes the migration and runs it again — never
    /// resuming the closure on half-changed data; the data always ends as an uninterrupted run's.
    @Test func crashAtEverySyncPointOfAFlushingClosureUndoesAndRunsAgain() throws {
        withStreamProbe { $0 = StreamProbe() }
        let seed = SeededRandom.seed(default: 0xF1_05)
        print("StreamingClosureTests crash seed \(seed)")
        let count = 300
        var configuration = Store.Configuration()
        configuration.migrationFlushChanges = 40
        func migrate(_ fs: MemoryFileSystem) {
            do {
                let store = try Store(at: "/store", schema: StreamV2.self, migrationPlan: StreamPlan.self,
                                      configuration: configuration, fileSystem: fs)
                try store.close()
            } catch {}
        }
        func prepared() throws -> MemoryFileSystem {
            let fs = MemoryFileSystem()
            try MigrationTests.createV1(at: "/store", count: count, fileSystem: fs)
            return fs
        }
        let reference = try prepared()
        let operationsBefore = reference.counters.operations, syncsBefore = reference.counters.syncs
        migrate(reference)
        let operations = reference.counters.operations - operationsBefore, syncs = reference.counters.syncs - syncsBefore
        #expect(syncs > 2 && operations > syncs + 9)
        let expected = StreamPlan.expected(from: count)
        var tested = 0, undone = 0, resumed = 0
        for point in 0..<operations {
            for mode in MemoryFileSystem.CrashMode.allCases {
                var random = SeededRandom(seed: seed &+ UInt64(point))
                let fs = try prepared()
                let first = fs.counters.operations
                fs.setFaultInjector { $0.index == first + point ? .crash : nil }
                migrate(fs)
                fs.setFaultInjector(nil)
                fs.simulateCrash(mode: mode, using: &random)
                let interrupted = try Store.interruptedMigration(at: "/store", fileSystem: fs)
                if interrupted?.closureFlushed == true { undone += 1 } else if interrupted != nil { resumed += 1 }
                withStreamProbe { $0 = StreamProbe() }
                let store = try Store(at: "/store", schema: StreamV2.self, migrationPlan: StreamPlan.self,
                                      configuration: configuration, fileSystem: fs)
                let probe = withStreamProbe { $0 }
                if interrupted?.closureFlushed == true {
                    // Undone and run again from the start: willMigrate too.
                    #expect(probe.willRuns == 1 && probe.didRuns == 1, "operation \(point), mode \(mode)")
                }
                #expect(probe.revisits == 0)
                let people = try Context(store).fetch(FetchDescriptor<StreamV2.Person>())
                #expect(people.count == expected.count, "operation \(point), mode \(mode), seed \(seed)")
                #expect(people.allSatisfy { expected[$0.id.rawValue] == $0.record }, "operation \(point), mode \(mode), seed \(seed)")
                try store.close()
                #expect(try Store.interruptedMigration(at: "/store", fileSystem: fs) == nil)
                tested += 1
            }
        }
        print("StreamingClosureTests: \(tested) crash points (\(syncs) syncs, \(operations) operations), \(undone) found a flushed closure "
              + "and undid the migration, \(resumed) resumed an unflushed stage")
        #expect(tested == 3 * operations)
        #expect(undone > 0 && resumed > 0)
    }

    // MARK: Golden store

    static let fixture = String(#filePath.prefix(upTo: #filePath.lastIndex(of: "/")!)) + "/Fixtures/flushed-v6"
    static let fixtureCount = 300

    /// A store whose migration to `StreamV2` stopped part way through its didMigrate, after a
    /// flush (store root version 6): power cut before each write of the migration in turn, the
    /// unsynced writes kept, until the marker has the closure flushed flag.
    static func interruptedAfterAFlush() throws -> MemoryFileSystem {
        var configuration = Store.Configuration()
        configuration.migrationFlushChanges = 40
        for point in 0..<1_000 {
            let fs = MemoryFileSystem()
            try MigrationTests.createV1(at: "/store", count: fixtureCount, fileSystem: fs)
            let first = fs.counters.operations
            fs.setFaultInjector { $0.index == first + point ? .crash : nil }
            do { try Store(at: "/store", schema: StreamV2.self, migrationPlan: StreamPlan.self, configuration: configuration, fileSystem: fs).close() } catch {}
            fs.setFaultInjector(nil)
            var random = SeededRandom(seed: 1)
            fs.simulateCrash(mode: .keepAll, using: &random)
            if try Store.interruptedMigration(at: "/store", fileSystem: fs)?.closureFlushed == true { return fs }
        }
        struct NoFlushedState: Error {}
        throw NoFlushedState()
    }

    /// Writes the fixture when STRATA_WRITE_FLUSHED_FIXTURE names an empty folder.
    @Test func writeFixtureWhenAsked() throws {
        guard let target = getenv("STRATA_WRITE_FLUSHED_FIXTURE").map({ String(cString: $0) }) else { return }
        let fs = try interruptedAfterAFlushForFixture()
        for (path, bytes) in fs.allFiles() where path.hasPrefix("/store/") {
            try Data(bytes).write(to: URL(fileURLWithPath: target + "/" + path.dropFirst("/store/".count)))
        }
    }

    private func interruptedAfterAFlushForFixture() throws -> MemoryFileSystem {
        withStreamProbe { $0 = StreamProbe() }
        return try Self.interruptedAfterAFlush()
    }

    /// The golden store of a migration interrupted after a closure flushed (store root version
    /// 6, never regenerated): a widget gets `migrationRequired`; the old app finds the old
    /// version (the migration undone); the new app undoes it and migrates again from the start.
    @Test func theGoldenStoreInterruptedAfterAFlushIsUndoneAndMigratedAgain() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try copyFolder(Self.fixture, to: folder)
        let interrupted = try Store.interruptedMigration(at: folder, fileSystem: POSIXFileSystem())
        #expect(interrupted?.closureFlushed == true && interrupted?.phase == 2 && interrupted?.stage == 0)
        #expect(try Store.storedSchema(at: folder)?.isMigrating == true)
        var widget = Store.Configuration()
        widget.isMigrationOwner = false
        #expect(throws: StrataError.self) { try Store(at: folder, schema: StreamV2.self, migrationPlan: StreamPlan.self, configuration: widget) }
        #expect(try Store.interruptedMigration(at: folder, fileSystem: POSIXFileSystem())?.closureFlushed == true)
        // The old app: the migration undone, the old version intact.
        let old = try Store(at: folder, schema: PeopleV1.self)
        #expect(try Context(old).fetch(FetchDescriptor<PeopleV1.Person>()).map(\.record) == MigrationTests.v1People(Self.fixtureCount))
        try old.close()
        #expect(try Store.interruptedMigration(at: folder, fileSystem: POSIXFileSystem()) == nil)

        // The new app on another copy: undone, then migrated again, willMigrate included.
        let again = try temporaryDirectory()
        defer { removeDirectory(again) }
        try copyFolder(Self.fixture, to: again)
        withStreamProbe { $0 = StreamProbe() }
        let store = try Store(at: again, schema: StreamV2.self, migrationPlan: StreamPlan.self)
        #expect(withStreamProbe { $0.willRuns } == 1 && withStreamProbe { $0.didRuns } == 1)
        let expected = StreamPlan.expected(from: Self.fixtureCount)
        let people = try Context(store).fetch(FetchDescriptor<StreamV2.Person>())
        #expect(people.count == expected.count && people.allSatisfy { expected[$0.id.rawValue] == $0.record })
        try store.close()
    }
}
