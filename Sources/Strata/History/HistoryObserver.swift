#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataRecords
import StrataHistory

/// The transactions committed after a token, as they are committed: an `AsyncSequence` that
/// first delivers what the journal holds after the token, then waits for each new commit —
/// this process's at once, another process's (a store opened read-only next to the writing
/// app) at the next poll, within about 50 ms (Docs/History.md, "Observing").
///
/// ```swift
/// for try await transaction in store.observeHistory(after: lastSeen, excludedAuthors: ["widget"]) {
///     apply(transaction)
///     lastSeen = transaction.token
/// }
/// ```
///
/// The sequence ends (returns nil) when its task is cancelled. It throws
/// `StrataError.historyTruncated` when the journal dropped transactions it had not delivered
/// yet (retention), so a consumer never misses one silently.
public struct HistoryObserver: AsyncSequence, Sendable {
    /// Journaled transactions, oldest first.
    public typealias Element = HistoryTransaction

    let store: Store
    let after: HistoryToken
    let filter: HistoryDescriptor

    /// Transactions after `token` that changed `entities` (nil: any; sub-entities included),
    /// by one of `authors` (nil: any author, or none) and none of `excludedAuthors`.
    public init(store: Store, after token: HistoryToken, entities: [any PersistentRecord.Type]? = nil, authors: Set<String>? = nil,
                excludedAuthors: Set<String> = []) {
        self.store = store
        after = token
        var filter = HistoryDescriptor(after: token, entities: entities)
        filter.authors = authors
        filter.excludedAuthors = excludedAuthors
        self.filter = filter
    }

    /// Transactions after `token` that `filter`'s entity names, authors and excluded authors
    /// select (its other fields are ignored): for tools, which know entities by name only.
    package init(store: Store, after token: HistoryToken, filter: HistoryDescriptor) {
        self.store = store
        after = token
        var filter = filter
        filter.after = token
        self.filter = filter
    }

    /// An iterator starting after the observer's token.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(observer: self, last: after) }

    /// Delivers the observed transactions one by one.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let observer: HistoryObserver
        /// The last token looked at (delivered or filtered out).
        var last: HistoryToken
        /// Fetched and not delivered yet, last first.
        var pending: [HistoryTransaction] = []

        /// The next transaction, waiting for a commit when none is pending; nil once the
        /// task is cancelled.
        /// - Throws: `StrataError.historyTruncated`, storage errors.
        public mutating func next() async throws -> HistoryTransaction? {
            try await next(isolation: nil)
        }

        /// The next transaction, running in the caller's isolation.
        /// - Throws: as ``next()``.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> HistoryTransaction? {
            while true {
                // Cancellation ends the sequence at once, even with fetched transactions pending.
                if Task.isCancelled { return nil }
                if let transaction = pending.popLast() { return transaction }
                let store = observer.store
                let generation = store.records.commitGeneration
                let (batch, through) = try store.history(after: last, matching: observer.filter, limit: 256)
                last = through
                pending = batch.reversed()
                if pending.isEmpty { await store.waitForChange(after: generation) }
            }
        }
    }
}

extension Store {
    /// The transactions committed after `token` (the journal's first, then each new one as it
    /// commits), filtered by entity and author: see ``HistoryObserver``.
    public func observeHistory(after token: HistoryToken, entities: [any PersistentRecord.Type]? = nil, authors: Set<String>? = nil,
                               excludedAuthors: Set<String> = []) -> HistoryObserver {
        HistoryObserver(store: self, after: token, entities: entities, authors: authors, excludedAuthors: excludedAuthors)
    }

    /// Up to `limit` transactions after `token` that `filter`'s entities and authors select,
    /// and the last token looked at (so filtered-out transactions are not read again).
    package func history(after token: HistoryToken, matching filter: HistoryDescriptor, limit: Int) throws -> ([HistoryTransaction], HistoryToken) {
        let snapshot = try translating { try self.snapshot() }
        var descriptor = filter
        descriptor.after = token
        descriptor.limit = limit
        descriptor.order = .forward
        var batch: [HistoryTransaction] = []
        try scanHistory(descriptor, in: snapshot) { batch.append($0); return true }
        let newest = HistoryToken(rawValue: (snapshot.history?.nextToken ?? 1) - 1)
        return (batch, batch.count < limit ? max(token, newest) : batch[batch.count - 1].token)
    }

    /// Returns after the store changed since `generation` (`RecordStore.commitGeneration`):
    /// a commit of this instance wakes it at once; a store opened read-only (another process
    /// writes) polls every 50 ms. Returns early when the task is cancelled.
    func waitForChange(after generation: UInt64) async {
        if configuration.isReadOnly {
            try? await Task.sleep(for: .milliseconds(50))
        } else {
            await records.waitForCommit(after: generation)
        }
    }
}
