import StrataFormat

/// The record layer's root, kept in fixed page 0 of the page log (Docs/FileFormat.md,
/// "Store root"): where the schema catalog is and where each entity's record tree is.
///
/// ```
/// store-root := "SROT" version:u16 reserved:u16 catalogPage:u64 entityCount:u32 reserved:u32
///               entity*                       ; ascending entity id
/// entity     := entityID:u32 reserved:u32 rootPage:u64 count:u64 nextRowID:u64   ; 32 bytes
/// ```
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

        package init(tree: RecordTreeRoot = .empty, nextRowID: UInt64 = 1) {
            self.tree = tree
            self.nextRowID = nextRowID
        }
    }

    /// The first page of the stored schema catalog, 0 when none was stored yet.
    package var catalogPageID: UInt64 = 0
    package var entities: [UInt32: EntityTree] = [:]

    package init() {}

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.headerSize + entities.count * Self.entitySize)
        writer.append(bytes: Self.magic)
        writer.append(UInt16(1))
        writer.append(UInt16(0))
        writer.append(catalogPageID)
        writer.append(UInt32(entities.count))
        writer.append(UInt32(0))
        for (id, entity) in entities.sorted(by: { $0.key < $1.key }) {
            writer.append(id)
            writer.append(UInt32(0))
            writer.append(entity.tree.rootPageID)
            writer.append(entity.tree.count)
            writer.append(entity.nextRowID)
        }
        return writer.bytes
    }

    package static func decode(_ bytes: [UInt8]) throws -> StoreRoot {
        try bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            guard try reader.readBytes(4, "magic") == magic else { throw FormatError("bad store root magic", at: 0) }
            let version = try reader.read(UInt16.self, "version")
            guard version == 1 else {
                throw FormatError("store root version \(version) is not supported", at: 4, unsupportedVersion: version)
            }
            guard try reader.read(UInt16.self, "reserved") == 0 else { throw FormatError("reserved store root field is not zero", at: 6) }
            var root = StoreRoot()
            root.catalogPageID = try reader.read(UInt64.self, "catalog page")
            let count = Int(try reader.read(UInt32.self, "entity count"))
            guard try reader.read(UInt32.self, "reserved") == 0 else { throw FormatError("reserved store root field is not zero", at: 20) }
            guard count <= maximumEntities, reader.remaining == count * entitySize else {
                throw FormatError("store root of \(count) entities has \(bytes.count) bytes", at: 16)
            }
            var previous: UInt32?
            for _ in 0..<count {
                let at = reader.position
                let id = try reader.read(UInt32.self, "entity id")
                guard try reader.read(UInt32.self, "reserved") == 0 else { throw FormatError("reserved entity field is not zero", at: at + 4) }
                guard previous.map({ id > $0 }) ?? true else { throw FormatError("entity ids do not ascend", at: at) }
                previous = id
                let tree = RecordTreeRoot(rootPageID: try reader.read(UInt64.self, "root page"), count: try reader.read(UInt64.self, "count"))
                let next = try reader.read(UInt64.self, "next row id")
                guard (tree.rootPageID == 0) == (tree.count == 0), next >= 1 else {
                    throw FormatError("entity \(id) has an inconsistent tree (root \(tree.rootPageID), \(tree.count) records, next id \(next))", at: at)
                }
                root.entities[id] = EntityTree(tree: tree, nextRowID: next)
            }
            return root
        }
    }
}
