import StrataFormat
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema

/// Builds a new store from a schema catalog and records given one by one — what
/// `strata import` (Docs/Tools.md, "The export format") writes an export into.
///
/// The store is built in a folder beside the destination (`<destination>.importing`) and
/// renamed to the destination only once every record is in, the store closed and verified
/// clean: no half-written store ever appears at the destination. On any failure, or
/// `abandon()`, the folder beside it is removed.
///
/// Records are inserted in transactions of bounded size, so memory stays bounded whatever the
/// number of records. Each keeps the id it is given; each entity's id counter is set as given.
/// The catalog is stored as given (every version, with its ids), and the indexes the newest
/// version declares are built as records are inserted (a repeated unique value is an error).
///
/// Not thread-safe: one thread drives an importer.
package final class StoreImporter {
    /// The destination folder, and the folder the store is built in.
    package let destination: String
    package let building: String
    private let fileSystem: any FileSystem
    private let records: RecordStore
    private let catalog: SchemaCatalog
    /// The catalog version each entity's pages are written under: the newest that has it.
    private let versionOfEntity: [UInt32: UInt32]
    private var pending: [(entityID: UInt32, id: UInt64, bytes: [UInt8], position: Int)] = []
    private var pendingBytes = 0
    private var nextIDs: [UInt32: UInt64] = [:]
    /// Each entity's hierarchy root (in the newest version that has it), and the highest record
    /// id added to each hierarchy: a hierarchy's records share its counters' largest value.
    private let rootOfEntity: [UInt32: UInt32]
    /// Each entity's optional attributes with a default (in the version its records are
    /// written under): a nil of one of them is stored as a null field, as a save stores it.
    private let nullableOfEntity: [UInt32: Set<UInt32>]
    private var highestIDs: [UInt32: UInt64] = [:]
    private var finished = false
    /// A transaction is committed once it holds this many records or bytes.
    static let batchRecords = 20_000
    static let batchBytes = 8 << 20

    /// Creates the folder beside `destination` and a store in it holding `catalog`.
    /// - Throws: `StoreImportError.destinationExists` when something exists at `destination`;
    ///   `.buildFolderExists` when the folder beside it exists (a previous import stopped: remove
    ///   it); `.invalidCatalog` when `catalog` breaks its invariants; `StrataError.io`.
    package init(creating destination: String, catalog: SchemaCatalog, fileSystem: any FileSystem = POSIXFileSystem()) throws {
        if fileSystem.fileExists(destination) { throw StoreImportError.destinationExists(path: destination) }
        let building = destination + ".importing"
        if fileSystem.fileExists(building) { throw StoreImportError.buildFolderExists(path: building) }
        do { try catalog.checkInvariants() } catch { throw StoreImportError.invalidCatalog(reason: error.reason) }
        self.destination = destination
        self.building = building
        self.fileSystem = fileSystem
        self.catalog = catalog
        var versionOfEntity: [UInt32: UInt32] = [:]
        for version in catalog.versions { for entity in version.entities { versionOfEntity[entity.id] = version.id } }
        self.versionOfEntity = versionOfEntity
        var nullableOfEntity: [UInt32: Set<UInt32>] = [:]
        for (entityID, versionID) in versionOfEntity {
            let attributes = catalog.version(id: versionID)?.resolvedAttributes(ofEntity: entityID) ?? []
            nullableOfEntity[entityID] = Set(attributes.filter { $0.isOptional && !$0.defaultValue.isNull }.map(\.id))
        }
        self.nullableOfEntity = nullableOfEntity
        var rootOfEntity: [UInt32: UInt32] = [:]
        for (entityID, versionID) in versionOfEntity {
            rootOfEntity[entityID] = catalog.version(id: versionID)?.ancestry(ofEntity: entityID).first?.id ?? entityID
        }
        self.rootOfEntity = rootOfEntity
        let records = try translatingErrors {
            RecordStore(log: try PageLog.open(directory: building, fileSystem: fileSystem), cache: NodeCache(budget: 8 << 20))
        }
        self.records = records
        do {
            try translatingErrors {
                try records.write(durability: .relaxed) { transaction in
                    try transaction.setCatalog(catalog.encoded())
                    if let latest = catalog.latest { try transaction.reconcileIndexes(with: latest) }
                }
            }
        } catch {
            abandon()
            throw error
        }
    }

    /// The catalog version records of `entityID` are written under, or nil when no version has it.
    package func catalogVersion(ofEntity entityID: UInt32) -> UInt32? { versionOfEntity[entityID] }

    /// Adds a record of `entityID` with record id `id` and `values` by property id (a `.null`
    /// value is left out, as the store does, but for an optional attribute with a default:
    /// a null field); `position` names where it came from in errors
    /// (the line of an export file). It is written with the next batch.
    /// - Throws: `StoreImportError.record` when no catalog version has the entity, or (when its
    ///   batch is written) its id is taken or it repeats a unique value; storage errors.
    package func insert(entityID: UInt32, id: UInt64, values: [UInt32: Value], position: Int) throws {
        guard versionOfEntity[entityID] != nil else {
            throw StoreImportError.record(position: position, reason: "no schema version has entity \(entityID)")
        }
        let nullable = nullableOfEntity[entityID] ?? []
        let bytes = RecordCodec.encode(values.filter { !$0.value.isNull || nullable.contains($0.key) }, keepingNullFields: true)
        pending.append((entityID, id, bytes, position))
        let root = rootOfEntity[entityID] ?? entityID
        highestIDs[root] = max(highestIDs[root] ?? 0, id)
        pendingBytes += bytes.count
        if pending.count >= Self.batchRecords || pendingBytes >= Self.batchBytes { try flush() }
    }

    /// Sets the next record id `entityID`'s counter holds (1 when not set). A hierarchy hands
    /// out the largest of its entities' counters, which must be above every record id of the
    /// hierarchy (`finish()` checks it).
    package func setNextID(_ nextID: UInt64, ofEntity entityID: UInt32) {
        nextIDs[entityID] = nextID
    }

    /// Writes the pending records in one transaction.
    private func flush() throws {
        guard !pending.isEmpty else { return }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
        try translatingErrors {
            try records.write(durability: .relaxed) { transaction in
                for record in batch {
                    do {
                        try transaction.tree(for: record.entityID, schemaVersion: versionOfEntity[record.entityID] ?? 0)
                            .insert(record.id, bytes: record.bytes)
                    } catch let error as RecordTreeError {
                        throw StoreImportError.record(position: record.position, reason: description(of: error))
                    }
                }
            }
        }
    }

    /// A record-level error with the catalog's names.
    private func description(of error: RecordTreeError) -> String {
        guard case .uniqueConstraintViolation(let entityID, let attributeID, let recordID, let existingID) = error,
              let version = catalog.version(id: versionOfEntity[entityID] ?? 0) else { return "\(error)" }
        let entity = version.entity(id: entityID)?.name ?? "#\(entityID)"
        let attribute = version.resolvedAttributes(ofEntity: entityID).first { $0.id == attributeID }?.name ?? "#\(attributeID)"
        return "record \(recordID) of \(entity) repeats record \(existingID)'s value of unique attribute \(attribute)"
    }

    /// Writes the last records and the id counters, closes the store, verifies it, and renames
    /// its folder to the destination (syncing the parent folder).
    /// - Throws: `StoreImportError.notSound` when the store built does not verify (a
    ///   relationship to a missing record, an inverse that does not match); `.destinationExists`
    ///   when something appeared at the destination meanwhile; storage errors. The folder
    ///   beside the destination is removed.
    package func finish() throws {
        do {
            try flush()
            for (root, highest) in highestIDs.sorted(by: { $0.key < $1.key }) {
                let next = nextIDs.filter { rootOfEntity[$0.key] == root }.map(\.value).max() ?? 1
                guard next > highest else { throw StoreImportError.nextIDTooSmall(entityID: root, nextID: next, highestID: highest) }
            }
            try translatingErrors {
                try records.write { transaction in
                    // Every entity line's tree, even one without records (so exporting the
                    // new store gives the same file), its counter where the export left it.
                    for (entityID, nextID) in nextIDs.sorted(by: { $0.key < $1.key }) {
                        transaction.keepEntityTree(entityID, nextRowID: nextID)
                    }
                }
            }
            let snapshot = try translatingErrors { try records.snapshot() }
            let report = VerificationReport(checking: snapshot, of: records)
            guard report.isValid else { throw StoreImportError.notSound(problems: report.problems.map(\.description)) }
            try translatingErrors { try records.log.close() }
            finished = true
            if fileSystem.fileExists(destination) { throw StoreImportError.destinationExists(path: destination) }
            try translatingErrors {
                do {
                    try fileSystem.syncDirectory(building)
                    try fileSystem.rename(building, to: destination)
                    try fileSystem.syncDirectory(parentDirectory(of: destination))
                } catch let error as IOError { throw PageLogError.io(error) }
            }
        } catch {
            abandon()
            throw error
        }
    }

    /// Closes the store being built (when open) and removes its folder.
    package func abandon() {
        if !finished { try? records.log.close() }
        finished = true
        guard fileSystem.fileExists(building) else { return }
        for name in (try? fileSystem.contentsOfDirectory(building)) ?? [] { try? fileSystem.removeFile(joinPath(building, name)) }
        try? fileSystem.removeDirectory(building)
    }

    private func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// Why `StoreImporter` refused or stopped; the folder beside the destination is gone.
package enum StoreImportError: Error, Equatable, CustomStringConvertible {
    /// Something exists at the destination: an import never replaces it.
    case destinationExists(path: String)
    /// The folder an import builds in exists: a previous import stopped before it finished.
    case buildFolderExists(path: String)
    /// The catalog given breaks its invariants.
    case invalidCatalog(reason: String)
    /// A record could not be added; `position` is where it came from (an export's line).
    case record(position: Int, reason: String)
    /// The next id the hierarchy of entity `entityID` would hand out is not above its highest
    /// record id: the app would reuse ids.
    case nextIDTooSmall(entityID: UInt32, nextID: UInt64, highestID: UInt64)
    /// The store built does not verify: each problem.
    case notSound(problems: [String])

    package var description: String {
        switch self {
        case .destinationExists(let path): "\(path) exists; import writes a new store only"
        case .buildFolderExists(let path):
            "\(path) exists: a previous import stopped before it finished; remove that folder and run it again"
        case .invalidCatalog(let reason): "the schema catalog is not valid: \(reason)"
        case .record(let position, let reason): "line \(position): \(reason)"
        case .nextIDTooSmall(let entityID, let nextID, let highestID):
            "the hierarchy of entity \(entityID) has record \(highestID), but its nextID is only \(nextID)"
        case .notSound(let problems):
            "the imported store does not verify (\(problems.count) problem\(problems.count == 1 ? "" : "s")): "
                + problems.prefix(5).joined(separator: "; ")
        }
    }
}
