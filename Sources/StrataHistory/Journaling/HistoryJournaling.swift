#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataPageLog
import StrataRecords
import StrataSchema

/// What the journal keeps and when it is on, as a store was configured: the facade's
/// `Store.Configuration.History` reduced to what journaling and retention need.
package struct HistoryJournaling: Sendable {
    /// Whether commits are journaled (on, and the store writable).
    package var isEnabled: Bool
    /// Entries older than this many microseconds are deleted (nil: no age limit).
    package var maximumAge: Duration?
    /// The oldest entries are deleted while the journal holds more bytes than this.
    package var maximumBytes: Int?

    /// Journaling as configured.
    package init(isEnabled: Bool, maximumAge: Duration?, maximumBytes: Int?) {
        self.isEnabled = isEnabled
        self.maximumAge = maximumAge
        self.maximumBytes = maximumBytes
    }

    /// The author of the transactions a migration commits.
    package static let migrationAuthor = "migration"

    /// The retention limits as of `now` (microseconds since 1970).
    package func limits(now: Int64) -> HistoryLimits {
        HistoryLimits(maximumAge: maximumAge.map { HistoryClock.microseconds($0) },
                      maximumBytes: maximumBytes.map { UInt64(max(0, $0)) }, now: now)
    }

    /// Makes `transaction` journal its record changes as `author`'s (Architecture.md,
    /// invariant 31), when the journal is on.
    package func begin(_ transaction: RecordTransaction, author: String?, tombstoneAttributes: [UInt32: Set<UInt32>] = [:],
                       visibleDefaults: [UInt32: RecordDefaults] = [:]) {
        guard isEnabled else { return }
        let now = HistoryClock.microseconds(Date())
        let recorder = transaction.journal(author: author, timestamp: max(now, transaction.historyRoot?.lastTimestamp ?? 0))
        recorder.tombstoneAttributes = tombstoneAttributes
        recorder.visibleDefaults = visibleDefaults
        transaction.historyLimits = limits(now: now)
    }

    /// A `bind` journal hook: the binding transaction is a migration's.
    package var migrationHook: (RecordTransaction) throws -> Void {
        { [self] in begin($0, author: Self.migrationAuthor) }
    }

    /// Deletes, in bounded transactions, the entries the journal no longer keeps.
    package func prune(_ records: RecordStore, durability: Durability) throws {
        var done = false
        while !done {
            done = try records.write(durability: durability) { transaction in
                transaction.historyLimits = limits(now: HistoryClock.microseconds(Date()))
                return try transaction.pruneHistory(maximumParts: 8192)
            }
        }
    }
}

/// The journal's timestamps: microseconds since 1970, clamped.
package enum HistoryClock {
    /// `date` in microseconds since 1970 (0 when not finite).
    package static func microseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1_000_000).rounded(.down)
        return value.isFinite ? Int64(clamping: Int64(exactly: value) ?? (value > 0 ? .max : .min)) : 0
    }

    /// `duration` in microseconds (negative: 0; too long: `Int64.max`).
    package static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        return overflow ? (seconds > 0 ? .max : 0) : max(0, product.addingReportingOverflow(attoseconds / 1_000_000_000_000).partialValue)
    }
}
