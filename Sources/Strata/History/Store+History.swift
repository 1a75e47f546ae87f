#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat
import StrataHistory
import StrataRecords
import StrataSchema

extension Store {
    // MARK: Journaling

    /// The journal as this store was configured (off for a read-only store).
    var journaling: HistoryJournaling { Self.journaling(configuration) }

    /// The journal as `configuration` sets it (migrations, before the store is bound).
    static func journaling(_ configuration: Configuration) -> HistoryJournaling {
        HistoryJournaling(isEnabled: configuration.history.isEnabled && !configuration.isReadOnly,
                          maximumAge: configuration.history.maximumAge, maximumBytes: configuration.history.maximumBytes)
    }

    /// Makes `transaction` journal its record changes as `author`'s (Architecture.md,
    /// invariant 31), when the journal is on.
    func beginJournal(_ transaction: RecordTransaction, author: String?) {
        journaling.begin(transaction, author: author, tombstoneAttributes: engine.tombstoneAttributes, visibleDefaults: engine.journalDefaults)
    }

    // MARK: Reading

    /// History is complete after this token: ``fetchHistory(_:)`` after it (or any later
    /// token) returns every transaction committed since; after an earlier one it throws
    /// `StrataError.historyTruncated`. `HistoryToken.start` while nothing was ever deleted.
    public func oldestHistoryToken() throws -> HistoryToken {
        HistoryToken(rawValue: try snapshot().history?.horizon ?? 0)
    }

    /// The token of the latest journaled transaction (`HistoryToken.start` when none was):
    /// where a new consumer starts when it only wants what comes next.
    public func currentHistoryToken() throws -> HistoryToken {
        HistoryToken(rawValue: (try snapshot().history?.nextToken ?? 1) - 1)
    }

    /// The journaled transactions `descriptor` selects.
    /// - Throws: `StrataError.historyTruncated` when `descriptor.after` is older than the
    ///   journal keeps (``oldestHistoryToken()``); `.unknownEntity` for an entity name no
    ///   version of the store's schema has; `.corruption`, `.io`.
    public func fetchHistory(_ descriptor: HistoryDescriptor = HistoryDescriptor()) throws -> [HistoryTransaction] {
        let snapshot = try snapshot()
        var transactions: [HistoryTransaction] = []
        try scanHistory(descriptor, in: snapshot) { transaction in
            transactions.append(transaction)
            return true
        }
        return transactions
    }

    /// The journaled transactions `descriptor` selects, read without blocking the caller's
    /// thread.
    /// - Throws: as ``fetchHistory(_:)``.
    public func fetchHistory(_ descriptor: HistoryDescriptor = HistoryDescriptor()) async throws -> [HistoryTransaction] {
        try await runOffTheCooperativePool { try self.fetchHistory(descriptor) }
    }

    /// Calls `body` with each transaction `descriptor` selects in `snapshot`, until it returns
    /// false or the limit is reached.
    func scanHistory(_ descriptor: HistoryDescriptor, in snapshot: RecordSnapshot, _ body: (HistoryTransaction) throws -> Bool) throws {
        try HistoryQuery.scan(descriptor, in: snapshot, binding: binding, body)
    }

    // MARK: Retention

    /// Deletes the journaled transactions before `token` (they are gone at once for readers;
    /// their pages are freed in batches). Afterwards ``oldestHistoryToken()`` is at least
    /// `token` − 1. Registered consumers do not hold it back: a consumer that had not
    /// processed every deleted transaction keeps its cursor, and reading history after it
    /// throws `StrataError.historyTruncated`.
    /// - Throws: `.readOnly`; storage errors.
    public func deleteHistory(before token: HistoryToken) throws {
        try checkWritable()
        try translating {
            try records.write(durability: configuration.durability) { $0.deleteHistory(before: token.rawValue) }
            try pruneHistory()
        }
    }

    /// Records that the consumer named `name` (a widget, a sync engine, an extension) has
    /// processed the history through `token`. While any consumer is registered, transactions
    /// every consumer has passed are deleted; those some consumer has not passed are kept —
    /// but never beyond `Configuration.History`'s age and size limits, so an abandoned
    /// consumer cannot make the journal grow forever (it then gets
    /// `StrataError.historyTruncated`).
    /// - Throws: `.invalidHistoryConsumer` for an empty name, one longer than 255 UTF-8
    ///   bytes, or a 1,025th consumer; `.readOnly`; storage errors.
    public func setHistoryCursor(_ token: HistoryToken, for name: String) throws {
        try checkWritable()
        try translating {
            try records.write(durability: configuration.durability) { transaction in
                do { try transaction.setHistoryConsumer(name, token: token.rawValue) } catch HistoryError.invalidConsumer(let name, let reason) {
                    throw StrataError.invalidHistoryConsumer(name: name, reason: reason)
                }
            }
            try pruneHistory()
        }
    }

    /// The token the consumer named `name` last recorded, or nil when it is not registered.
    public func historyCursor(for name: String) throws -> HistoryToken? {
        try snapshot().history?.consumers[name].map { HistoryToken(rawValue: $0) }
    }

    /// The registered consumers and their tokens.
    public func historyConsumers() throws -> [String: HistoryToken] {
        (try snapshot().history?.consumers ?? [:]).mapValues { HistoryToken(rawValue: $0) }
    }

    /// Unregisters the consumer named `name` (history it alone held may then be deleted).
    /// - Throws: `.readOnly`; storage errors.
    public func removeHistoryConsumer(_ name: String) throws {
        try checkWritable()
        try translating {
            try records.write(durability: configuration.durability) { transaction in
                guard transaction.historyRoot?.consumers[name] != nil else { return }
                try transaction.setHistoryConsumer(name, token: nil)
            }
        }
    }

    /// Deletes, in bounded transactions, the entries the journal no longer keeps.
    func pruneHistory() throws {
        try journaling.prune(records, durability: configuration.durability)
    }
}

extension Store.Configuration {
    /// The history journal's settings (`Store.Configuration.history`).
    public struct History: Sendable {
        /// Whether commits are journaled (the default). With the journal off, a commit that
        /// changes records moves the oldest token history is complete after past itself, so a
        /// consumer can never miss it silently (`StrataError.historyTruncated`).
        public var isEnabled = true
        /// Transactions older than this are deleted (default 30 days; nil: no age limit).
        public var maximumAge: Duration? = .seconds(30 * 24 * 3600)
        /// The oldest transactions are deleted while the journal holds more than this many
        /// bytes (default 64 MiB; nil: no size limit).
        public var maximumBytes: Int? = 64 << 20

        /// The defaults.
        public init() {}
    }
}
