#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat
import StrataRecords
import StrataSchema

extension Store {
    // MARK: Journaling

    /// Makes `transaction` journal its record changes as `author`'s (Architecture.md,
    /// invariant 31), when the journal is on.
    func beginJournal(_ transaction: RecordTransaction, author: String?) {
        Self.beginJournal(transaction, author: author, configuration: configuration, tombstoneAttributes: tombstoneAttributes,
                          visibleProperties: journalProperties)
    }

    /// Makes `transaction` journal its record changes, as `beginJournal(_:author:)` does, for
    /// a store opened with `configuration` (migrations, before the store is bound).
    static func beginJournal(_ transaction: RecordTransaction, author: String?, configuration: Configuration,
                             tombstoneAttributes: [UInt32: Set<UInt32>] = [:], visibleProperties: [UInt32: [UInt32: Value]] = [:]) {
        guard configuration.history.isEnabled, !configuration.isReadOnly else { return }
        let now = Self.microseconds(Date())
        let recorder = transaction.journal(author: author, timestamp: max(now, transaction.historyRoot?.lastTimestamp ?? 0))
        recorder.tombstoneAttributes = tombstoneAttributes
        recorder.visibleProperties = visibleProperties
        transaction.historyLimits = HistoryLimits(
            maximumAge: configuration.history.maximumAge.map { Self.microseconds($0) },
            maximumBytes: configuration.history.maximumBytes.map { UInt64(max(0, $0)) }, now: now)
    }

    /// The author of the transactions a migration commits.
    static let migrationAuthor = "migration"

    /// A `bind` journal hook: the binding transaction is a migration's.
    static func migrationJournal(_ configuration: Configuration) -> (RecordTransaction) throws -> Void {
        { beginJournal($0, author: migrationAuthor, configuration: configuration) }
    }

    static func microseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1_000_000).rounded(.down)
        return value.isFinite ? Int64(clamping: Int64(exactly: value) ?? (value > 0 ? .max : .min)) : 0
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        return overflow ? (seconds > 0 ? .max : 0) : max(0, product.addingReportingOverflow(attoseconds / 1_000_000_000_000).partialValue)
    }

    /// Per entity id of the bound version, its properties (inherited ones included) and the
    /// value a read gives a record lacking each one (`HistoryRecorder.visibleProperties`).
    static func journalProperties(of binding: SchemaBinding) -> [UInt32: [UInt32: Value]] {
        var result: [UInt32: [UInt32: Value]] = [:]
        for entity in binding.version.entities {
            var properties: [UInt32: Value] = [:]
            for attribute in binding.version.resolvedAttributes(ofEntity: entity.id) { properties[attribute.id] = attribute.defaultValue }
            for relationship in binding.version.resolvedRelationships(ofEntity: entity.id) { properties[relationship.id] = .null }
            result[entity.id] = properties
        }
        return result
    }

    /// Per entity id, the ids of the attributes (inherited ones included) marked
    /// `preserveValueOnDeletion` in `schema`.
    static func tombstoneAttributes(of schema: Schema, binding: SchemaBinding) -> [UInt32: Set<UInt32>] {
        var result: [UInt32: Set<UInt32>] = [:]
        for entity in schema.entities {
            guard let entityID = try? binding.entityID(of: entity.name),
                  let attributes = try? schema.resolvedAttributes(of: entity.name) else { continue }
            let ids = Set(attributes.filter { $0.options.contains(.preserveValueOnDeletion) }
                .compactMap { binding.attributeID(named: $0.name, ofEntity: entityID) })
            if !ids.isEmpty { result[entityID] = ids }
        }
        return result
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
        let horizon = snapshot.history?.horizon ?? 0
        if let after = descriptor.after, after.rawValue < horizon {
            throw StrataError.historyTruncated(requested: after, oldestAvailable: HistoryToken(rawValue: horizon))
        }
        let limit = descriptor.limit ?? .max
        guard limit > 0 else { return }
        let names = try HistoryNames(binding: binding, filter: descriptor.entityNames)
        let until = descriptor.until.map { Self.microseconds($0) }
        let backward = descriptor.order == .reverse
        var count = 0
        try translating {
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
        var done = false
        while !done {
            done = try records.write(durability: configuration.durability) { transaction in
                transaction.historyLimits = HistoryLimits(
                    maximumAge: configuration.history.maximumAge.map { Self.microseconds($0) },
                    maximumBytes: configuration.history.maximumBytes.map { UInt64(max(0, $0)) }, now: Self.microseconds(Date()))
                return try transaction.pruneHistory(maximumParts: 8192)
            }
        }
    }
}

/// Turns journal entries into `HistoryTransaction`s: names from the store's catalog (an
/// entity or attribute a later version removed keeps its last name), and the entity filter.
struct HistoryNames {
    let catalog: SchemaCatalog
    let current: CatalogVersion
    /// The entity ids a filter selects (with their sub-entities), or nil for all.
    let selected: Set<UInt32>?
    private let cache = Cache()

    final class Cache {
        var entities: [UInt32: (name: String, lineage: [String], attributes: [UInt32: String])] = [:]
    }

    init(binding: SchemaBinding, filter: Set<String>?) throws {
        catalog = binding.catalog
        current = binding.version
        guard let filter else { selected = nil; return }
        var ids = Set<UInt32>()
        for name in filter {
            guard let version = binding.catalog.versions.last(where: { $0.entity(named: name) != nil }),
                  let entity = version.entity(named: name) else { throw StrataError.unknownEntity(name) }
            ids.insert(entity.id)
            // Sub-entities, in every version that knows the entity.
            for version in binding.catalog.versions {
                for candidate in version.entities where version.ancestry(ofEntity: candidate.id).contains(where: { $0.id == entity.id }) {
                    ids.insert(candidate.id)
                }
            }
        }
        selected = ids
    }

    func entity(_ id: UInt32) -> (name: String, lineage: [String], attributes: [UInt32: String]) {
        if let known = cache.entities[id] { return known }
        let version = current.entity(id: id) != nil ? current : catalog.versions.last { $0.entity(id: id) != nil }
        let name = version?.entity(id: id)?.name ?? "#\(id)"
        let lineage = version.map { $0.ancestry(ofEntity: id).map(\.name).filter { $0 != name } } ?? []
        // Relationships too: a change of a relationship (or of its inverse) is journaled as an
        // update of the record that holds it.
        var attributes: [UInt32: String] = [:]
        for version in catalog.versions + [current] {
            for attribute in version.resolvedAttributes(ofEntity: id) { attributes[attribute.id] = attribute.name }
            for relationship in version.resolvedRelationships(ofEntity: id) { attributes[relationship.id] = relationship.name }
        }
        let resolved = (name, lineage, attributes)
        cache.entities[id] = resolved
        return resolved
    }

    func attributeName(_ id: UInt32, in entity: (name: String, lineage: [String], attributes: [UInt32: String])) -> String {
        entity.attributes[id] ?? "#\(id)"
    }

    /// The transaction, or nil when the filter leaves none of its changes.
    func transaction(_ entry: HistoryEntry) throws -> HistoryTransaction? {
        var segments: [HistoryChanges.Segment] = []
        var schemaVersion: Schema.Version?
        for operation in entry.operations {
            guard let entityID = operation.entityID else {
                if case .schema(let version) = operation { schemaVersion = version }
                continue
            }
            guard selected?.contains(entityID) ?? true else { continue }
            let entity = self.entity(entityID)
            switch operation {
            case .schema: continue
            case .insert(_, let first, let count):
                guard count <= UInt64(Int.max) else { throw StrataError.corruption(file: "history", offset: 0, reason: "insert run of \(count)") }
                segments.append(.inserts(entityName: entity.name, lineage: entity.lineage, first: first, count: Int(count)))
            case .update(_, let id, let changed, let old, let new):
                let before = try Self.values(old, token: entry.token), after = try Self.values(new, token: entry.token)
                let attributes = changed.map {
                    AttributeChange(name: attributeName($0, in: entity), oldValue: before[$0] ?? .null, newValue: after[$0] ?? .null)
                }
                segments.append(.single(HistoryChange(kind: .update, entityName: entity.name, recordNumber: id, updatedAttributes: attributes,
                                                      tombstone: [:], migratedRecords: nil, lineage: entity.lineage)))
            case .delete(_, let id, let tombstone):
                var values: [String: Value] = [:]
                for (attribute, value) in try Self.values(tombstone, token: entry.token) { values[attributeName(attribute, in: entity)] = value }
                segments.append(.single(HistoryChange(kind: .delete, entityName: entity.name, recordNumber: id, updatedAttributes: [],
                                                      tombstone: values, migratedRecords: nil, lineage: entity.lineage)))
            case .migration(_, let inserted, let updated, let deleted):
                let counts = HistoryChange.MigrationCounts(inserted: Int(clamping: inserted), updated: Int(clamping: updated), deleted: Int(clamping: deleted))
                segments.append(.single(HistoryChange(kind: .migration, entityName: entity.name, recordNumber: 0, updatedAttributes: [],
                                                      tombstone: [:], migratedRecords: counts, lineage: entity.lineage)))
            }
        }
        if selected != nil && segments.isEmpty { return nil }
        return HistoryTransaction(token: HistoryToken(rawValue: entry.token),
                                  timestamp: Date(timeIntervalSince1970: Double(entry.timestamp) / 1_000_000),
                                  author: entry.author, schemaVersion: schemaVersion, changes: HistoryChanges(segments))
    }

    static func values(_ bytes: [UInt8], token: UInt64) throws -> [UInt32: Value] {
        guard !bytes.isEmpty else { return [:] }
        do { return try RecordCodec.decode(bytes) } catch {
            throw StrataError.corruption(file: "history", offset: 0, reason: "history entry \(token): \(error.reason)")
        }
    }
}
