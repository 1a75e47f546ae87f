#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// A project: both attributes marked `preserveValueOnDeletion` (an optional one too, absent
/// from a tombstone when nil).
struct HistoryProject: PersistentRecord, Equatable {
    var code: String
    var budget: Int
    var owner: String?
    static var attributeOptions: [String: Attribute.Options] { ["code": [.preserveValueOnDeletion], "owner": [.preserveValueOnDeletion]] }
}

/// A task: its title is kept in tombstones, also for its sub-entity's records.
struct HistoryTask: PersistentRecord, Equatable {
    var title: String
    var done: Bool
    var priority: Int
    var note: String?
    static var attributeOptions: [String: Attribute.Options] { ["title": [.preserveValueOnDeletion]] }
}

/// A sub-entity of `HistoryTask`: a filter on `HistoryTask` includes its changes.
struct HistoryUrgentTask: PersistentRecord, Equatable {
    var title: String
    var done: Bool
    var priority: Int
    var note: String?
    var deadline: Date
    static var parentRecordType: (any PersistentRecord.Type)? { HistoryTask.self }
}

/// Seeded random transactions — inserts, updates and deletes of three record types (one a
/// sub-entity), by several authors or none, through `Context.save()` and `Store.write(author:)`,
/// with reopens — against a reference model of what each one must journal. After every commit
/// the new entry (or its absence) is compared with the model's; every few commits a
/// `fetchHistory` with a random descriptor (after, through, until, entities, authors in and
/// out, limit, order) must return exactly the model's answer: tokens, authors, timestamps, and
/// each change's kind, entity, record number, updated attributes with old and new values, and
/// tombstone.
@Suite struct HistoryModelTests {
    /// A record's values as the journal reports them (an optional without a value is absent).
    struct ModelRecord: Equatable {
        var entity: String
        var values: [String: Value]
    }

    /// A record's key in the model: ids are unique within an inheritance hierarchy only.
    struct Key: Hashable, Comparable {
        var family: Int  // 0: projects, 1: tasks and urgent tasks
        var id: UInt64
        static func < (a: Key, b: Key) -> Bool { (a.family, a.id) < (b.family, b.id) }
    }

    /// One change as the model expects it (`HistoryChange`'s public fields).
    struct ModelChange: Equatable, CustomStringConvertible {
        var kind: HistoryChange.Kind
        var entity: String
        var id: UInt64
        /// name → (old, new), for an update.
        var updated: [String: [Value]] = [:]
        var tombstone: [String: Value] = [:]

        init(kind: HistoryChange.Kind, entity: String, id: UInt64, updated: [String: [Value]] = [:], tombstone: [String: Value] = [:]) {
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
            for attribute in change.updatedAttributes { updated[attribute.name] = [attribute.oldValue, attribute.newValue] }
            tombstone = change.tombstone
        }

        var description: String { "\(kind) \(entity) \(id) \(updated.sorted { $0.key < $1.key }) \(tombstone.sorted { $0.key < $1.key })" }
    }

    /// One journaled transaction as the model expects it.
    struct ModelTransaction: HistoryModelTransaction {
        var token: UInt64
        var author: String?
        var changes: [ModelChange]
        /// `Context.save()` orders changes by entity (in an unspecified entity order).
        var viaContext: Bool
        /// Microseconds since 1970, read from the journal once committed.
        var microseconds: Int64 = 0

        func keeping(entities: Set<String>) -> ModelTransaction? {
            var kept = self
            kept.changes = changes.filter { entities.contains($0.entity) }
            return kept.changes.isEmpty ? nil : kept
        }
    }

    static let entities = ["HistoryProject", "HistoryTask", "HistoryUrgentTask"]
    static let authors: [String?] = ["app", "sync", "widget", "importer", nil]
    static let tombstoneAttributes: [String: Set<String>] = [
        "HistoryProject": ["code", "owner"], "HistoryTask": ["title"], "HistoryUrgentTask": ["title"],
    ]

    static func open(_ folder: String) throws -> Store {
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        return try Store(at: folder, for: [HistoryProject.self, HistoryTask.self, HistoryUrgentTask.self], configuration: configuration)
    }

    /// Random values for a record of `entity`.
    static func randomValues(_ entity: String, using random: inout SeededRandom) -> [String: Value] {
        let word = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", ""][Int(random.next() % 7)]
        let number = Int64(random.next() % 5) - 2
        switch entity {
        case "HistoryProject":
            var values: [String: Value] = ["code": .string("P-\(word)"), "budget": .int(number * 100)]
            if random.next() % 2 == 0 { values["owner"] = .string("owner \(word)") }
            return values
        default:
            var values: [String: Value] = ["title": .string("task \(word)"), "done": .bool(random.next() % 2 == 0), "priority": .int(number)]
            if random.next() % 3 == 0 { values["note"] = .string("note \(random.next() % 4)") }
            if entity == "HistoryUrgentTask" {
                values["deadline"] = .date(Date(timeIntervalSince1970: Double(1_700_000_000 + random.next() % 3 * 86_400)))
            }
            return values
        }
    }

    /// A changed copy of `values` (sometimes identical: an update that changes nothing).
    static func changed(_ values: [String: Value], entity: String, using random: inout SeededRandom) -> [String: Value] {
        guard random.next() % 8 != 0 else { return values }
        var result = values
        let fresh = randomValues(entity, using: &random)
        // Sorted: a set's order changes from process to process, the seed must reproduce a run.
        for key in Set(values.keys).union(fresh.keys).sorted() where random.next() % 2 == 0 { result[key] = fresh[key] }
        return result
    }

    /// The update a change from `old` to `new` journals, or nil when no attribute changed.
    static func update(_ key: Key, entity: String, from old: [String: Value], to new: [String: Value]) -> ModelChange? {
        var updated: [String: [Value]] = [:]
        for name in Set(old.keys).union(new.keys) where old[name] != new[name] {
            updated[name] = [old[name] ?? .null, new[name] ?? .null]
        }
        return updated.isEmpty ? nil : ModelChange(kind: .update, entity: entity, id: key.id, updated: updated)
    }

    static func delete(_ key: Key, _ record: ModelRecord) -> ModelChange {
        let kept = tombstoneAttributes[record.entity] ?? []
        return ModelChange(kind: .delete, entity: record.entity, id: key.id, tombstone: record.values.filter { kept.contains($0.key) })
    }

    // MARK: Typed records from model values

    static func string(_ value: Value?) -> String? { if case .string(let string)? = value { string } else { nil } }
    static func int(_ value: Value?) -> Int { if case .int(let int)? = value { Int(int) } else { 0 } }
    static func bool(_ value: Value?) -> Bool { if case .bool(let bool)? = value { bool } else { false } }
    static func date(_ value: Value?) -> Date { if case .date(let date)? = value { date } else { Date(timeIntervalSince1970: 0) } }

    static func project(_ v: [String: Value]) -> HistoryProject {
        HistoryProject(code: string(v["code"]) ?? "", budget: int(v["budget"]), owner: string(v["owner"]))
    }
    static func task(_ v: [String: Value]) -> HistoryTask {
        HistoryTask(title: string(v["title"]) ?? "", done: bool(v["done"]), priority: int(v["priority"]), note: string(v["note"]))
    }
    static func urgent(_ v: [String: Value]) -> HistoryUrgentTask {
        HistoryUrgentTask(title: string(v["title"]) ?? "", done: bool(v["done"]), priority: int(v["priority"]), note: string(v["note"]),
                          deadline: date(v["deadline"]))
    }

    /// Writes through `Store.write`'s transaction, or stages in a context: the same calls.
    enum Writer {
        case transaction(Store.WriteTransaction)
        case context(Context)

        func insert(_ entity: String, _ v: [String: Value]) throws -> UInt64 {
            switch (self, entity) {
            case (.transaction(let t), "HistoryProject"): try t.insert(project(v)).rawValue
            case (.transaction(let t), "HistoryTask"): try t.insert(task(v)).rawValue
            case (.transaction(let t), _): try t.insert(urgent(v)).rawValue
            case (.context(let c), "HistoryProject"): try c.insert(project(v)).rawValue
            case (.context(let c), "HistoryTask"): try c.insert(task(v)).rawValue
            case (.context(let c), _): try c.insert(urgent(v)).rawValue
            }
        }

        func update(_ entity: String, _ id: UInt64, _ v: [String: Value]) throws {
            switch (self, entity) {
            case (.transaction(let t), "HistoryProject"): try t.update(RecordID<HistoryProject>(rawValue: id), to: project(v))
            case (.transaction(let t), "HistoryTask"): try t.update(RecordID<HistoryTask>(rawValue: id), to: task(v))
            case (.transaction(let t), _): try t.update(RecordID<HistoryUrgentTask>(rawValue: id), to: urgent(v))
            case (.context(let c), "HistoryProject"): try c.update(RecordID<HistoryProject>(rawValue: id), to: project(v))
            case (.context(let c), "HistoryTask"): try c.update(RecordID<HistoryTask>(rawValue: id), to: task(v))
            case (.context(let c), _): try c.update(RecordID<HistoryUrgentTask>(rawValue: id), to: urgent(v))
            }
        }

        func delete(_ entity: String, _ id: UInt64) throws {
            switch (self, entity) {
            case (.transaction(let t), "HistoryProject"): _ = try t.delete(RecordID<HistoryProject>(rawValue: id))
            case (.transaction(let t), "HistoryTask"): _ = try t.delete(RecordID<HistoryTask>(rawValue: id))
            case (.transaction(let t), _): _ = try t.delete(RecordID<HistoryUrgentTask>(rawValue: id))
            case (.context(let c), "HistoryProject"): try c.delete(RecordID<HistoryProject>(rawValue: id))
            case (.context(let c), "HistoryTask"): try c.delete(RecordID<HistoryTask>(rawValue: id))
            case (.context(let c), _): try c.delete(RecordID<HistoryUrgentTask>(rawValue: id))
            }
        }
    }

    // MARK: The test

    @Test func fetchHistoryMatchesAReferenceModel() throws {
        let seed = SeededRandom.seed(default: 0x4157_0E1D)
        print("HistoryModelTests seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var store = try Self.open(folder)
        #if DEBUG
        let transactionCount = 1_000
        #else
        let transactionCount = 4_000
        #endif
        var records: [Key: ModelRecord] = [:]
        var journal: [ModelTransaction] = []
        var lastToken: UInt64 = 0
        var counts: [String: Int] = [:]
        var queries = 0, returned = 0

        for step in 0..<transactionCount {
            let where_ = "transaction \(step), seed \(seed)"
            let author = Self.authors[Int(random.next() % UInt64(Self.authors.count))]
            let viaContext = random.next() % 2 == 0
            var pending: Outcome?
            let outcome = try Self.randomTransaction(store, records: records, author: author, viaContext: viaContext,
                                                     operations: 1 + Int(random.next() % 6), using: &random, pending: &pending, where_)
            let expected = outcome.changes
            records = outcome.records
            counts[viaContext ? "context" : "write", default: 0] += 1

            // The new entry, or none when nothing changed.
            let new = try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: lastToken)))
            if expected.isEmpty {
                #expect(new.isEmpty, "a transaction that changed nothing was journaled (\(where_))")
                counts["empty", default: 0] += 1
            } else if new.count != 1 {
                Issue.record("\(new.count) new journal entries instead of 1 (\(where_))")
            } else {
                var model = ModelTransaction(token: lastToken + 1, author: author, changes: expected, viaContext: viaContext)
                model.microseconds = historyMicroseconds(new[0].timestamp)
                if let previous = journal.last {
                    #expect(model.microseconds >= previous.microseconds, "timestamps decrease (\(where_))")
                }
                Self.compare(new, [model], where_)
                journal.append(model)
                lastToken += 1
            }
            #expect(try store.currentHistoryToken() == HistoryToken(rawValue: lastToken), "current token (\(where_))")

            // A random query every few transactions.
            if step % 5 == 4 {
                let (descriptor, answer) = Self.randomQuery(journal, lastToken: lastToken, using: &random)
                let result = try store.fetchHistory(descriptor)
                Self.compare(result, answer, "query \(queries) \(descriptor.modelDescription), \(where_)")
                queries += 1
                returned += result.count
            }
            // Now and then, reopen.
            if random.next() % 150 == 0 {
                try store.close()
                store = try Self.open(folder)
                counts["reopen", default: 0] += 1
            }
        }

        // The whole journal at the end, both orders, and its bounds.
        Self.compare(try store.fetchHistory(), journal, "whole journal, seed \(seed)")
        var reverse = HistoryDescriptor()
        reverse.order = .reverse
        Self.compare(try store.fetchHistory(reverse), journal.reversed(), "whole journal reversed, seed \(seed)")
        #expect(try store.oldestHistoryToken() == .start)
        #expect(try Self.storedRecords(store) == records, "the records at the end, seed \(seed)")
        #expect(throws: StrataError.unknownEntity("Nothing")) {
            var descriptor = HistoryDescriptor()
            descriptor.entityNames = ["Nothing"]
            _ = try store.fetchHistory(descriptor)
        }
        try store.close()
        let changes = journal.reduce(0) { $0 + $1.changes.count }
        print("HistoryModelTests: \(transactionCount) transactions \(counts.sorted { $0.key < $1.key }), \(journal.count) journaled with \(changes) changes, \(queries) queries returning \(returned) transactions")
        #expect(journal.count > transactionCount * 3 / 4)
        #expect(queries == transactionCount / 5)
    }

    /// What a transaction leaves: the records, and the changes it journals (in order).
    typealias Outcome = (records: [Key: ModelRecord], changes: [ModelChange])

    /// Runs one random transaction of `operations` inserts, updates and deletes on `records`
    /// (the store's records) by `author`, through a `Context` and its `save()` or through
    /// `Store.write(author:)`, and returns what the model says it leaves and journals. Sets
    /// `pending` to that just before committing (a commit cut short by a power loss may or may
    /// not have happened).
    static func randomTransaction(_ store: Store, records: [Key: ModelRecord], author: String?, viaContext: Bool, operations: Int,
                                  using random: inout SeededRandom, pending: inout Outcome?, _ where_: String) throws -> Outcome {
        func family(_ entity: String) -> Int { entity == "HistoryProject" ? 0 : 1 }
        /// A random existing record (in the state the writer sees).
        func pick(_ state: [Key: ModelRecord]) -> (Key, ModelRecord)? {
            guard !state.isEmpty else { return nil }
            let keys = state.keys.sorted()
            let key = keys[Int(random.next() % UInt64(keys.count))]
            return state[key].map { (key, $0) }
        }
        /// One random call on `writer`, applied to `state`; the change journaled as it is made.
        func operate(_ writer: Writer, _ state: inout [Key: ModelRecord]) throws -> (key: Key, change: ModelChange?, inserted: Bool) {
            let roll = random.next() % 10
            if roll < 4 || state.isEmpty {
                let entity = entities[Int(random.next() % 3)]
                let values = randomValues(entity, using: &random)
                let id = try writer.insert(entity, values)
                let key = Key(family: family(entity), id: id)
                #expect(state[key] == nil && records[key] == nil, "id \(id) reused (\(where_))")
                state[key] = ModelRecord(entity: entity, values: values)
                return (key, ModelChange(kind: .insert, entity: entity, id: id), true)
            } else if roll < 8, let (key, record) = pick(state) {
                let values = changed(record.values, entity: record.entity, using: &random)
                try writer.update(record.entity, key.id, values)
                state[key] = ModelRecord(entity: record.entity, values: values)
                return (key, update(key, entity: record.entity, from: record.values, to: values), false)
            } else if let (key, record) = pick(state) {
                try writer.delete(record.entity, key.id)
                state[key] = nil
                return (key, delete(key, record), false)
            }
            preconditionFailure("a record is picked from a non-empty state")
        }

        guard viaContext else {
            // Store.write: each call is journaled as it is made.
            return try store.write(author: author) { transaction in
                var state = records
                var changes: [ModelChange] = []
                for _ in 0..<operations {
                    if let change = try operate(.transaction(transaction), &state).change { changes.append(change) }
                }
                pending = (state, changes)
                return (state, changes)
            }
        }
        // A context saves its net effect: an insert (with its last values), an update from the
        // stored values, or a delete of a stored record; an insert deleted again before the
        // save leaves nothing.
        let context = Context(store, author: author)
        var state = records
        var inserted: Set<Key> = []
        var touched: Set<Key> = []
        for _ in 0..<operations {
            let (key, _, isInsert) = try operate(.context(context), &state)
            if isInsert { inserted.insert(key) }
            touched.insert(key)
        }
        var changes: [ModelChange] = []
        for key in touched.sorted() {
            switch (records[key], state[key]) {
            case (nil, let record?) where inserted.contains(key): changes.append(ModelChange(kind: .insert, entity: record.entity, id: key.id))
            case (let old?, let new?): if let change = update(key, entity: new.entity, from: old.values, to: new.values) { changes.append(change) }
            case (let old?, nil): changes.append(delete(key, old))
            default: break
            }
        }
        pending = (state, changes)
        try context.save()
        return (state, changes)
    }

    /// The store's records, as the model keeps them.
    static func storedRecords(_ store: Store) throws -> [Key: ModelRecord] {
        let context = Context(store)
        var result: [Key: ModelRecord] = [:]
        for project in try context.fetch(FetchDescriptor<HistoryProject>()) {
            var values: [String: Value] = ["code": .string(project.record.code), "budget": .int(Int64(project.record.budget))]
            values["owner"] = project.record.owner.map { .string($0) }
            result[Key(family: 0, id: project.id.rawValue)] = ModelRecord(entity: "HistoryProject", values: values)
        }
        func taskValues(_ title: String, _ done: Bool, _ priority: Int, _ note: String?) -> [String: Value] {
            var values: [String: Value] = ["title": .string(title), "done": .bool(done), "priority": .int(Int64(priority))]
            values["note"] = note.map { .string($0) }
            return values
        }
        for task in try context.fetch(FetchDescriptor<HistoryTask>()) {
            let record = task.record
            result[Key(family: 1, id: task.id.rawValue)] = ModelRecord(entity: "HistoryTask", values: taskValues(record.title, record.done, record.priority, record.note))
        }
        for task in try context.fetch(FetchDescriptor<HistoryUrgentTask>()) {  // read as HistoryTask above too
            let record = task.record
            var values = taskValues(record.title, record.done, record.priority, record.note)
            values["deadline"] = .date(record.deadline)
            result[Key(family: 1, id: task.id.rawValue)] = ModelRecord(entity: "HistoryUrgentTask", values: values)
        }
        return result
    }

    /// An insert still pending in a run of inserts is journaled before the changes made after
    /// it (the recorder once appended them first: an update of a record before its insert).
    @Test func changesKeepTheTransactionsOrderAfterARunOfInserts() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        try store.write(author: "app") { transaction in
            let first = try transaction.insert(HistoryTask(title: "a", done: false, priority: 1))
            let second = try transaction.insert(HistoryTask(title: "b", done: false, priority: 2))
            try transaction.update(first, to: HistoryTask(title: "a", done: true, priority: 1))
            _ = try transaction.insert(HistoryProject(code: "P", budget: 1))
            _ = try transaction.delete(second)
        }
        let changes = try #require(try store.fetchHistory().first).changes.map(ModelChange.init)
        #expect(changes == [
            ModelChange(kind: .insert, entity: "HistoryTask", id: 1), ModelChange(kind: .insert, entity: "HistoryTask", id: 2),
            ModelChange(kind: .update, entity: "HistoryTask", id: 1, updated: ["done": [.bool(false), .bool(true)]]),
            ModelChange(kind: .insert, entity: "HistoryProject", id: 1),
            ModelChange(kind: .delete, entity: "HistoryTask", id: 2, tombstone: ["title": .string("b")]),
        ])
        try store.close()
    }

    // MARK: Queries

    /// A random descriptor and the model's answer to it.
    static func randomQuery(_ journal: [ModelTransaction], lastToken: UInt64,
                            using random: inout SeededRandom) -> (HistoryDescriptor, [ModelTransaction]) {
        let (descriptor, untilMicroseconds) = HistoryDescriptor.random(journal, lastToken: lastToken, entities: entities, entityOdds: 2,
                                                                       fallbackEntities: 3, authors: authors, using: &random)

        // Sub-entities: a filter on HistoryTask takes HistoryUrgentTask's changes too.
        let selected = descriptor.entityNames.map { names in
            names.contains("HistoryTask") ? names.union(["HistoryUrgentTask"]) : names
        }
        let answer = descriptor.modelAnswer(journal, untilMicroseconds: untilMicroseconds, selected: selected)
        return (descriptor, answer)
    }

    /// Records an issue for each difference between what the journal returned and the model.
    static func compare(_ actual: [HistoryTransaction], _ expected: some Collection<ModelTransaction>, _ where_: String) {
        guard actual.map(\.token.rawValue) == expected.map(\.token) else {
            Issue.record("tokens \(actual.map(\.token.rawValue)) instead of \(expected.map(\.token)) (\(where_))")
            return
        }
        for (transaction, model) in zip(actual, expected) {
            let at = "token \(model.token) (\(where_))"
            #expect(transaction.author == model.author, "author, \(at)")
            #expect(transaction.schemaVersion == nil, "schema version, \(at)")
            if model.microseconds != 0 { #expect(historyMicroseconds(transaction.timestamp) == model.microseconds, "timestamp, \(at)") }
            var changes = transaction.changes.map(ModelChange.init)
            var wanted = model.changes
            if model.viaContext {
                // A save writes each entity's changes together — deletes first, then by record
                // id — in an entity order of its own: check that shape, then compare as sets.
                var seen: [String] = []
                for change in changes where seen.last != change.entity {
                    #expect(!seen.contains(change.entity), "an entity's changes are not together, \(at)")
                    seen.append(change.entity)
                }
                for entity in seen {
                    let group = changes.filter { $0.entity == entity }
                    let deletes = group.prefix { $0.kind == .delete }
                    #expect(!group.dropFirst(deletes.count).contains { $0.kind == .delete }, "deletes first, \(at)")
                    #expect(deletes.map(\.id) == deletes.map(\.id).sorted(), "deletes by id, \(at)")
                    let rest = group.dropFirst(deletes.count).map(\.id)
                    #expect(rest == rest.sorted(), "changes by id, \(at)")
                }
                let order = { (a: ModelChange, b: ModelChange) in (a.entity, a.id) < (b.entity, b.id) }
                changes.sort(by: order)
                wanted.sort(by: order)
            }
            #expect(changes == wanted, "changes \(changes) instead of \(wanted), \(at)")
            for change in transaction.changes {
                let isTask = change.entityName != "HistoryProject"
                #expect((change.recordID(as: HistoryTask.self) != nil) == isTask, "recordID(as:), \(at)")
                #expect((change.recordID(as: HistoryUrgentTask.self) != nil) == (change.entityName == "HistoryUrgentTask"), "recordID(as:), \(at)")
            }
        }
    }
}
