#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataRecords
import StrataSchema

/// Which transactions `Store.fetchHistory(_:)` returns, and in which order.
public struct HistoryDescriptor: Sendable {
    /// The order of the transactions returned.
    public enum Order: Sendable {
        /// Oldest first.
        case forward
        /// Newest first (with `limit`: the latest transactions).
        case reverse
    }

    /// Only transactions after this token (nil: from the oldest kept). A token older than
    /// the journal keeps throws `StrataError.historyTruncated`.
    public var after: HistoryToken?
    /// Only transactions up to and including this token.
    public var through: HistoryToken?
    /// Only transactions committed at or before this date.
    public var until: Date?
    /// Only changes to these entities (and their sub-entities), by name; transactions that
    /// changed none of them are left out. Nil: every entity.
    public var entityNames: Set<String>?
    /// Only transactions by one of these authors. Nil: any author (and none).
    public var authors: Set<String>?
    /// Leaves out the transactions by these authors (an app skipping its own changes).
    public var excludedAuthors: Set<String> = []
    /// At most this many transactions.
    public var limit: Int?
    /// Oldest first (the default) or newest first.
    public var order: Order = .forward

    /// Every transaction the journal keeps, oldest first.
    public init() {}

    /// Transactions after `token` (nil: all kept), optionally about `entities` only.
    public init(after token: HistoryToken?, entities: [any PersistentRecord.Type]? = nil) {
        after = token
        entityNames = entities.map { Set($0.map { $0.entityName }) }
    }
}
