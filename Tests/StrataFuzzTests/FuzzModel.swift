#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
@_spi(Engine) import Strata
import StrataTestSupport

/// One change a journaled transaction holds, as the model checks it: kind and record.
struct ModelChange: Hashable, Comparable, CustomStringConvertible {
    var kind: Int  // 0 insert, 1 update, 2 delete
    var id: UInt64
    static func < (a: ModelChange, b: ModelChange) -> Bool { (a.id, a.kind) < (b.id, b.kind) }
    var description: String { "\(["insert", "update", "delete"][kind]) \(id)" }

    init(kind: Int, id: UInt64) { self.kind = kind; self.id = id }

    init?(_ change: HistoryChange) {
        switch change.kind {
        case .insert: kind = 0
        case .update: kind = 1
        case .delete: kind = 2
        case .migration: return nil
        }
        id = change.recordNumber
    }
}

/// A journaled transaction as the model expects it. A migration's entries are opaque: only
/// their token and author ("migration") are checked.
struct ModelEntry: Equatable, CustomStringConvertible {
    var token: UInt64
    var author: String?
    /// Sorted; nil for a migration's entry.
    var changes: [ModelChange]?
    var description: String { "#\(token) \(author ?? "nil") \(changes.map { "\($0)" } ?? "migration")" }
}

/// What a store holds, as the model says: its version, records, journal, horizon (a lower
/// bound) and consumers.
struct FuzzState {
    var version = 1
    var saved: [UInt64: ModelItem] = [:]
    var journal: [ModelEntry] = []
    var lastToken: UInt64 = 0
    var horizon: UInt64 = 0
    var consumers: [String: UInt64] = [:]
    /// The highest identifier of a record ever saved: new ones are above it.
    var highestSavedID: UInt64 = 0

    /// The journal entry a commit from `saved` to `next` by `author` writes (nil: none), and
    /// the state after it.
    func committing(_ next: [UInt64: ModelItem], author: String?) -> FuzzState {
        var state = self
        let changes = Self.diff(saved, next)
        state.saved = next
        state.highestSavedID = max(highestSavedID, next.keys.max() ?? 0)
        if !changes.isEmpty {
            state.lastToken += 1
            state.journal.append(ModelEntry(token: state.lastToken, author: author, changes: changes))
            // The commit prunes: the horizon reaches the slowest consumer.
            if let slowest = consumers.values.min() { state.horizon = max(state.horizon, slowest) }
        }
        return state
    }

    /// The net changes from `old` to `new`, sorted.
    static func diff(_ old: [UInt64: ModelItem], _ new: [UInt64: ModelItem]) -> [ModelChange] {
        var changes: [ModelChange] = []
        for (id, item) in new {
            if let before = old[id] {
                if before != item { changes.append(ModelChange(kind: 1, id: id)) }
            } else {
                changes.append(ModelChange(kind: 0, id: id))
            }
        }
        for id in old.keys where new[id] == nil { changes.append(ModelChange(kind: 2, id: id)) }
        return changes.sorted()
    }
}

/// Seeded random operations on one store through the public API, checked against `FuzzState`
/// after every step. The operation fuzzer runs it for long sequences; the crash campaign uses
/// it to build the states it crashes from, and its typed helpers.
final class OperationFuzzer {
    let fileSystem: any FileSystem
    let path: String
    var configuration: Store.Configuration
    var random: SeededRandom
    /// Names the run in failure messages (its seed).
    let name: String
    /// Whether the journal has a size limit (the horizon then rises on its own).
    let sizeLimited: Bool

    var state = FuzzState()
    var store: Store?
    var context: Context?
    /// The context's view: saved records with its unsaved changes.
    var working: [UInt64: ModelItem] = [:]
    /// Whether the context has unsaved calls (an update to the stored values is one too: it
    /// is applied at save, over whatever another writer committed meanwhile).
    var contextDirty = false
    var lastID: UInt64 = 0
    var step = 0
    /// Set by removing a consumer: the next commit may or may not raise the horizon.
    var horizonUncertain = false
    var counts: [String: Int] = [:]
    /// The state a commit under way leaves if it happens (set just before committing): a
    /// commit cut short by a power loss may or may not have happened.
    var pending: FuzzState?
    /// The last operations, for failure messages.
    var recent: [String] = []
    var where_: String { "step \(step) after \(recent.joined(separator: ", ")), \(name)" }

    func did(_ operation: String) {
        counts[operation, default: 0] += 1
        recent.append(operation)
        if recent.count > 6 { recent.removeFirst() }
    }

    init(fileSystem: any FileSystem, path: String, configuration: Store.Configuration, random: SeededRandom, name: String) {
        self.fileSystem = fileSystem
        self.path = path
        self.configuration = configuration
        self.random = random
        self.name = name
        sizeLimited = configuration.history.maximumBytes.map { $0 < 1 << 20 } ?? false
    }

    // MARK: Opening

    static func open(_ path: String, version: Int, configuration: Store.Configuration, fileSystem: any FileSystem) throws -> Store {
        let v = FuzzVersions.version(version)
        return try Store(at: path, schema: v.schema, migrationPlan: v.plan, configuration: configuration, fileSystem: fileSystem)
    }

    func open() throws {
        let store = try Self.open(path, version: state.version, configuration: configuration, fileSystem: fileSystem)
        self.store = store
        context = Context(store, author: "app")
        working = state.saved
        contextDirty = false
        lastID = state.highestSavedID
    }

    func close() throws {
        context = nil
        let store = self.store
        self.store = nil
        try store?.close()
        working = state.saved
    }

    // MARK: Random values

    func randomItem<T: FuzzItem>(_ type: T.Type) -> ModelItem {
        let n = Int(random.next() % 5_000)
        let item = ModelItem(name: "T\(n % 40)-\(n)", score: Int(random.next() % 1_000),
                             note: random.next() % 3 == 0 ? nil : "n\(random.next() % 50) ✓", starred: random.next() % 3 == 0,
                             label: "lab\(random.next() % 9)", rank: Int(random.next() % 5), code: "c\(random.next() % 9)")
        return T(item).model  // what this version stores of it
    }

    func pick(_ items: [UInt64: ModelItem]) -> UInt64? {
        guard !items.isEmpty else { return nil }
        let keys = items.keys.sorted()  // sorted: reproducible from the seed
        return keys[Int(random.next() % UInt64(keys.count))]
    }

    func randomFilter<T: FuzzItem>(_ type: T.Type) -> FuzzFilter {
        while true {
            let filter: FuzzFilter
            switch random.next() % 6 {
            case 0: filter = .all
            case 1: filter = .scoreAtLeast(Int(random.next() % 1_000))
            case 2: filter = .titlePrefix("T\(random.next() % 40)")
            case 3: filter = .starred
            case 4: filter = .noteIsNil
            default: filter = .rankAtLeast(Int(random.next() % 6))
            }
            if T.supports(filter) { return filter }
        }
    }

    // MARK: Checks

    /// The records `store` holds, read through a fresh context.
    static func storedItems<T: FuzzItem>(_ store: Store, _ type: T.Type) throws -> [UInt64: ModelItem] {
        var items: [UInt64: ModelItem] = [:]
        for match in try Context(store).fetch(FetchDescriptor<T>()) { items[match.id.rawValue] = match.record.model }
        return items
    }

    /// The context's view equals `working`, in identifier order.
    func checkContext<T: FuzzItem>(_ type: T.Type) throws {
        guard let context else { return }
        let all = try context.fetch(FetchDescriptor<T>())
        let expected = working.sorted { $0.key < $1.key }
        #expect(all.map(\.id.rawValue) == expected.map(\.key), "context ids (\(where_))")
        #expect(all.map(\.record.model) == expected.map(\.value), "context records (\(where_))")
    }

    /// The journal: current token, horizon, and (when `full`) every entry above the horizon.
    func checkHistory(full: Bool) throws {
        guard let store else { return }
        let current = try store.currentHistoryToken().rawValue
        #expect(current == state.lastToken, "current history token \(current), model \(state.lastToken) (\(where_))")
        let horizon = try store.oldestHistoryToken().rawValue
        #expect(horizon >= state.horizon, "horizon \(horizon) fell below \(state.horizon) (\(where_))")
        #expect(horizon <= current, "horizon \(horizon) past the current token \(current) (\(where_))")
        if !sizeLimited && !horizonUncertain {
            #expect(horizon == state.horizon, "horizon \(horizon), model \(state.horizon) (\(where_))")
        }
        state.horizon = max(state.horizon, horizon)
        guard full else { return }
        Self.compareJournal(try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: horizon))),
                            state.journal.filter { $0.token > horizon }, where_)
        if horizon > 0 {
            #expect(throws: StrataError.self, "history after \(horizon - 1) is truncated (\(where_))") {
                _ = try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: horizon - 1)))
            }
        }
        // A reversed, limited read returns the newest entries.
        var reverse = HistoryDescriptor(after: HistoryToken(rawValue: horizon))
        reverse.order = .reverse
        reverse.limit = 3
        let newest = try store.fetchHistory(reverse).map(\.token.rawValue)
        #expect(newest == state.journal.filter { $0.token > horizon }.suffix(3).reversed().map(\.token), "reversed history (\(where_))")
        counts["historyCheck", default: 0] += 1
    }

    static func compareJournal(_ fetched: [HistoryTransaction], _ expected: [ModelEntry], _ where_: String) {
        #expect(fetched.map(\.token.rawValue) == expected.map(\.token), "journal tokens (\(where_))")
        guard fetched.count == expected.count else { return }
        for (transaction, entry) in zip(fetched, expected) {
            #expect(transaction.author == entry.author, "author of #\(entry.token) (\(where_))")
            if let changes = entry.changes {
                let actual = transaction.changes.compactMap(ModelChange.init).sorted()
                #expect(actual == changes, "changes of #\(entry.token): \(transaction.changes.filter { $0.kind == .update }.map { "\($0.recordNumber): \($0.updatedAttributes.map { "\($0.name) \($0.oldValue) → \($0.newValue)" })" }) (\(where_))")
                #expect(transaction.changes.allSatisfy { $0.kind != .update || !$0.updatedAttributes.isEmpty },
                        "an update without attributes in #\(entry.token) (\(where_))")
            }
        }
    }

    /// After a commit: the store's records (through `Store.read`) are the model's.
    func checkSaved<T: FuzzItem>(_ type: T.Type) throws {
        guard let store else { return }
        let stored = try store.read { transaction in
            try transaction.fetch(FetchDescriptor<T>()).map { ($0.id.rawValue, $0.record.model) }
        }
        let expected = state.saved.sorted { $0.key < $1.key }
        #expect(stored.map(\.0) == expected.map(\.key), "saved ids (\(where_))")
        #expect(stored.map(\.1) == expected.map(\.value), "saved records (\(where_))")
    }

    /// `verify()` finds nothing and counts the model's records.
    func checkVerify() throws {
        guard let store else { return }
        let report = try store.verify()
        #expect(report.isValid, "verify: \(report) (\(where_))")
        #expect(report.records == state.saved.count, "verify counted \(report.records) records, model \(state.saved.count) (\(where_))")
        counts["verify", default: 0] += 1
    }

    // MARK: Operations

    /// One random operation on the current version, then the context check.
    func randomStep() throws {
        try randomStep(FuzzVersions.version(state.version).item)
        step += 1
    }

    private func randomStep<T: FuzzItem>(_ type: T.Type) throws {
        guard let store, let context else { return }
        let roll = random.next() % 1_000
        switch roll {
        case 0..<240:
            let item = randomItem(T.self)
            let id = try context.insert(T(item)).rawValue
            #expect(id > lastID && id > state.highestSavedID, "id \(id) not new (\(where_))")
            lastID = max(lastID, id)
            working[id] = item
            contextDirty = true
            did("insert")
        case 240..<370:
            if let id = pick(working) {
                let item = random.next() % 8 == 0 ? working[id]! : randomItem(T.self)  // sometimes changes nothing
                try context.update(RecordID<T>(rawValue: id), to: T(item))
                working[id] = item
                contextDirty = true
                did("update")
            }
        case 370..<450:
            if let id = pick(working) {
                try context.delete(RecordID<T>(rawValue: id))
                working[id] = nil
                contextDirty = true
                did("delete")
            }
        case 450..<470:
            let filter: FuzzFilter = random.next() % 2 == 0 ? .scoreAtLeast(900 + Int(random.next() % 100)) : .titlePrefix("T\(random.next() % 40)")
            let removed = try context.delete(T.self, where: T.predicate(filter))
            let expected = working.filter { filter.accepts($0.value) }
            #expect(removed == expected.count, "delete(where: \(filter)) (\(where_))")
            for id in expected.keys { working[id] = nil }
            contextDirty = true
            did("deleteWhere")
        case 470..<650:
            try fetch(T.self, context)
        case 650..<690:
            if let id = pick(working) {
                #expect(try context.record(for: RecordID<T>(rawValue: id))?.model == working[id], "record(for:) (\(where_))")
            }
            did("get")
        case 690..<790:
            try save(T.self)
        case 790..<820:
            context.rollback()
            working = state.saved
            contextDirty = false
            did("rollback")
        case 820..<870:
            if !contextDirty { try bulkWrite(T.self, store) }
        case 870..<910:
            try checkHistory(full: true)
        case 910..<925:
            let target = state.horizon + random.next() % (state.lastToken - state.horizon + 2)
            try store.deleteHistory(before: HistoryToken(rawValue: target))
            if target >= 1 { state.horizon = max(state.horizon, min(target - 1, state.lastToken)) }
            try checkHistory(full: true)
            did("deleteHistory")
        case 925..<940:
            let name = ["widget", "sync"][Int(random.next() % 2)]
            let token = state.horizon + random.next() % (state.lastToken - state.horizon + 2)
            try store.setHistoryCursor(HistoryToken(rawValue: token), for: name)
            state.consumers[name] = min(token, state.lastToken)
            if let slowest = state.consumers.values.min() { state.horizon = max(state.horizon, slowest) }
            #expect(try store.historyCursor(for: name) == HistoryToken(rawValue: state.consumers[name]!), "cursor of \(name) (\(where_))")
            try checkHistory(full: true)
            did("setHistoryCursor")
        case 940..<945:
            if let name = state.consumers.keys.sorted().first {
                try store.removeHistoryConsumer(name)
                state.consumers[name] = nil
                horizonUncertain = true
                #expect(try store.historyConsumers().keys.sorted() == state.consumers.keys.sorted(), "consumers (\(where_))")
                did("removeConsumer")
            }
        case 945..<960:
            try store.checkpoint()
            did("checkpoint")
        case 960..<980:
            try store.compact()
            did("compact")
        default:
            try reopen()
            return
        }
        try checkContext(T.self)
    }

    private func fetch<T: FuzzItem>(_ type: T.Type, _ context: Context) throws {
        let filter = randomFilter(T.self)
        let key = FuzzSortKey.allCases[Int(random.next() % 3)]
        let order: SortOrder = random.next() % 2 == 0 ? .forward : .reverse
        var descriptor = FetchDescriptor<T>(predicate: T.predicate(filter), sortBy: T.sort(key, order))
        if random.next() % 2 == 0 { descriptor.fetchLimit = Int(random.next() % 30) }
        if random.next() % 2 == 0 { descriptor.fetchOffset = Int(random.next() % 30) }
        let precedes: ((ModelItem, ModelItem) -> Bool?)? = switch key {
        case .none: nil
        case .score: { $0.score == $1.score ? nil : ($0.score < $1.score) == (order == .forward) }
        case .title: { $0.name == $1.name ? nil : ($0.name < $1.name) == (order == .forward) }
        }
        var expected = working.filter { filter.accepts($0.value) }.sorted { a, b in precedes?(a.value, b.value) ?? (a.key < b.key) }
        expected = Array(expected.dropFirst(descriptor.fetchOffset ?? 0).prefix(descriptor.fetchLimit ?? Int.max))
        let results = try context.fetch(descriptor)
        #expect(results.map(\.id.rawValue) == expected.map(\.key), "fetch ids, \(filter) by \(key) \(order) (\(where_))")
        #expect(results.map(\.record.model) == expected.map(\.value), "fetch records, \(filter) (\(where_))")
        if descriptor.fetchLimit == nil && descriptor.fetchOffset == nil {
            #expect(try context.fetchCount(FetchDescriptor<T>(predicate: T.predicate(filter))) == expected.count, "fetchCount (\(where_))")
        }
        did("fetch")
    }

    /// Saves the context; the model commits its net changes.
    func save<T: FuzzItem>(_ type: T.Type) throws {
        guard let context else { return }
        let next = state.committing(working, author: "app")
        pending = next
        try context.save()
        if next.lastToken > state.lastToken { horizonUncertain = false }
        state = next
        contextDirty = false
        did("save")
        try checkSaved(T.self)
        try checkHistory(full: false)
    }

    /// A `Store.write` transaction: inserts, then updates and deletes of distinct records
    /// (each call is journaled as made: distinct records make that the net change).
    func bulkWrite<T: FuzzItem>(_ type: T.Type, _ store: Store) throws {
        let author: String? = random.next() % 2 == 0 ? "sync" : nil
        var next = state.saved
        let inserts = (0..<Int(random.next() % 6)).map { _ in randomItem(T.self) }
        var touched = Set<UInt64>()
        var edits: [(UInt64, ModelItem?)] = []
        for _ in 0..<Int(random.next() % 4) {
            guard let id = pick(next), touched.insert(id).inserted else { continue }
            let item: ModelItem? = random.next() % 3 == 0 ? nil : randomItem(T.self)
            edits.append((id, item))
        }
        let floor = max(lastID, state.highestSavedID)
        let ids = try store.write(author: author) { transaction in
            let ids = try inserts.map { try transaction.insert(T($0)).rawValue }
            for (id, item) in edits {
                if let item {
                    try transaction.update(RecordID<T>(rawValue: id), to: T(item))
                } else {
                    #expect(try transaction.delete(RecordID<T>(rawValue: id)), "bulk delete of \(id) (\(where_))")
                }
            }
            var pendingRecords = next
            for (id, item) in zip(ids, inserts) { pendingRecords[id] = item }
            for (id, item) in edits { pendingRecords[id] = item }
            pending = state.committing(pendingRecords, author: author)
            return ids
        }
        for (id, item) in zip(ids, inserts) {
            #expect(id > floor, "bulk id \(id) not new (\(where_))")
            next[id] = item
        }
        for (id, item) in edits { next[id] = item }
        lastID = max(lastID, ids.max() ?? 0)
        let after = state.committing(next, author: author)
        if after.lastToken > state.lastToken { horizonUncertain = false }
        state = after
        working = state.saved
        did("write")
        try checkSaved(T.self)
        try checkHistory(full: false)
    }

    /// Closes and reopens at the same version: `verify()` finds nothing, the records and the
    /// journal are the model's.
    func reopen() throws {
        try close()
        try open()
        try checkVerify()
        try checkAll()
        did("reopen")
    }

    /// Every record and the whole journal.
    func checkAll() throws {
        let type = FuzzVersions.version(state.version).item
        try checkSaved(type)
        try checkContext(type)
        try checkHistory(full: true)
    }

    /// Saves or rolls back, closes, and opens at version `target` with its plan: the records
    /// are the model's migrated ones; the migration's journal entries are authored "migration".
    func migrate(to target: Int) throws {
        let type = FuzzVersions.version(state.version).item
        if random.next() % 2 == 0 { try save(type) } else { context?.rollback(); working = state.saved; contextDirty = false }
        try close()
        let before = state
        state.version = target
        state.saved = FuzzStages.migrate(before.saved, from: before.version, to: target)
        try open()
        guard let store else { return }
        let current = try store.currentHistoryToken().rawValue
        #expect(current > before.lastToken, "a migration from \(before.version) to \(target) journaled nothing (\(where_))")
        let horizon = try store.oldestHistoryToken().rawValue
        let added = try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: max(before.lastToken, horizon))))
        #expect(added.allSatisfy { $0.author == "migration" }, "migration entries' authors (\(where_))")
        for transaction in added { state.journal.append(ModelEntry(token: transaction.token.rawValue, author: "migration", changes: nil)) }
        state.lastToken = current
        state.horizon = max(state.horizon, horizon)
        if horizon > before.horizon { counts["migrationRaisedHorizon", default: 0] += 1 }
        try checkVerify()
        try checkAll()
        did("migration")
        counts["migrationSteps", default: 0] += target - before.version
    }
}
