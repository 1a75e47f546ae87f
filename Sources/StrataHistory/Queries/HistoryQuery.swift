#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataRecords
import StrataSchema

/// Reads a store's journal: the transactions a `HistoryDescriptor` selects, decoded with the
/// names of the store's catalog.
package enum HistoryQuery {
    /// Calls `body` with each transaction `descriptor` selects in `snapshot` (whose catalog
    /// `binding` holds), until it returns false or the limit is reached.
    /// - Throws: `StrataError.historyTruncated` when `descriptor.after` is older than the
    ///   journal keeps; `.unknownEntity`; `.corruption`, `.io`.
    package static func scan(_ descriptor: HistoryDescriptor, in snapshot: RecordSnapshot, binding: SchemaBinding,
                             _ body: (HistoryTransaction) throws -> Bool) throws {
        let horizon = snapshot.history?.horizon ?? 0
        if let after = descriptor.after, after.rawValue < horizon {
            throw StrataError.historyTruncated(requested: after, oldestAvailable: HistoryToken(rawValue: horizon))
        }
        let limit = descriptor.limit ?? .max
        guard limit > 0 else { return }
        let names = try HistoryNames(binding: binding, filter: descriptor.entityNames)
        let until = descriptor.until.map { HistoryClock.microseconds($0) }
        let backward = descriptor.order == .reverse
        var count = 0
        try translatingErrors {
            try snapshot.historyEntries(after: descriptor.after?.rawValue ?? 0, through: descriptor.through?.rawValue ?? .max,
                                        backward: backward, entities: names.selected) { entry in
                if let until, entry.timestamp > until { return backward }  // timestamps never decrease
                if let authors = descriptor.authors, !(entry.author.map(authors.contains) ?? false) { return true }
                if let author = entry.author, descriptor.excludedAuthors.contains(author) { return true }
                guard let transaction = try names.transaction(entry) else { return true }
                count += 1
                return try body(transaction) && count < limit
            }
        }
    }
}
