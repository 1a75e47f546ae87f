import StrataFormat
import StrataRecords
import StrataSchema
import StrataMigration

extension Store {
    /// The records migrations put in quarantine (`RejectedRecordPolicy.quarantine`), oldest first.
    /// - Throws: storage errors.
    public func quarantinedRecords() throws -> [QuarantinedRecord] {
        try translating {
            try snapshot().quarantineEntries().map { try QuarantinedRecord(sequence: $0.sequence, entry: $0.bytes) }
        }
    }

    /// A quarantined record read as `Record`, a type of the version it was rejected from
    /// (such as `SchemaV1.Person`), through that version's attribute ids.
    /// - Throws: `StrataError.recordCoding` when it does not read as `Record`;
    ///   `.corruption` when the store's catalog lacks its version.
    public func record<Record: PersistentRecord>(_ quarantined: QuarantinedRecord, as type: Record.Type) throws -> Record {
        guard let catalog = try MigrationRunner.catalog(in: snapshot()), let version = catalog.version(id: quarantined.catalogVersion) else {
            throw StrataError.corruption(file: "schema catalog", offset: 0,
                                         reason: "catalog version \(quarantined.catalogVersion) of a quarantined record is missing")
        }
        let binding = SchemaBinding(catalog: catalog, versionID: version.id, version: version)
        let entityID = version.entity(named: quarantined.entity)?.id ?? 0
        do {
            return try quarantined.bytes.withUnsafeBytes { try binding.decode(type, from: $0, layout: binding.layout(of: entityID)) }
        } catch {
            throw StrataError.recordCoding(reason: "quarantined \(quarantined.entity)#\(quarantined.id) as \(type): \(error)")
        }
    }

    /// Deletes every quarantined record (after the app has dealt with them).
    /// - Throws: `.readOnly`, storage errors.
    public func removeQuarantinedRecords() throws {
        try checkWritable()
        try translating { try records.write(durability: configuration.durability) { try $0.clearQuarantine() } }
    }
}
