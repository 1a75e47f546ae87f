import StrataFormat

/// The migration in progress, kept in a version 3 store root (Docs/FileFormat.md, "Store
/// root"; Architecture.md invariants 26 and 27): where the log ended before the migration
/// began (the rollback point that undoes all of it), which step of the plan runs and how far
/// it got, the catalog the stage migrates to (written, not yet the store's), and the shadow
/// record trees its transforms fill.
///
/// ```
/// migration := "MIGR" phase:u8 flags:u8 reserved:u16 rollbackSegment:u64 rollbackOffset:u64
///              fromCatalogVersion:u32 stage:u32 targetChecksum:byte{32} pendingCatalogPage:u64
///              shadowCount:u32 shadow{shadowCount}               ; ascending entity id
///              retiredCount:u32 retired{retiredCount}
/// ; flags (store root version 6 only, 0 before): bit 0 = a closure of the running stage flushed changes
/// shadow    := entityID:u32 flags:u32 rootPage:u64 count:u64 nextRowID:u64 cursor:u64   ; 40 bytes
/// retired   := rootPage:u64 height:u32 reserved:u32 freedBelow:u64                     ; 24 bytes
/// ```
package struct MigrationMarker: Equatable, Sendable {
    static let magic: [UInt8] = Array("MIGR".utf8)
    /// Bytes before the shadows.
    static let fixedSize = 76
    static let shadowSize = 40
    static let retiredSize = 24
    static let doneFlag: UInt32 = 1
    /// The marker's flag (store root version 6): a closure of the running stage flushed changes.
    static let closureFlushedFlag: UInt8 = 1

    /// Where a stage is.
    package enum Phase: UInt8, Sendable {
        /// The stage has not committed anything yet (its `willMigrate` runs next).
        case started = 0
        /// `willMigrate`'s changes and the pending catalog are committed; transforms fill the
        /// shadow trees batch by batch.
        case streaming = 1
        /// The shadow trees and the pending catalog became the store's; `didMigrate` runs next.
        case switched = 2
    }

    /// A record tree a stage's transforms fill while the entity's own tree keeps the old
    /// version's records, and how far the transform of that entity got.
    package struct Shadow: Equatable, Sendable {
        package var tree: RecordTreeRoot
        /// The next id to hand out to a record inserted into the entity by a transform (above
        /// every id of the old tree).
        package var nextRowID: UInt64
        /// The last old record id transformed (0: none yet).
        package var cursor: UInt64
        /// Whether every old record was transformed.
        package var isDone: Bool

        package init(tree: RecordTreeRoot = .empty, nextRowID: UInt64, cursor: UInt64 = 0, isDone: Bool = false) {
            self.tree = tree
            self.nextRowID = nextRowID
            self.cursor = cursor
            self.isDone = isDone
        }
    }

    package var phase: Phase
    package var rollbackSegment: UInt64
    package var rollbackOffset: UInt64
    /// The catalog version the store had before the migration.
    package var fromCatalogVersion: UInt32
    /// The step of the plan that runs (its position among the plan's steps).
    package var stage: UInt32
    /// The schema checksum of the version the whole migration goes to.
    package var targetChecksum: [UInt8]
    /// The page holding the catalog the running stage migrates to (0: none).
    package var pendingCatalogPage: UInt64
    /// Shadow trees by entity id.
    package var shadows: [UInt32: Shadow]
    /// Trees the switch replaced, whose pages are being freed (RetiredTree.swift).
    package var retired: [RetiredTree] = []
    /// Whether a `willMigrate` or `didMigrate` of the running stage wrote some of its changes
    /// into the store before the commit that ends it (a flush, `Context`): the store is then
    /// part way through a closure, which cannot be resumed — the migration is undone and run
    /// again from its rollback point. Stored as flag bit 0 in a version 6 store root only.
    package var closureFlushed = false

    package init(phase: Phase = .started, rollbackSegment: UInt64, rollbackOffset: UInt64, fromCatalogVersion: UInt32, stage: UInt32,
                 targetChecksum: [UInt8], pendingCatalogPage: UInt64 = 0, shadows: [UInt32: Shadow] = [:]) {
        self.phase = phase
        self.rollbackSegment = rollbackSegment
        self.rollbackOffset = rollbackOffset
        self.fromCatalogVersion = fromCatalogVersion
        self.stage = stage
        self.targetChecksum = targetChecksum
        self.pendingCatalogPage = pendingCatalogPage
        self.shadows = shadows
    }

    func append(to writer: inout ByteWriter) {
        writer.append(bytes: Self.magic)
        writer.append(phase.rawValue)
        writer.append(closureFlushed ? Self.closureFlushedFlag : 0)
        writer.append(UInt16(0))
        writer.append(rollbackSegment)
        writer.append(rollbackOffset)
        writer.append(fromCatalogVersion)
        writer.append(stage)
        writer.append(bytes: targetChecksum)
        writer.append(pendingCatalogPage)
        writer.append(UInt32(shadows.count))
        for (id, shadow) in shadows.sorted(by: { $0.key < $1.key }) {
            writer.append(id)
            writer.append(shadow.isDone ? Self.doneFlag : 0)
            writer.append(shadow.tree.rootPageID)
            writer.append(shadow.tree.count)
            writer.append(shadow.nextRowID)
            writer.append(shadow.cursor)
        }
        writer.append(UInt32(retired.count))
        for tree in retired {
            writer.append(tree.rootPageID)
            writer.append(tree.height)
            writer.append(UInt32(0))
            writer.append(tree.freedBelow)
        }
    }

    /// Reads a marker that must take exactly the rest of `reader`; `allowsFlags` (a version 6
    /// root) lets its byte 5 hold flags, reserved otherwise.
    static func read(from reader: inout ByteReader, allowsFlags: Bool = false) throws -> MigrationMarker {
        let at = reader.position
        guard reader.remaining >= fixedSize, try reader.readBytes(4, "migration magic") == magic else {
            throw FormatError("a version 3 store root without a valid migration marker", at: at)
        }
        guard let phase = Phase(rawValue: try reader.read(UInt8.self, "migration phase")) else {
            throw FormatError("unknown migration phase", at: at + 4)
        }
        let flags = try reader.read(UInt8.self, "migration flags")
        guard flags & ~(allowsFlags ? closureFlushedFlag : 0) == 0 else {
            throw FormatError(allowsFlags ? "unknown migration marker flags \(flags)" : "reserved migration marker field is not zero", at: at + 5)
        }
        guard try reader.read(UInt16.self, "reserved") == 0 else {
            throw FormatError("reserved migration marker field is not zero", at: at + 6)
        }
        var marker = MigrationMarker(
            phase: phase, rollbackSegment: try reader.read(UInt64.self, "rollback segment"),
            rollbackOffset: try reader.read(UInt64.self, "rollback offset"),
            fromCatalogVersion: try reader.read(UInt32.self, "from catalog version"), stage: try reader.read(UInt32.self, "stage"),
            targetChecksum: try reader.readBytes(32, "target checksum"), pendingCatalogPage: try reader.read(UInt64.self, "pending catalog page"))
        marker.closureFlushed = flags & closureFlushedFlag != 0
        let count = Int(try reader.read(UInt32.self, "shadow count"))
        guard count <= StoreRoot.maximumEntities, reader.remaining >= count * shadowSize + 4 else {
            throw FormatError("migration marker of \(count) shadow trees has \(reader.remaining) bytes for them", at: at + 72)
        }
        var previous: UInt32?
        for _ in 0..<count {
            let position = reader.position
            let id = try reader.read(UInt32.self, "shadow entity id")
            guard previous.map({ id > $0 }) ?? true else { throw FormatError("shadow entity ids do not ascend", at: position) }
            previous = id
            let flags = try reader.read(UInt32.self, "shadow flags")
            guard flags & ~doneFlag == 0 else { throw FormatError("unknown shadow flags \(flags)", at: position + 4) }
            let tree = RecordTreeRoot(rootPageID: try reader.read(UInt64.self, "shadow root page"), count: try reader.read(UInt64.self, "shadow count"))
            guard (tree.rootPageID == 0) == (tree.count == 0) else {
                throw FormatError("shadow tree of entity \(id) has root \(tree.rootPageID) and \(tree.count) records", at: position + 8)
            }
            marker.shadows[id] = Shadow(tree: tree, nextRowID: try reader.read(UInt64.self, "shadow next row id"),
                                        cursor: try reader.read(UInt64.self, "shadow cursor"), isDone: flags & doneFlag != 0)
        }
        let retiredAt = reader.position
        let retiredCount = Int(try reader.read(UInt32.self, "retired tree count"))
        guard retiredCount <= StoreRoot.maximumEntities, reader.remaining == retiredCount * retiredSize else {
            throw FormatError("migration marker of \(retiredCount) retired trees has \(reader.remaining) bytes for them", at: retiredAt)
        }
        for _ in 0..<retiredCount {
            let position = reader.position
            let root = try reader.read(UInt64.self, "retired root page")
            let height = try reader.read(UInt32.self, "retired height")
            guard try reader.read(UInt32.self, "reserved") == 0 else { throw FormatError("reserved retired tree field is not zero", at: position + 12) }
            guard root != 0, height <= 64 else { throw FormatError("retired tree with root \(root) and height \(height)", at: position) }
            marker.retired.append(RetiredTree(rootPageID: root, height: height, freedBelow: try reader.read(UInt64.self, "freed below")))
        }
        return marker
    }
}
