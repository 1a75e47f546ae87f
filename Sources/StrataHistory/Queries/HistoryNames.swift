#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataRecords
import StrataSchema

/// Turns journal entries into `HistoryTransaction`s: names from the store's catalog (an
/// entity or attribute a later version removed keeps its last name), and the entity filter.
package struct HistoryNames {
    let catalog: SchemaCatalog
    let current: CatalogVersion
    /// The entity ids a filter selects (with their sub-entities), or nil for all.
    package let selected: Set<UInt32>?
    private let cache = Cache()

    final class Cache {
        var entities: [UInt32: (name: String, lineage: [String], attributes: [UInt32: String])] = [:]
    }

    package init(binding: SchemaBinding, filter: Set<String>?) throws {
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
    package func transaction(_ entry: HistoryEntry) throws -> HistoryTransaction? {
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
