import StrataFormat
import StrataSchema

/// One change a journal entry records (Docs/FileFormat.md, "History journal").
package enum HistoryOperation: Equatable, Sendable {
    /// Records `firstID ..< firstID + count` of the entity were inserted.
    case insert(entityID: UInt32, firstID: UInt64, count: UInt64)
    /// A record changed: `changed` lists the attribute ids whose value differs (ascending);
    /// `old` and `new` are records (record encoding) holding those attributes' old and new
    /// values (an absent attribute had, or has, no value).
    case update(entityID: UInt32, id: UInt64, changed: [UInt32], old: [UInt8], new: [UInt8])
    /// A record was deleted; `tombstone` is a record holding the values of its attributes
    /// marked `preserveValueOnDeletion`.
    case delete(entityID: UInt32, id: UInt64, tombstone: [UInt8])
    /// A migration changed the entity's records: how many it inserted, rewrote and deleted.
    case migration(entityID: UInt32, inserted: UInt64, updated: UInt64, deleted: UInt64)
    /// A migration moved the store to this schema version.
    case schema(Schema.Version)

    /// The entity the change is about (nil: a schema change).
    package var entityID: UInt32? {
        switch self {
        case .insert(let entityID, _, _), .update(let entityID, _, _, _, _), .delete(let entityID, _, _),
             .migration(let entityID, _, _, _): entityID
        case .schema: nil
        }
    }
}

/// One journaled transaction, as read back.
package struct HistoryEntry: Equatable, Sendable {
    package var token: UInt64
    /// Microseconds since 1970.
    package var timestamp: Int64
    package var author: String?
    package var operations: [HistoryOperation]

    package init(token: UInt64, timestamp: Int64, author: String?, operations: [HistoryOperation]) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.operations = operations
    }
}

/// The byte form of a journal entry's parts.
///
/// ```
/// part      := version:u8 (1) flags:u8 (0) header? operation*     ; header in part 0 only
/// header    := timestamp:i64 author:varint (0: none, else length + 1) byte{length}
/// operation := 1 entity:varint firstID:varint count:varint                     ; insert run
///            | 2 entity:varint id:varint changedCount:varint attribute:varint{changedCount}
///                old:varint-length-prefixed-record new:varint-length-prefixed-record
///            | 3 entity:varint id:varint tombstone:varint-length-prefixed-record
///            | 4 entity:varint inserted:varint updated:varint deleted:varint     ; migration
///            | 5 major:varint minor:varint patch:varint                           ; schema version
/// ```
package enum HistoryCodec {
    static let version: UInt8 = 1
    /// A part is closed once it holds this many bytes, so parts stay in their leaf (below the
    /// tree's inline record limit) unless one operation alone is larger.
    static let partTarget = 1_900

    /// Decodes one part into `entry` (the header too when `isFirst`), or throws. With
    /// `entities`, the operations about other entities are checked as thoroughly but left out
    /// (schema operations, about no entity, are always kept).
    package static func decodePart(_ raw: UnsafeRawBufferPointer, isFirst: Bool, into entry: inout HistoryEntry,
                                   entities: Set<UInt32>? = nil) throws(FormatError) {
        try decodingFormat {
            var reader = ByteReader(raw)
            let version = try reader.read(UInt8.self, "history part version")
            guard version == Self.version else {
                throw FormatError("history part version \(version) is not supported", at: 0, unsupportedVersion: UInt16(version))
            }
            guard try reader.read(UInt8.self, "history part flags") == 0 else { throw FormatError("history part flags are not zero", at: 1) }
            if isFirst {
                entry.timestamp = try reader.read(Int64.self, "timestamp")
                let length = try reader.readVarint(atMost: reader.remaining + 1, "author length")
                if length > 0 {
                    let bytes = try reader.readRawBytes(length - 1, "author")
                    guard let author = Self.string(validating: bytes) else { throw FormatError("author is not UTF-8", at: reader.position) }
                    entry.author = author
                }
            }
            while reader.remaining > 0 {
                let at = reader.position
                let kind = try reader.read(UInt8.self, "operation kind")
                if kind == 5 {
                    func part(_ what: String) throws -> UInt32 {
                        let value = try reader.readVarint(what)
                        guard value <= UInt64(UInt32.max) else { throw FormatError("\(what) \(value) out of range", at: at) }
                        return UInt32(value)
                    }
                    entry.operations.append(.schema(Schema.Version(try part("major"), try part("minor"), try part("patch"))))
                    continue
                }
                let entity = try entityID(&reader)
                // Operations about entities not asked for are read (and checked) without
                // allocating anything.
                let keeps = entities?.contains(entity) ?? true
                switch kind {
                case 1:
                    let first = try reader.readVarint("first id")
                    let count = try reader.readVarint("count")
                    guard count >= 1, first >= 1, first <= UInt64.max - count else { throw FormatError("insert run of \(count) from \(first)", at: at) }
                    if keeps { entry.operations.append(.insert(entityID: entity, firstID: first, count: count)) }
                case 2:
                    let id = try reader.readVarint("record id")
                    let count = try reader.readVarint(atMost: reader.remaining, "changed count")
                    var changed: [UInt32] = []
                    if keeps { changed.reserveCapacity(count) }
                    var previous: UInt64?
                    for _ in 0..<count {
                        let attribute = try reader.readVarint("attribute id")
                        guard attribute <= UInt64(UInt32.max), previous.map({ $0 < attribute }) ?? true else {
                            throw FormatError("changed attribute ids do not ascend", at: reader.position)
                        }
                        previous = attribute
                        if keeps { changed.append(UInt32(attribute)) }
                    }
                    guard keeps else {
                        try skipLengthPrefixed(&reader, "old values")
                        try skipLengthPrefixed(&reader, "new values")
                        continue
                    }
                    let old = try reader.readLengthPrefixed("old values")
                    let new = try reader.readLengthPrefixed("new values")
                    entry.operations.append(.update(entityID: entity, id: id, changed: changed, old: old, new: new))
                case 3:
                    let id = try reader.readVarint("record id")
                    guard keeps else { try skipLengthPrefixed(&reader, "tombstone"); continue }
                    entry.operations.append(.delete(entityID: entity, id: id, tombstone: try reader.readLengthPrefixed("tombstone")))
                case 4:
                    let inserted = try reader.readVarint("inserted"), updated = try reader.readVarint("updated")
                    let deleted = try reader.readVarint("deleted")
                    if keeps { entry.operations.append(.migration(entityID: entity, inserted: inserted, updated: updated, deleted: deleted)) }
                default:
                    throw FormatError("unknown history operation \(kind)", at: at)
                }
            }
        }
    }

    /// The UTF-8 text in `bytes`, or nil when they are not valid UTF-8. ASCII (most authors)
    /// takes a shortcut: `String(validating:as:)` runs the standard library's unspecialized
    /// generic validation, with type metadata lookups, on every call.
    static func string(validating bytes: UnsafeRawBufferPointer) -> String? {
        if !bytes.contains(where: { $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Skips what `readLengthPrefixed` would read, with the same checks.
    private static func skipLengthPrefixed(_ reader: inout ByteReader, _ what: String) throws {
        let count = try reader.readVarint(atMost: reader.remaining, "length of \(what)")
        try reader.skip(count, what)
    }

    private static func entityID(_ reader: inout ByteReader) throws -> UInt32 {
        let at = reader.position
        let value = try reader.readVarint("entity id")
        guard value <= UInt64(UInt32.max) else { throw FormatError("entity id \(value) out of range", at: at) }
        return UInt32(value)
    }

    /// Appends an update operation (2): `old` and `new` are records of the changed attributes' values.
    @inline(__always)
    static func appendUpdate(entityID: UInt32, id: UInt64, changed: UnsafeBufferPointer<UInt32>,
                             old: UnsafeRawBufferPointer, new: UnsafeRawBufferPointer, to sink: inout HistoryPartBuffer) {
        appendUpdateHead(entityID: entityID, id: id, to: &sink)
        sink.appendVarint(UInt64(changed.count))
        for attribute in changed { sink.appendVarint(UInt64(attribute)) }
        sink.appendVarint(UInt64(old.count))
        sink.append(raw: old)
        sink.appendVarint(UInt64(new.count))
        sink.append(raw: new)
    }

    /// Appends the head of an update operation: its kind (2), entity and record id. The body
    /// follows (`appendUpdate`, or `RecordChanges.writeUpdateBody(to:)` in place).
    @inline(__always)
    static func appendUpdateHead(entityID: UInt32, id: UInt64, to sink: inout HistoryPartBuffer) {
        sink.append(UInt8(2))
        sink.appendVarint(UInt64(entityID))
        sink.appendVarint(id)
    }

    /// Appends a delete operation (3).
    @inline(__always)
    static func appendDelete(entityID: UInt32, id: UInt64, tombstone: UnsafeRawBufferPointer, to sink: inout HistoryPartBuffer) {
        sink.append(UInt8(3))
        sink.appendVarint(UInt64(entityID))
        sink.appendVarint(id)
        sink.appendVarint(UInt64(tombstone.count))
        sink.append(raw: tombstone)
    }

    static func append(_ operation: HistoryOperation, to writer: inout HistoryPartBuffer) {
        switch operation {
        case .insert(let entity, let first, let count):
            writer.append(UInt8(1)); writer.appendVarint(UInt64(entity)); writer.appendVarint(first); writer.appendVarint(count)
        case .update(let entity, let id, let changed, let old, let new):
            changed.withUnsafeBufferPointer { changed in
                old.withUnsafeBytes { old in
                    new.withUnsafeBytes { new in appendUpdate(entityID: entity, id: id, changed: changed, old: old, new: new, to: &writer) }
                }
            }
        case .delete(let entity, let id, let tombstone):
            tombstone.withUnsafeBytes { appendDelete(entityID: entity, id: id, tombstone: $0, to: &writer) }
        case .migration(let entity, let inserted, let updated, let deleted):
            writer.append(UInt8(4)); writer.appendVarint(UInt64(entity))
            writer.appendVarint(inserted); writer.appendVarint(updated); writer.appendVarint(deleted)
        case .schema(let version):
            writer.append(UInt8(5))
            writer.appendVarint(UInt64(version.major)); writer.appendVarint(UInt64(version.minor)); writer.appendVarint(UInt64(version.patch))
        }
    }
}

/// A journal part being written (`HistoryCodec`'s byte form), in memory kept from part to
/// part: an append checks the room left and stores. (The record layer's `RecordScratch` does
/// the same, but a `package` declaration of another module is never inlined here: its
/// appends would be calls, one per byte.) Freed by its owner (`deallocate()`); copies share
/// the memory, so one owner only.
struct HistoryPartBuffer {
    private var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = .allocate(byteCount: self.capacity, alignment: 8)
    }

    func deallocate() { base.deallocate() }

    /// The bytes written, valid until the next change.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Forgets the bytes written (the memory stays).
    mutating func removeAll() { count = 0 }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        if count == capacity { grow(to: count + 1) }
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    /// Eight bytes, little-endian.
    mutating func append(_ value: Int64) {
        withUnsafeBytes(of: value.littleEndian) { append(raw: $0) }
    }

    @inline(__always)
    mutating func append(raw: UnsafeRawBufferPointer) {
        guard let source = raw.baseAddress, raw.count > 0 else { return }
        if count + raw.count > capacity { grow(to: count + raw.count) }
        (base + count).copyMemory(from: source, byteCount: raw.count)
        count += raw.count
    }

    /// An unsigned LEB128 varint, as `ByteWriter.appendVarint` writes it.
    @inline(__always)
    mutating func appendVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        append(UInt8(rest))
    }

    /// Makes room for `count` more bytes and lets `body` write exactly that many at the
    /// pointer it is given.
    @inline(__always)
    mutating func append(count: Int, _ body: (UnsafeMutableRawPointer) -> Void) {
        if self.count + count > capacity { grow(to: self.count + count) }
        body(base + self.count)
        self.count += count
    }

    private mutating func grow(to needed: Int) {
        var larger = capacity * 2
        while larger < needed { larger *= 2 }
        let memory = UnsafeMutableRawPointer.allocate(byteCount: larger, alignment: 8)
        memory.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = memory
        capacity = larger
    }
}

/// Collects one write transaction's changes for the journal (Architecture.md, invariant 31):
/// record trees report every insert, update and delete here; parts of the entry are written
/// to the journal's tree as they fill, so a transaction of any size holds one part in memory.
/// Not thread-safe: the transaction's thread only.
package final class HistoryRecorder {
    package let token: UInt64
    /// Microseconds since 1970.
    package let timestamp: Int64
    /// Who made the change (`Context.author`); nil: nobody named.
    package var author: String?
    /// Per entity, the attribute ids whose values a delete keeps (`preserveValueOnDeletion`).
    package var tombstoneAttributes: [UInt32: Set<UInt32>] = [:] { didSet { sortedTombstoneAttributes.removeAll(); lastKept = nil } }
    /// Record per entity how many records changed instead of each change (migrations).
    @exclusivity(unchecked) package var summarizes = false
    /// While summarizing: per entity, the first id of the records an earlier transaction of
    /// the same summary (a migration closure's flush, `takeSummary()`) may have inserted —
    /// records with this id or a larger one were inserted by it (nil: none was). Such a
    /// record's update is no change of the summary (it counts as inserted already) and its
    /// delete takes back that insert (`retracted`) instead of counting as deleted.
    package var firstInsertedEarlier: ((_ entityID: UInt32) -> UInt64)?
    /// Per entity id, the properties (attributes and relationships) of the schema version the
    /// writer is bound to, each with the value a read gives a record that lacks it (its catalog
    /// default; none for none), as the comparison reads them (`RecordDefaults`, made once by a
    /// store when it binds its schema). Updates and tombstones are journaled as the app reads
    /// the record: a property absent from the stored bytes counts as that value — a record
    /// written before an attribute was added with a default reads as the default, so writing it
    /// back unchanged changes nothing — and a property the version does not have (a removed
    /// attribute still in old records' bytes) is no change. Entities not listed are compared
    /// field by field as stored.
    package var visibleDefaults: [UInt32: RecordDefaults] = [:] { didSet { lastVisible = nil } }

    let tree: RecordTreeWriter
    /// The part being filled; room for a whole part, kept from part to part. (Unchecked, as
    /// the other fields every change touches: the transaction's thread only.)
    @exclusivity(unchecked) private var buffer = HistoryPartBuffer(capacity: HistoryCodec.partTarget + 256)
    /// Compares records and builds the value records of updates and tombstones from their
    /// bytes, reusing its memory.
    private let changes = RecordChanges()
    /// The entity asked for last and its `visibleDefaults` (a transaction changes records of
    /// one entity in a row).
    @exclusivity(unchecked) private var lastVisible: (entityID: UInt32, defaults: RecordDefaults?)?
    /// `tombstoneAttributes` per entity, ascending, made at first use.
    private var sortedTombstoneAttributes: [UInt32: [UInt32]] = [:]
    /// The entity asked for last and its `sortedTombstoneAttributes`.
    @exclusivity(unchecked) private var lastKept: (entityID: UInt32, attributes: [UInt32])?
    /// Parts written so far (the next part's number).
    private(set) var partsWritten: UInt64 = 0
    // Unchecked: the transaction's thread only, and changed on every insert journaled.
    @exclusivity(unchecked) private var run: (entity: UInt32, first: UInt64, count: UInt64)?
    private var summary: [UInt32: (inserted: UInt64, updated: UInt64, deleted: UInt64)] = [:]
    /// While summarizing: the summarized updates of the entity updated last, not yet added to
    /// `summary` (a flush updates thousands of records of one entity in a row), with that
    /// entity's `firstInsertedEarlier`.
    @exclusivity(unchecked) private var updates: (entityID: UInt32, firstInserted: UInt64, count: UInt64)?
    /// Per entity, deletes of records `insertedEarlier` names (while summarizing).
    private var retracted: [UInt32: UInt64] = [:]
    @exclusivity(unchecked) private var hasOperations = false
    /// Bytes of the parts written so far.
    private(set) var bytesWritten: UInt64 = 0

    init(token: UInt64, timestamp: Int64, tree: RecordTreeWriter) {
        self.token = token
        self.timestamp = timestamp
        self.tree = tree
    }

    deinit { buffer.deallocate() }

    /// Whether the transaction changed no record (it gets no entry).
    package var isEmpty: Bool { !hasOperations && run == nil && summary.isEmpty && (updates?.count ?? 0) == 0 }

    /// Adds `updates` to `summary`.
    private func addUpdates() {
        if let updates, updates.count > 0 { summary[updates.entityID, default: (0, 0, 0)].updated += updates.count }
        updates = nil
    }

    /// Whether record `id` of an entity was inserted by an earlier transaction of the summary.
    private func insertedEarlier(_ entityID: UInt32, _ id: UInt64) -> Bool {
        id >= firstInsertedEarlier?(entityID) ?? .max
    }

    /// Takes the per-entity counts summarized so far out of this transaction's entry (which
    /// then journals none of them), with the deletes that took back earlier inserts
    /// (`insertedEarlier`): a migration closure carries them from flush to flush and journals
    /// the totals with its last commit (`recordMigration`).
    package func takeSummary() -> (counts: [UInt32: (inserted: UInt64, updated: UInt64, deleted: UInt64)], retracted: [UInt32: UInt64]) {
        addUpdates()
        defer { summary.removeAll(); retracted.removeAll() }
        return (summary, retracted)
    }

    func recordInsert(entityID: UInt32, id: UInt64) throws {
        if summarizes { summary[entityID, default: (0, 0, 0)].inserted += 1; return }
        if let current = run, current.entity == entityID, current.first + current.count == id {
            run?.count += 1
            return
        }
        try flushRun()
        run = (entityID, id, 1)
    }

    /// While summarizing: record `id` was updated to different bytes.
    func recordSummarizedUpdate(entityID: UInt32, id: UInt64) {
        if updates?.entityID != entityID {
            addUpdates()
            updates = (entityID, firstInsertedEarlier?(entityID) ?? .max, 0)
        }
        if let first = updates?.firstInserted, id < first { updates?.count += 1 }
    }

    /// Record `id` is being updated from `old` to `new` (its whole stored and written bytes):
    /// journals the properties whose value as the app reads it changes (`visibleDefaults`),
    /// with their old and new values — nothing when none does.
    func recordUpdate(entityID: UInt32, id: UInt64, old: UnsafeRawBufferPointer, new: UnsafeRawBufferPointer) throws {
        guard old.count != new.count || !RecordCodec.bytesEqual(old, new) else { return }
        if summarizes { return recordSummarizedUpdate(entityID: entityID, id: id) }
        let changed: Bool
        do {
            changed = try changes.compare(stored: old, written: new, defaults: visible(entityID))
        } catch {
            throw RecordTreeError.invalidRecord(entityID: entityID, recordID: id, reason: error.reason)
        }
        guard changed else { return }
        try flushRun()
        if buffer.count == 0 { startPart() }
        // The operation (`HistoryCodec.appendUpdate`'s form) written in place: its body from
        // the fields `changes` points at, with no record of the values built first.
        HistoryCodec.appendUpdateHead(entityID: entityID, id: id, to: &buffer)
        let body = changes.updateBodySize
        buffer.append(count: body) { changes.writeUpdateBody(to: $0) }
        try operationWritten()
    }

    /// Record `id`, stored as `old`, is being deleted: journals the delete with its tombstone
    /// (the values of the attributes `tombstoneAttributes` names, as a read gives them).
    func recordDelete(entityID: UInt32, id: UInt64, old: UnsafeRawBufferPointer) throws {
        if summarizes {
            if insertedEarlier(entityID, id) { retracted[entityID, default: 0] += 1 } else { summary[entityID, default: (0, 0, 0)].deleted += 1 }
            return
        }
        let kept = kept(entityID)
        var tombstone = UnsafeRawBufferPointer(start: nil, count: 0)
        if !kept.isEmpty {
            do {
                tombstone = try changes.tombstone(stored: old, kept: kept, defaults: visible(entityID))
            } catch {
                throw RecordTreeError.invalidRecord(entityID: entityID, recordID: id, reason: error.reason)
            }
        }
        try flushRun()
        if buffer.count == 0 { startPart() }
        HistoryCodec.appendDelete(entityID: entityID, id: id, tombstone: tombstone, to: &buffer)
        try operationWritten()
    }

    /// `visibleDefaults[entityID]`.
    private func visible(_ entityID: UInt32) -> RecordDefaults? {
        if let lastVisible, lastVisible.entityID == entityID { return lastVisible.defaults }
        let defaults = visibleDefaults[entityID]
        lastVisible = (entityID, defaults)
        return defaults
    }

    /// `tombstoneAttributes[entityID]`, ascending.
    private func kept(_ entityID: UInt32) -> [UInt32] {
        if let lastKept, lastKept.entityID == entityID { return lastKept.attributes }
        let sorted = sortedTombstoneAttributes[entityID] ?? tombstoneAttributes[entityID]?.sorted() ?? []
        sortedTombstoneAttributes[entityID] = sorted
        lastKept = (entityID, sorted)
        return sorted
    }

    /// Records that a migration changed these records of an entity.
    package func recordMigration(entityID: UInt32, inserted: UInt64 = 0, updated: UInt64 = 0, deleted: UInt64 = 0) {
        summary[entityID, default: (0, 0, 0)].inserted += inserted
        summary[entityID, default: (0, 0, 0)].updated += updated
        summary[entityID, default: (0, 0, 0)].deleted += deleted
    }

    /// Records that the transaction moved the store to schema `version` (a migration).
    package func recordSchemaChange(to version: Schema.Version) throws {
        try append(.schema(version))
    }

    private func flushRun() throws {
        guard let current = run else { return }
        run = nil
        try write(.insert(entityID: current.entity, firstID: current.first, count: current.count))
    }

    /// Adds `operation` to the entry after the inserts still pending in a run, which were made
    /// before it: the entry keeps the transaction's order (an insert, then an update of the
    /// same record, is never journaled the other way round).
    private func append(_ operation: HistoryOperation) throws {
        try flushRun()
        try write(operation)
    }

    private func write(_ operation: HistoryOperation) throws {
        if buffer.count == 0 { startPart() }
        HistoryCodec.append(operation, to: &buffer)
        hasOperations = true
        if buffer.count >= HistoryCodec.partTarget { try writePart() }
    }

    /// After an operation was appended to the part: writes the part once it is full.
    private func operationWritten() throws {
        hasOperations = true
        if buffer.count >= HistoryCodec.partTarget { try writePart() }
    }

    private func startPart() {
        buffer.append(HistoryCodec.version)
        buffer.append(UInt8(0))
        if partsWritten == 0 {
            buffer.append(timestamp)
            if let author {
                let utf8 = Array(author.utf8)
                buffer.appendVarint(UInt64(utf8.count) + 1)
                utf8.withUnsafeBytes { buffer.append(raw: $0) }
            } else {
                buffer.appendVarint(0)
            }
        }
    }

    private func writePart() throws {
        guard partsWritten < (1 << HistoryRoot.partBits) - 1 else {
            throw RecordTreeError.invalidRecord(entityID: 0, recordID: token, reason: "a transaction's history entry has more than 2^24 parts")
        }
        try tree.insert(HistoryRoot.key(token: token, part: partsWritten), raw: buffer.bytes)
        bytesWritten += UInt64(buffer.count)
        partsWritten += 1
        buffer.removeAll()
    }

    /// Writes what is left of the entry (nothing when the transaction changed no record).
    func finish() throws {
        try flushRun()
        addUpdates()
        for (entity, counts) in summary.sorted(by: { $0.key < $1.key }) {
            try append(.migration(entityID: entity, inserted: counts.inserted, updated: counts.updated, deleted: counts.deleted))
        }
        summary.removeAll()
        if buffer.count > 0 { try writePart() }
    }
}
