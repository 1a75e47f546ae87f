import StrataFormat

/// The record layer's root, kept in fixed page 0 of the page log (Docs/FileFormat.md,
/// "Store root"): where the schema catalog is, where each entity's record tree is and, from
/// version 2, where each index tree is.
///
/// ```
/// store-root := "SROT" version:u16 flags:u16 catalogPage:u64 entityCount:u32 indexCount:u32   ; flags 0 before version 4
///               entity{entityCount}               ; ascending entity id
///               index{indexCount}                 ; ascending (entity id, attribute id); none in version 1
///               [history]                         ; version 4, or versions 5 and 6 with flag bit 1 (2)
///               [migration]                       ; version 3, or versions 4 to 6 with flag bit 0 (1)
/// entity     := entityID:u32 flags:u32 rootPage:u64 count:u64 nextRowID:u64   ; 32 bytes; flags 0 before version 5
/// index      := entityID:u32 attributeID:u32 rootPage:u64 count:u64 flags:u32 defaultLength:u32
///               defaultKey:byte{defaultLength}
/// migration  := see MigrationMarker
/// ```
///
/// Version 1 is written while there is no index (so such stores stay readable by older
/// readers), version 2 otherwise; in version 1 `indexCount` is reserved and must be 0.
/// Version 3 is written only while a migration stage runs (it has the `migration` marker;
/// readers that predate it refuse the store instead of writing into a half-migrated one).
/// Version 4 is written once the store has a history journal (its `reserved` field is then
/// `flags`: 1 = a migration marker follows the history root); readers that predate the
/// journal refuse it instead of committing changes it would not record.
/// Version 5 is written only while an entity's tree may hold leaves stored uncompressed
/// (written by a migration, compressed later in the background: invariant 29): the entity's
/// `reserved` field is then `flags` (1 = leaves stored uncompressed), and the root's flags
/// say which sections follow (1 = a migration marker, 2 = a history root).
/// Version 6 is version 5's layout, written only while the migration marker's flag says a
/// closure of the running stage flushed changes into the store (`MigrationMarker.closureFlushed`):
/// readers that predate it refuse the store instead of resuming that closure on half-changed data.
package struct StoreRoot: Equatable, Sendable {
    /// Fixed page id of the store root.
    package static let pageID: UInt64 = 0
    static let magic: [UInt8] = Array("SROT".utf8)
    static let headerSize = 24
    static let entitySize = 32
    /// More entities than this in a root is corruption.
    package static let maximumEntities = 1 << 20

    /// One entity's record tree and id counter.
    package struct EntityTree: Equatable, Sendable {
        package var tree: RecordTreeRoot
        /// The next record id to hand out (ids are never reused).
        package var nextRowID: UInt64
        /// Whether the tree may hold leaves stored uncompressed: a migration wrote them so
        /// (`RecordTreeOptions.defersShadowCompression`) and the background pass that
        /// compresses them has not finished (invariant 29).
        package var hasUncompressedLeaves = false

        package init(tree: RecordTreeRoot = .empty, nextRowID: UInt64 = 1, hasUncompressedLeaves: Bool = false) {
            self.tree = tree
            self.nextRowID = nextRowID
            self.hasUncompressedLeaves = hasUncompressedLeaves
        }
    }

    /// Which index: an entity and one of its (resolved) attribute ids.
    package struct IndexID: Hashable, Comparable, Sendable {
        package var entityID: UInt32
        package var attributeID: UInt32

        package init(entityID: UInt32, attributeID: UInt32) {
            self.entityID = entityID
            self.attributeID = attributeID
        }

        package static func < (a: IndexID, b: IndexID) -> Bool { (a.entityID, a.attributeID) < (b.entityID, b.attributeID) }
    }

    /// One index: what it was built for and its tree, holding exactly one entry per record of
    /// its entity (Architecture.md, invariant 22).
    package struct Index: Equatable, Sendable {
        /// Whether the attribute is unique (no two records hold one non-null value).
        package var isUnique: Bool
        /// The full `IndexKey` of the attribute's default, the key of records that lack a
        /// value (`[0]`, the null key, when there is no default). A binding whose default
        /// differs rebuilds the index.
        package var defaultKey: [UInt8]
        /// The tree's root page and entry count.
        package var tree: RecordTreeRoot

        package init(isUnique: Bool, defaultKey: [UInt8], tree: RecordTreeRoot = .empty) {
            self.isUnique = isUnique
            self.defaultKey = defaultKey
            self.tree = tree
        }

        /// Whether this index was built for the same definition as `other` (trees aside).
        package func sameDefinition(as other: Index) -> Bool { isUnique == other.isUnique && defaultKey == other.defaultKey }
    }

    static let indexFixedSize = 32
    static let uniqueFlag: UInt32 = 1

    /// The migration in progress, if any (version 3 roots, or version 4 with flag 1).
    package var migration: MigrationMarker?
    /// The history journal, once the store has one (version 4 roots).
    package var history: HistoryRoot?
    static let migrationFlag: UInt16 = 1
    /// Version 5: a history root follows the indexes.
    static let historyFlag: UInt16 = 2
    /// An entity's flag (version 5): its tree may hold leaves stored uncompressed.
    static let uncompressedLeavesFlag: UInt32 = 1

    /// The entities whose trees may hold leaves stored uncompressed, ascending.
    package var entitiesWithUncompressedLeaves: [UInt32] {
        entities.filter(\.value.hasUncompressedLeaves).map(\.key).sorted()
    }

    /// The first page of the stored schema catalog, 0 when none was stored yet.
    package var catalogPageID: UInt64 = 0
    package var entities: [UInt32: EntityTree] = [:]
    package var indexes: [IndexID: Index] = [:]

    /// The indexes of one entity, by attribute id ascending.
    package func indexes(of entityID: UInt32) -> [(attributeID: UInt32, index: Index)] {
        indexes.filter { $0.key.entityID == entityID }.sorted { $0.key < $1.key }.map { ($0.key.attributeID, $0.value) }
    }

    package init() {}

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.headerSize + entities.count * Self.entitySize + indexes.count * Self.indexFixedSize)
        writer.append(bytes: Self.magic)
        let flagsEntities = entities.values.contains(where: \.hasUncompressedLeaves)
        if flagsEntities || migration?.closureFlushed == true {
            writer.append(UInt16(migration?.closureFlushed == true ? 6 : 5))
            writer.append((migration != nil ? Self.migrationFlag : 0) | (history != nil ? Self.historyFlag : 0))
        } else if history != nil {
            writer.append(UInt16(4))
            writer.append(migration != nil ? Self.migrationFlag : 0)
        } else {
            writer.append(UInt16(migration != nil ? 3 : indexes.isEmpty ? 1 : 2))
            writer.append(UInt16(0))
        }
        writer.append(catalogPageID)
        writer.append(UInt32(entities.count))
        writer.append(UInt32(indexes.count))
        for (id, entity) in entities.sorted(by: { $0.key < $1.key }) {
            writer.append(id)
            writer.append(entity.hasUncompressedLeaves ? Self.uncompressedLeavesFlag : 0)
            writer.append(entity.tree.rootPageID)
            writer.append(entity.tree.count)
            writer.append(entity.nextRowID)
        }
        for (id, index) in indexes.sorted(by: { $0.key < $1.key }) {
            writer.append(id.entityID)
            writer.append(id.attributeID)
            writer.append(index.tree.rootPageID)
            writer.append(index.tree.count)
            writer.append(index.isUnique ? Self.uniqueFlag : 0)
            writer.append(UInt32(index.defaultKey.count))
            writer.append(bytes: index.defaultKey)
        }
        history?.append(to: &writer)
        if let migration { migration.append(to: &writer) }
        return writer.bytes
    }

    package static func decode(_ bytes: [UInt8]) throws -> StoreRoot {
        try bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            guard try reader.readBytes(4, "magic") == magic else { throw FormatError("bad store root magic", at: 0) }
            let version = try reader.read(UInt16.self, "version")
            guard (1...6).contains(version) else {
                throw FormatError("store root version \(version) is not supported", at: 4, unsupportedVersion: version)
            }
            let flags = try reader.read(UInt16.self, "flags")
            let knownFlags: UInt16 = version >= 5 ? migrationFlag | historyFlag : version == 4 ? migrationFlag : 0
            guard flags & ~knownFlags == 0 else {
                throw FormatError(version >= 4 ? "unknown store root flags \(flags)" : "reserved store root field is not zero", at: 6)
            }
            let hasMigration = version == 3 || flags & migrationFlag != 0
            let hasHistory = version == 4 || flags & historyFlag != 0
            var root = StoreRoot()
            root.catalogPageID = try reader.read(UInt64.self, "catalog page")
            let count = Int(try reader.read(UInt32.self, "entity count"))
            let indexCount = Int(try reader.read(UInt32.self, "index count"))
            guard version != 1 || indexCount == 0 else { throw FormatError("reserved store root field is not zero", at: 20) }
            guard version != 2 || indexCount > 0 else { throw FormatError("a version 2 store root without indexes", at: 20) }
            let markerSize = (hasMigration ? MigrationMarker.fixedSize : 0) + (hasHistory ? HistoryRoot.fixedSize : 0)
            guard count <= maximumEntities, indexCount <= maximumEntities,
                  version == 1 ? reader.remaining == count * entitySize
                      : reader.remaining >= count * entitySize + indexCount * indexFixedSize + markerSize else {
                throw FormatError("store root of \(count) entities and \(indexCount) indexes has \(bytes.count) bytes", at: 16)
            }
            var previous: UInt32?
            for _ in 0..<count {
                let at = reader.position
                let id = try reader.read(UInt32.self, "entity id")
                let entityFlags = try reader.read(UInt32.self, "entity flags")
                guard entityFlags & ~(version >= 5 ? uncompressedLeavesFlag : 0) == 0 else {
                    throw FormatError(version >= 5 ? "unknown entity flags \(entityFlags)" : "reserved entity field is not zero", at: at + 4)
                }
                guard previous.map({ id > $0 }) ?? true else { throw FormatError("entity ids do not ascend", at: at) }
                previous = id
                let tree = RecordTreeRoot(rootPageID: try reader.read(UInt64.self, "root page"), count: try reader.read(UInt64.self, "count"))
                let next = try reader.read(UInt64.self, "next row id")
                guard (tree.rootPageID == 0) == (tree.count == 0), next >= 1 else {
                    throw FormatError("entity \(id) has an inconsistent tree (root \(tree.rootPageID), \(tree.count) records, next id \(next))", at: at)
                }
                root.entities[id] = EntityTree(tree: tree, nextRowID: next, hasUncompressedLeaves: entityFlags != 0)
            }
            var previousIndex: IndexID?
            for _ in 0..<indexCount {
                let at = reader.position
                let id = IndexID(entityID: try reader.read(UInt32.self, "index entity id"), attributeID: try reader.read(UInt32.self, "index attribute id"))
                guard previousIndex.map({ id > $0 }) ?? true else { throw FormatError("index ids do not ascend", at: at) }
                previousIndex = id
                let tree = RecordTreeRoot(rootPageID: try reader.read(UInt64.self, "index root page"), count: try reader.read(UInt64.self, "index count"))
                let flags = try reader.read(UInt32.self, "index flags")
                guard flags & ~uniqueFlag == 0 else { throw FormatError("unknown index flags \(flags)", at: at + 24) }
                let defaultLength = Int(try reader.read(UInt32.self, "default key length"))
                guard defaultLength >= 1, defaultLength <= reader.remaining else {
                    throw FormatError("default key of \(defaultLength) bytes, \(reader.remaining) left", at: at + 28)
                }
                let defaultKey = try reader.readBytes(defaultLength, "default key")
                // Invariant 22: one entry per record.
                let records = root.entities[id.entityID]?.tree.count ?? 0
                guard (tree.rootPageID == 0) == (tree.count == 0), tree.count == records else {
                    throw FormatError("index (\(id.entityID), \(id.attributeID)) has \(tree.count) entries at root \(tree.rootPageID) for \(records) records", at: at)
                }
                root.indexes[id] = Index(isUnique: flags & uniqueFlag != 0, defaultKey: defaultKey, tree: tree)
            }
            if hasHistory { root.history = try HistoryRoot.read(from: &reader) }
            if hasMigration { root.migration = try MigrationMarker.read(from: &reader, allowsFlags: version == 6) }
            // Version 6 is written only for a marker with a flushed closure.
            guard version != 6 || root.migration?.closureFlushed == true else {
                throw FormatError("a version 6 store root without a flushed closure in its migration marker", at: 4)
            }
            guard reader.remaining == 0 else { throw FormatError("\(reader.remaining) bytes after the store root's last index", at: reader.position) }
            return root
        }
    }
}
