import Foundation
import Strata

/// The record of `update-with-history` and `delete-with-history`: a title and a counter (two
/// attributes an update changes), the title kept in a delete's tombstone
/// (`preserveValueOnDeletion`), so the journal holds values for every change it measures.
///
/// Item N (ids 1…count, inserted in order into a new store) starts as `original(N)` and an
/// update makes it `updated(N)`: both texts and the counter change.
struct JournaledItem: PersistentRecord, Equatable {
    static var entityName: String { "JournaledItem" }
    static var attributeOptions: [String: Attribute.Options] { ["title": [.preserveValueOnDeletion]] }

    var title: String
    var count: Int

    /// Item `number` as inserted.
    static func original(_ number: UInt64) -> JournaledItem {
        JournaledItem(title: "item \(number)", count: Int(number))
    }

    /// Item `number` after its update: a new title and the counter plus one.
    static func updated(_ number: UInt64) -> JournaledItem {
        JournaledItem(title: "item \(number) renamed", count: Int(number) + 1)
    }
}

extension JournaledItem {
    // The hand-coded fast path, as `PersonRecord` has.
    func encode(to writer: inout RecordWriter) throws {
        writer.encode(title, forKey: "title")
        writer.encode(count, forKey: "count")
    }

    init(from reader: RecordReader) throws {
        self.init(title: try reader.decode(String.self, forKey: "title"), count: try reader.decode(Int.self, forKey: "count"))
    }
}

/// Stores of `JournaledItem`s.
enum JournaledItemStore {
    /// Opens (creating when missing) the store at `path`, its commits `durability` (durable,
    /// the default), the history journal on or off.
    static func open(at path: String, history: Bool, durability: Durability = .durable) throws -> Store {
        var configuration = Store.Configuration()
        configuration.history.isEnabled = history
        configuration.durability = durability
        return try Store(at: path, for: [JournaledItem.self], configuration: configuration)
    }

    /// Creates a store at `path` holding items 1...count (as `original`), inserted in one
    /// relaxed `store.write`, the journal on or off, then closes it.
    static func create(at path: String, count: Int, history: Bool) throws {
        var configuration = Store.Configuration()
        configuration.history.isEnabled = history
        configuration.durability = .relaxed
        let store = try Store(at: path, for: [JournaledItem.self], configuration: configuration)
        try store.write { transaction in
            for number in 1...UInt64(count) {
                let id = try transaction.insert(JournaledItem.original(number))
                guard id.rawValue == number else {
                    throw BenchmarkError.setupFailed("the transaction handed out item id \(id.rawValue) where \(number) was expected")
                }
            }
        }
        try store.close()
    }
}
