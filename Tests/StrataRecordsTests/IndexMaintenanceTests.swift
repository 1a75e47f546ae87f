#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataTestSupport

/// Indexes kept by the record layer: every write through `RecordTransaction` keeps them exact
/// (invariant 22), unique attributes are enforced, binding builds and drops indexes.
@Suite struct IndexMaintenanceTests {
    /// `Account`: `email` unique and optional, `score` indexed with default 7, `name` plain.
    static func schema(version: Int = 1, scoreIndexed: Bool = true, emailUnique: Bool = true, scoreDefault: Int64 = 7,
                       nameUnique: Bool = false) -> Schema {
        Schema(version: .init(UInt32(version), 0, 0), [
            Entity("Account", attributes: [
                .string("email", isOptional: true, options: emailUnique ? [.unique] : []),
                Attribute(name: "score", type: .int, isOptional: true, defaultValue: .int(scoreDefault),
                          options: scoreIndexed ? [.indexed] : []),
                .string("name", options: nameUnique ? [.unique] : []),
            ]),
        ])
    }

    struct Ids {
        let entity: UInt32, email: UInt32, score: UInt32, name: UInt32
        init(_ binding: SchemaBinding) throws {
            entity = try binding.entityID(of: "Account")
            email = try #require(binding.attributeID(named: "email", ofEntity: entity))
            score = try #require(binding.attributeID(named: "score", ofEntity: entity))
            name = try #require(binding.attributeID(named: "name", ofEntity: entity))
        }
    }

    struct Account: Equatable {
        var email: String?
        var score: Int64?
        var name: String
    }

    static func bytes(_ account: Account, _ ids: Ids) -> [UInt8] {
        RecordCodec.encode([ids.email: account.email.map(Value.string) ?? .null, ids.score: account.score.map(Value.int) ?? .null,
                            ids.name: .string(account.name)])
    }

    static func options() -> PageLogOptions {
        var options = PageLogOptions()
        options.segmentSize = 64 << 10
        options.automaticCompaction = false
        return options
    }

    static func treeOptions() -> RecordTreeOptions {
        var options = RecordTreeOptions()
        options.maximumNodeSize = 300
        options.dirtyBudget = 4 << 10
        return options
    }

    /// Random inserts, updates and deletes against a dictionary; unique violations are refused
    /// and change nothing; after every commit the indexes are exactly the records' values.
    @Test func indexesFollowEveryChangeAndUniqueValuesAreEnforced() throws {
        let seed = SeededRandom.seed(default: 0x1A7E)
        print("IndexMaintenanceTests.indexesFollowEveryChangeAndUniqueValuesAreEnforced seed \(seed)")
        var random = SeededRandom(seed: seed)
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: MemoryFileSystem(), options: Self.options()),
                                treeOptions: Self.treeOptions())
        let binding = try store.bind(Self.schema())
        let ids = try Ids(binding)
        var model: [UInt64: Account] = [:]
        var violations = 0
        func emailOwner(_ email: String?, in model: [UInt64: Account]) -> UInt64? {
            guard let email else { return nil }
            return model.first { $0.value.email == email }?.key
        }
        for round in 0..<120 {
            var next = model
            try store.write(durability: .relaxed) { records in
                let tree = records.tree(for: ids.entity, schemaVersion: binding.versionID)
                for _ in 0..<Int.random(in: 1...25, using: &random) {
                    let email: String? = Int.random(in: 0..<4, using: &random) == 0 ? nil : "u\(Int.random(in: 0..<60, using: &random))@x"
                    let account = Account(email: email, score: Bool.random(using: &random) ? Int64.random(in: -5...5, using: &random) : nil,
                                          name: "n\(Int.random(in: 0..<9, using: &random))")
                    let existing = next.keys.sorted().randomElement(using: &random)
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<5:
                        let id = records.allocateRowID(for: ids.entity)
                        if let owner = emailOwner(email, in: next) {
                            #expect(throws: RecordTreeError.uniqueConstraintViolation(entityID: ids.entity, attributeID: ids.email,
                                                                                     recordID: id, existingID: owner)) {
                                try tree.insert(id, bytes: Self.bytes(account, ids))
                            }
                            violations += 1
                            #expect(try records.uniqueMatch(entityID: ids.entity, schemaVersion: binding.versionID,
                                                            bytes: Self.bytes(account, ids)) == owner)
                        } else {
                            #expect(try records.uniqueMatch(entityID: ids.entity, schemaVersion: binding.versionID,
                                                            bytes: Self.bytes(account, ids)) == nil)
                            try tree.insert(id, bytes: Self.bytes(account, ids))
                            next[id] = account
                        }
                    case 5..<8:
                        guard let id = existing else { continue }
                        if let owner = emailOwner(email, in: next), owner != id {
                            #expect(throws: RecordTreeError.uniqueConstraintViolation(entityID: ids.entity, attributeID: ids.email,
                                                                                     recordID: id, existingID: owner)) {
                                try tree.update(id, bytes: Self.bytes(account, ids))
                            }
                            violations += 1
                        } else {
                            #expect(try tree.update(id, bytes: Self.bytes(account, ids)))
                            next[id] = account
                        }
                    default:
                        guard let id = existing else { continue }
                        #expect(try tree.delete(id))
                        next[id] = nil
                    }
                }
            }
            model = next
            let snapshot = try store.snapshot()
            try snapshot.checkIndexInvariants()
            // Lookups through the package API select what the model selects.
            let score = Int64.random(in: -5...7, using: &random)
            let byScore = try snapshot.indexedIDs(entityID: ids.entity, attributeID: ids.score, range: .equal(to: .int(score)))
            #expect(byScore == model.filter { ($0.value.score ?? 7) == score }.keys.sorted(), "round \(round), seed \(seed)")
            let nulls = try snapshot.indexedIDs(entityID: ids.entity, attributeID: ids.email, range: .equal(to: .null))
            #expect(nulls == model.filter { $0.value.email == nil }.keys.sorted())
        }
        #expect(violations > 10)
        #expect(try store.snapshot().hasIndex(entityID: ids.entity, attributeID: ids.score))
        #expect(try !store.snapshot().hasIndex(entityID: ids.entity, attributeID: ids.name))
        #expect(throws: RecordTreeError.noIndex(entityID: ids.entity, attributeID: ids.name)) {
            try store.snapshot().indexedIDs(entityID: ids.entity, attributeID: ids.name, range: .all)
        }
    }

    /// Binding a version that indexes an attribute builds the index from existing records in
    /// the bind transaction; one that stops indexing it drops it (pages freed); a changed
    /// default rebuilds; a new unique constraint is accepted only when values do not repeat.
    @Test func bindingBuildsAndDropsIndexes() throws {
        let fs = MemoryFileSystem()
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: Self.options()), treeOptions: Self.treeOptions())
        var binding = try store.bind(Self.schema(version: 1, scoreIndexed: false, emailUnique: false))
        let ids = try Ids(binding)
        #expect(try store.snapshot().root.indexes.isEmpty)
        let pagesWithoutIndexes = try store.log.snapshot().pageIDs().count
        try store.write { records in
            let tree = records.tree(for: ids.entity, schemaVersion: binding.versionID)
            for index in 0..<500 {
                let account = Account(email: index % 3 == 0 ? nil : "e\(index)", score: index % 4 == 0 ? nil : Int64(index % 11),
                                      name: index == 499 ? "n0" : "n\(index)")
                try tree.insert(records.allocateRowID(for: ids.entity), bytes: Self.bytes(account, ids))
            }
        }
        let recordPages = try store.log.snapshot().pageIDs().count - pagesWithoutIndexes
        // Indexed and unique: built from the 500 records.
        binding = try store.bind(Self.schema(version: 2))
        var snapshot = try store.snapshot()
        #expect(snapshot.root.indexes.count == 2)
        try snapshot.checkIndexInvariants()
        #expect(try snapshot.indexedIDs(entityID: ids.entity, attributeID: ids.score, range: .equal(to: .int(7))).count
                == (0..<500).filter { $0 % 4 == 0 || $0 % 11 == 7 }.count)
        // A new default rebuilds the score index: records lacking a score now read as 8.
        binding = try store.bind(Self.schema(version: 3, scoreDefault: 8))
        snapshot = try store.snapshot()
        try snapshot.checkIndexInvariants()
        #expect(try snapshot.indexedIDs(entityID: ids.entity, attributeID: ids.score, range: .equal(to: .int(8))).count
                == (0..<500).filter { $0 % 4 == 0 || $0 % 11 == 8 }.count)
        // `name` repeats ("n0" twice): making it unique is refused, and nothing is stored.
        let before = try store.snapshot().root
        #expect(throws: SchemaBindingError.uniqueConstraintViolation(entity: "Account", attribute: "name", recordID: 500, existingID: 1)) {
            try store.bind(Self.schema(version: 4, scoreDefault: 8, nameUnique: true))
        }
        #expect(try store.snapshot().root == before)
        // Removing the indexed attribute drops its index; the unique one stays.
        binding = try store.bind(Schema(version: .init(5, 0, 0), [
            Entity("Account", attributes: [.string("email", isOptional: true, options: [.unique]), .string("name")]),
        ]))
        #expect(try store.snapshot().root.indexes.keys.map(\.attributeID) == [ids.email])
        try store.snapshot().checkIndexInvariants()
        // Dropping both indexes frees their pages.
        binding = try store.bind(Self.schema(version: 6, scoreIndexed: false, emailUnique: false, scoreDefault: 8))
        #expect(try store.snapshot().root.indexes.isEmpty)
        #expect(try store.log.snapshot().pageIDs().count <= pagesWithoutIndexes + recordPages + 1)  // + the grown catalog's page, at most
        _ = binding
    }

    /// Power loss at every sync point of an indexed workload: after recovery every index holds
    /// exactly its records' values (invariant 22), whichever commit survived.
    @Test func crashAtEverySyncPointKeepsIndexesExact() throws {
        let seed = SeededRandom.seed(default: 0xC4A5)
        print("IndexMaintenanceTests.crashAtEverySyncPointKeepsIndexesExact seed \(seed)")
        func run(_ fs: MemoryFileSystem) -> Int {
            var random = SeededRandom(seed: seed)
            var commits = 0
            do {
                let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: Self.options()),
                                        treeOptions: Self.treeOptions())
                let binding = try store.bind(Self.schema(scoreIndexed: false, emailUnique: false))
                let ids = try Ids(binding)
                for round in 0..<30 {
                    try store.write(durability: round % 3 == 0 ? .durable : .relaxed) { records in
                        let tree = records.tree(for: ids.entity, schemaVersion: binding.versionID)
                        for _ in 0..<20 {
                            let account = Account(email: "e\(Int.random(in: 0..<40, using: &random))",
                                                  score: Int64.random(in: 0..<9, using: &random), name: "n")
                            let id = UInt64.random(in: 1...80, using: &random)
                            if Int.random(in: 0..<4, using: &random) == 0 { try tree.delete(id) } else { try tree.upsert(id, bytes: Self.bytes(account, ids)) }
                        }
                    }
                    commits += 1
                    if round == 3 { _ = try store.bind(Self.schema(version: 2, emailUnique: false)) }  // builds the score index mid-run
                }
            } catch {}
            return commits
        }
        let reference = MemoryFileSystem()
        #expect(run(reference) == 30)
        let syncs = reference.counters.syncs
        var tested = 0, indexed = 0
        for point in 0...syncs {
            for mode in MemoryFileSystem.CrashMode.allCases {
                var random = SeededRandom(seed: seed &+ UInt64(point))
                let fs = MemoryFileSystem.runUntilPowerCut(atSync: point, mode: mode, using: &random, run).fileSystem
                let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: Self.options()),
                                        treeOptions: Self.treeOptions())
                let snapshot = try store.snapshot()
                try snapshot.checkIndexInvariants()
                if !snapshot.root.indexes.isEmpty { indexed += 1 }
                tested += 1
            }
        }
        print("IndexMaintenanceTests crash points: \(tested)")
        #expect(tested == 3 * (syncs + 1))
        #expect(indexed > tested / 2, "most crash points come after the index was built")
    }
}
