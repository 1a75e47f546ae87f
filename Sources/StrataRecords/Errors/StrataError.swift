import StrataIO
import StrataPageLog
import StrataSchema

/// An error reported by Strata. Every case carries what a person needs to act on it.
/// Corrupt bytes are never a trap: they are `corruption`, naming the file, the byte offset
/// and what is wrong, and nothing is skipped, repaired or wiped.
public enum StrataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed (`operation` such as `"pwrite"` or `"fdatasync"`, with `errno`).
    /// `reason` names the error symbolically (`EROFS`, `ENOTDIR`, …); the description adds
    /// what to do about it where that is known (`remedy`). After a failed write or sync the
    /// store instance refuses further writes (`poisoned`); reopening the store recovers the
    /// last durable state.
    case io(operation: String, path: String, offset: UInt64?, errno: Int32, reason: String)
    /// Bytes that should hold committed data are damaged.
    case corruption(file: String, offset: UInt64, reason: String)
    /// An earlier write or sync failed, so this instance no longer writes. Reopen the store.
    case poisoned(cause: String)
    /// Another process or store instance has the store open for writing.
    case locked(path: String)
    /// The store was written in a newer file format than this version of Strata reads.
    case unsupportedFormatVersion(file: String, found: Int, supported: Int)
    /// A page is larger than the store accepts.
    case pageTooLarge(bytes: Int, maximum: Int)
    /// A page id that was never allocated.
    case invalidPageID(UInt64)
    /// The store was closed.
    case closed
    /// A record with this id already exists.
    case duplicateRecordID(UInt64)
    /// The app's schema differs from the store's in ways that need a migration plan; each
    /// difference is described, those that need a migration marked.
    case schemaMismatch(stored: String, current: String, differences: [String])
    /// The schema is not valid (or an entity could not be derived from a record type).
    case invalidSchema(reason: String)
    /// The store's schema has no entity for this record type.
    case unknownEntity(String)
    /// A record could not be encoded, or a stored record could not be read as its type.
    case recordCoding(reason: String)
    /// There is no record with this identifier.
    case recordNotFound(String)
    /// A save would delete `record` while its relationship `relationship`, whose delete rule
    /// is `.deny`, still refers to `count` records that are not deleted too. Nothing was saved.
    case deleteDenied(record: String, relationship: String, count: Int)
    /// A save would store a reference from `record`'s relationship `relationship` to
    /// `destination` (such as `Person#9`), which does not exist — in a `Store.write`
    /// transaction, also a record an earlier change of it deleted. (A context's save applies
    /// its inserts and updates before its deletes, as SwiftData does: a reference to a record
    /// the same save deletes meets that record's delete rule instead.) Nothing was saved.
    case danglingReference(record: String, relationship: String, destination: String)
    /// A save would leave `record`'s required (non-optional) to-one relationship empty — a
    /// delete rule or an inverse change removed the record it referred to. Nothing was saved.
    case requiredRelationship(record: String, relationship: String)
    /// Records of an abstract entity cannot be inserted, only records of its sub-entities.
    case abstractEntity(String)
    /// A change would give two records one value of a unique attribute, and no single record
    /// can be updated instead: an update repeating another record's value, an insert whose
    /// unique attributes match two different records, or a schema making an attribute unique
    /// whose values already repeat. Nothing of the save, write or open was stored.
    /// `existing` names the record already holding the value, or — for a constraint a new
    /// schema version adds, which stored records break — the two records ("records 7 and 12").
    case uniqueConstraintViolation(entity: String, attribute: String, existing: String)
    /// The store was last written with a newer schema version than the app's (a release was
    /// pulled, or an older app shares the store). Nothing was changed.
    case storeIsNewer(stored: Schema.Version, current: Schema.Version)
    /// The store's schema matches none of the migration plan's schemas: the plan cannot tell
    /// how to migrate it. `checksum` is the stored schema checksum (hex). Nothing was changed.
    case unknownModelVersion(stored: Schema.Version, checksum: String)
    /// The store needs a migration (or has one in progress) that this instance may not run:
    /// it was opened as a non-owner (`Configuration.isMigrationOwner` false) or read-only.
    /// `stored` is the store's schema version (nil: a new store), `required` the app's. Nothing
    /// was changed; the app (the migration owner) migrates it.
    case migrationRequired(stored: Schema.Version?, required: Schema.Version)
    /// The store was opened read-only (`Configuration.isReadOnly`): nothing can be written.
    case readOnly
    /// There is no store at `path` (opening read-only, or reading a store's schema, creates none):
    /// the folder is missing or holds no store file. A folder or file this process may not read
    /// is `.io` (permission denied), a folder whose superblock file is gone while its segment
    /// files remain `.corruption` — never this.
    case storeNotFound(path: String)
    /// Another process (or store instance) changed the store's schema catalog — it registered a
    /// new schema version, or finished a migration — after this read-only store bound its schema
    /// (`Configuration.isReadOnly`, Architecture.md "Reader processes"). Its records may no
    /// longer read as this store's types, so every read throws this until the store is closed
    /// and opened again. `stored` is the store's newest schema version now, when readable.
    case schemaChanged(stored: Schema.Version?)
    /// A migration stage failed; the store is exactly as it was before the migration began,
    /// every file byte for byte. The report says where and why.
    case migrationFailed(MigrationFailureReport)
    /// The history asked for starts after `requested`, but the journal no longer holds every
    /// transaction after it: it is complete only after `oldestAvailable` (older transactions
    /// were deleted by retention or `deleteHistory`, or committed with the journal off). Start
    /// over from the current data, then from `Store.currentHistoryToken()`.
    case historyTruncated(requested: HistoryToken, oldestAvailable: HistoryToken)
    /// A backup's destination already exists (`Store.backup(to:verification:progress:)`): nothing was
    /// written, there or beside it.
    case destinationExists(path: String)
    /// A history consumer name that cannot be registered.
    case invalidHistoryConsumer(name: String, reason: String)

    /// Whether the device or quota was full (`ENOSPC` or `EDQUOT`).
    public var isOutOfSpace: Bool {
        if case .io(_, _, _, let code, _) = self { return ["ENOSPC", "EDQUOT"].contains(IOError.name(ofErrno: code)?.symbol) }
        return false
    }

    /// For an `io` error, what to do about it, when its `errno` says: a read-only file system
    /// is read with `Configuration.isReadOnly`, a store path must name a folder, a full device
    /// needs space freed. Nil for other errors.
    public var remedy: String? {
        guard case .io(_, let path, _, let code, _) = self, let symbol = IOError.name(ofErrno: code)?.symbol else { return nil }
        switch symbol {
        case "EROFS":
            return "the file system is read-only: open the store with Store.Configuration.isReadOnly = true to read it"
        case "EACCES", "EPERM":
            return "this process may not use \(path): give it read and write access to the store's folder and files "
                + "(a process that may only read them opens the store with Store.Configuration.isReadOnly = true)"
        case "ENOTDIR":
            return "a part of \(path) is a file, not a folder: a store's path must name a folder, or a place where one can be created"
        case "EISDIR":
            return "\(path) is a folder where the store keeps a file: remove it, or choose another path for the store"
        case "ENOSPC", "EDQUOT":
            return "the device (or the user's quota) is full: the store gave back its space reserve; reopen it, delete records and "
                + "call compact() to free space (or free space on the device)"
        case "EIO":
            return "the device failed to read or write: copy the store's folder to other storage and run verify() on the copy"
        case "EMFILE", "ENFILE":
            return "too many files are open: close stores and files the app no longer uses"
        case "ENAMETOOLONG", "ELOOP":
            return "the path is too long or loops through symbolic links: choose a shorter, direct path for the store"
        case "ENOLCK", "EOPNOTSUPP", "ENOSYS":
            return "the file system does not support the locks a store needs: keep the store on a local file system"
        case "ENOENT":
            return "a file of the store is missing: something other than Strata removed it"
        default:
            return nil
        }
    }

    /// A sentence for a person: what failed, where, and why.
    public var description: String {
        switch self {
        case .io(_, _, _, _, let reason): "I/O error: \(reason)" + (remedy.map { "; \($0)" } ?? "")
        case .corruption(let file, let offset, let reason): "corruption in \(file) at offset \(offset): \(reason)"
        case .poisoned(let cause):
            "the store refuses writes after an earlier I/O failure (\(cause)); reopen it to recover the last durable state"
        case .locked(let path): "the store at \(path) is open for writing by another process or instance"
        case .unsupportedFormatVersion(let file, let found, let supported):
            "\(file) has format version \(found); this version of Strata reads versions up to \(supported)"
        case .pageTooLarge(let bytes, let maximum): "a page of \(bytes) bytes exceeds the maximum of \(maximum)"
        case .invalidPageID(let id): "page id \(id) was never allocated"
        case .closed: "the store is closed"
        case .duplicateRecordID(let id): "a record with id \(id) already exists"
        case .schemaMismatch(let stored, let current, let differences):
            "the store's schema (version \(stored)) differs from the app's (version \(current)) in ways that old records cannot be read "
                + "through: " + differences.joined(separator: "; ")
        case .invalidSchema(let reason): "invalid schema: \(reason)"
        case .unknownEntity(let name): "the store's schema has no entity \(name)"
        case .recordCoding(let reason): reason
        case .recordNotFound(let id): "no record \(id)"
        case .deleteDenied(let record, let relationship, let count):
            "\(record) cannot be deleted: its relationship \(relationship) (delete rule deny) still refers to \(count) record\(count == 1 ? "" : "s")"
        case .danglingReference(let record, let relationship, let destination):
            "\(record).\(relationship) refers to \(destination), which does not exist"
        case .requiredRelationship(let record, let relationship):
            "\(record).\(relationship) is required but would refer to no record"
        case .abstractEntity(let name): "\(name) is abstract: insert records of its sub-entities instead"
        case .uniqueConstraintViolation(let entity, let attribute, let existing) where existing.hasPrefix("records "):
            // A constraint new to the schema the stored records break (binding or a migration's switch).
            "\(entity).\(attribute) cannot become unique: \(existing) of \(entity) hold the same value (nothing was changed); remove or "
                + "merge the duplicates in the willMigrate of a custom stage to this version (fetch them with the Context, then "
                + "delete or update all but one), or give up the constraint"
        case .uniqueConstraintViolation(let entity, let attribute, let existing):
            "\(entity).\(attribute) is unique, and \(existing) already holds the value"
        case .storeIsNewer(let stored, let current):
            "the store was written with schema version \(stored), newer than this app's \(current); it was left unchanged"
        case .unknownModelVersion(let stored, let checksum):
            "the store's schema (version \(stored), checksum \(checksum.prefix(16))…) is none of the migration plan's schemas; "
                + "add the schema it was written with to the plan"
        case .migrationFailed(let report): "\(report)"
        case .migrationRequired(let stored, let required):
            "the store (schema version \(stored.map { "\($0)" } ?? "none")) must be migrated to \(required) by the app that owns its "
                + "migrations; this instance (not the owner, or read-only) changed nothing"
        case .readOnly: "the store was opened read-only"
        case .destinationExists(let path): "\(path) already exists: a backup is written only to a new path, nothing was written there"
        case .storeNotFound(let path): "there is no store at \(path)"
        case .historyTruncated(let requested, let oldest):
            "the history after \(requested) is no longer complete: the journal holds every transaction only after \(oldest)"
        case .invalidHistoryConsumer(let name, let reason): "history consumer \"\(name)\": \(reason)"
        case .schemaChanged(let stored):
            "another process changed the store's schema\(stored.map { " (now version \($0))" } ?? "") after this read-only store opened; "
                + "close it and open the store again"
        }
    }

    init(_ error: SchemaBindingError) {
        switch error {
        case .corruptCatalog(let reason): self = .corruption(file: "schema catalog", offset: 0, reason: reason)
        case .registration(let reason): self = .invalidSchema(reason: reason)
        case .unknownEntity(let name): self = .unknownEntity(name)
        case .recordCoding(let reason): self = .recordCoding(reason: reason)
        case .schemaMismatch(let stored, let current, let differences):
            self = .schemaMismatch(stored: stored, current: current, differences: SchemaDifference.explained(differences))
        case .uniqueConstraintViolation(let entity, let attribute, let recordID, let existingID):
            self = .uniqueConstraintViolation(entity: entity, attribute: attribute, existing: "records \(existingID) and \(recordID)")
        }
    }

    init(_ error: RecordTreeError) {
        switch error {
        case .duplicateID(let id): self = .duplicateRecordID(id)
        case .corruptNode(let pageID, let reason): self = .corruption(file: "page \(pageID)", offset: 0, reason: reason)
        case .missingPage(let pageID): self = .corruption(file: "page \(pageID)", offset: 0, reason: "a record tree page is missing")
        case .invalidIndexEntry: self = .recordCoding(reason: error.description)
        case .uniqueConstraintViolation(let entityID, let attributeID, _, let existingID):
            self = .uniqueConstraintViolation(entity: "#\(entityID)", attribute: "#\(attributeID)", existing: "record \(existingID)")
        case .noIndex: self = .invalidSchema(reason: error.description)
        case .invalidRecord(let entityID, let recordID, let reason):
            self = .corruption(file: "record \(recordID) of entity \(entityID)", offset: 0, reason: reason)
        }
    }

    init(_ error: PageLogError) {
        switch error {
        case .io(let io): self = .io(operation: io.operation, path: io.path, offset: io.offset, errno: io.errnoCode, reason: io.description)
        case .corruption(let file, let offset, let reason): self = .corruption(file: file, offset: offset, reason: reason)
        case .poisoned(let cause): self = .poisoned(cause: cause)
        case .locked(let path): self = .locked(path: path)
        case .unsupportedFormatVersion(let file, let found, let supported):
            self = .unsupportedFormatVersion(file: file, found: Int(found), supported: Int(supported))
        case .pageTooLarge(let bytes, let maximum): self = .pageTooLarge(bytes: bytes, maximum: maximum)
        case .invalidPageID(let id): self = .invalidPageID(id)
        case .closed: self = .closed
        case .readOnly: self = .readOnly
        case .destinationExists(let path): self = .destinationExists(path: path)
        }
    }
}

/// Runs `body`, turning the lower layers' errors into `StrataError`.
package func translatingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as PageLogError {
        throw StrataError(error)
    } catch let error as RecordTreeError {
        throw StrataError(error)
    } catch let error as SchemaBindingError {
        throw StrataError(error)
    }
}
