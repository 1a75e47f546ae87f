import Foundation
import Strata

/// The ten small record types of the history workloads (entities `HistoryItem0` …
/// `HistoryItem9`): a title and a counter.
protocol HistoryItem: PersistentRecord {
    init(title: String, count: Int)
}

struct HistoryItem0: HistoryItem { var title: String; var count: Int }
struct HistoryItem1: HistoryItem { var title: String; var count: Int }
struct HistoryItem2: HistoryItem { var title: String; var count: Int }
struct HistoryItem3: HistoryItem { var title: String; var count: Int }
struct HistoryItem4: HistoryItem { var title: String; var count: Int }
struct HistoryItem5: HistoryItem { var title: String; var count: Int }
struct HistoryItem6: HistoryItem { var title: String; var count: Int }
struct HistoryItem7: HistoryItem { var title: String; var count: Int }
struct HistoryItem8: HistoryItem { var title: String; var count: Int }
struct HistoryItem9: HistoryItem { var title: String; var count: Int }

/// The journal the history-fetch workloads read: `count` small transactions, each one insert
/// or one update of a record of one of the ten `HistoryItem` types, by one of five authors or
/// none, all a pure function of the transaction's number and a seed (`transactions()`).
struct HistoryJournalPlan {
    static var types: [any HistoryItem.Type] {
        [HistoryItem0.self, HistoryItem1.self, HistoryItem2.self, HistoryItem3.self, HistoryItem4.self,
         HistoryItem5.self, HistoryItem6.self, HistoryItem7.self, HistoryItem8.self, HistoryItem9.self]
    }
    static let authors: [String?] = ["app", "sync", "widget", "importer", "share", nil]
    static let seed: UInt64 = 0x4157_0521

    /// One planned transaction.
    struct Transaction: Equatable {
        enum Change: Equatable {
            /// Insert of record `id` with `title` and count 0.
            case insert(id: UInt64, title: String)
            /// Update of record `id`: `count` from `oldCount` to `oldCount + 1`, and its title
            /// when `newTitle` is not nil.
            case update(id: UInt64, oldCount: Int, oldTitle: String, newTitle: String?)
        }

        var entity: Int
        var author: String?
        var change: Change
        /// Every 4th transaction is a `Context.save()`, the others `Store.write(author:)`.
        var viaContext: Bool
    }

    let count: Int

    /// Every transaction in order, through `body`.
    func transactions(_ body: (Int, Transaction) throws -> Void) rethrows {
        var random = SplitMix64(seed: Self.seed)
        // Per entity, per record (id − 1): its count and its title's version.
        var records: [[(count: Int32, version: Int32)]] = Array(repeating: [], count: Self.types.count)
        func title(_ entity: Int, _ index: Int, _ version: Int32) -> String {
            version == 0 ? "item \(entity).\(index + 1)" : "item \(entity).\(index + 1) v\(version)"
        }
        for number in 0..<count {
            let entity = Int(random.next() % UInt64(Self.types.count))
            let author = Self.authors[Int(random.next() % UInt64(Self.authors.count))]
            let roll = random.next()
            let change: Transaction.Change
            if records[entity].isEmpty || roll % 2 == 0 {
                records[entity].append((0, 0))
                change = .insert(id: UInt64(records[entity].count), title: title(entity, records[entity].count - 1, 0))
            } else {
                let index = Int((roll >> 8) % UInt64(records[entity].count))
                let old = records[entity][index]
                let renames = (roll >> 40) % 3 == 0
                records[entity][index] = (old.count + 1, renames ? old.version + 1 : old.version)
                change = .update(id: UInt64(index + 1), oldCount: Int(old.count), oldTitle: title(entity, index, old.version),
                                 newTitle: renames ? title(entity, index, old.version + 1) : nil)
            }
            try body(number, Transaction(entity: entity, author: author, change: change, viaContext: number % 4 == 3))
        }
    }

    /// Throws unless `journaled` is what `planned` should have journaled (one change).
    static func check(_ journaled: HistoryTransaction, equals planned: Transaction, token: UInt64) throws {
        func fail(_ what: String) -> BenchmarkError {
            .verificationFailed("journaled transaction \(journaled.token): \(what) (planned: \(planned))")
        }
        guard journaled.token.rawValue == token else { throw fail("token instead of #\(token)") }
        guard journaled.author == planned.author else { throw fail("author \(journaled.author ?? "none")") }
        guard journaled.changes.count == 1, let change = journaled.changes.first else { throw fail("\(journaled.changes.count) changes") }
        guard change.entityName == types[planned.entity].entityName else { throw fail("entity \(change.entityName)") }
        switch planned.change {
        case .insert(let id, _):
            guard change.kind == .insert, change.recordNumber == id else { throw fail("\(change.kind) of \(change.recordNumber)") }
        case .update(let id, let oldCount, let oldTitle, let newTitle):
            guard change.kind == .update, change.recordNumber == id else { throw fail("\(change.kind) of \(change.recordNumber)") }
            var expected = [AttributeChange(name: "count", oldValue: .int(Int64(oldCount)), newValue: .int(Int64(oldCount + 1)))]
            if let newTitle { expected.append(AttributeChange(name: "title", oldValue: .string(oldTitle), newValue: .string(newTitle))) }
            guard change.updatedAttributes.sorted(by: { $0.name < $1.name }) == expected else {
                throw fail("updated attributes \(change.updatedAttributes)")
            }
        }
    }
}

/// What writes a planned change: a `Store.write` transaction or a `Context` (the same calls).
protocol HistoryWriter {
    func insert<Record: PersistentRecord>(_ record: Record) throws -> RecordID<Record>
    func update<Record: PersistentRecord>(_ id: RecordID<Record>, to record: Record) throws
}

extension Store.WriteTransaction: HistoryWriter {}
extension Context: HistoryWriter {}

extension HistoryItem {
    /// Writes `change` of this type's record through `writer`; returns the id it touched.
    static func apply(_ change: HistoryJournalPlan.Transaction.Change, with writer: some HistoryWriter) throws -> UInt64 {
        switch change {
        case .insert(_, let title):
            return try writer.insert(Self(title: title, count: 0)).rawValue
        case .update(let id, let oldCount, let oldTitle, let newTitle):
            try writer.update(RecordID<Self>(rawValue: id), to: Self(title: newTitle ?? oldTitle, count: oldCount + 1))
            return id
        }
    }
}
