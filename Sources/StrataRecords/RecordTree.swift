import StrataFormat
import StrataPageLog

/// Where a record tree is kept: its root page (0 while the tree is empty) and its record count.
package struct RecordTreeRoot: Equatable, Sendable {
    package var rootPageID: UInt64
    package var count: UInt64

    package init(rootPageID: UInt64 = 0, count: UInt64 = 0) {
        self.rootPageID = rootPageID
        self.count = count
    }

    package static let empty = RecordTreeRoot()
}

/// Sizes of record tree nodes.
package struct RecordTreeOptions: Sendable {
    /// A node is split when its encoded size passes this (default 4 KiB: a lookup that misses
    /// the node cache reads, verifies and decompresses one node, so smaller leaves make
    /// random reads cheaper; scans and inserts barely notice).
    package var maximumNodeSize = 4 << 10
    /// Whether leaves may be LZ4-compressed (when the store compresses; default true).
    /// Uncompressed leaves make lookups that miss the node cache cheaper and the store larger.
    package var compressLeaves = true
    /// Whether leaves are stored for partial reads (format 3's codec 3: a raw directory and
    /// LZ4 blocks of 1 KiB, so a point lookup verifies and decompresses one block; default
    /// true). Off, a compressed leaf is one LZ4 block: smaller and cheaper to write, read
    /// whole — for a tree read in order only, as the history journal is.
    package var partialReadLeaves = true
    /// Whether a migration's shadow trees store their leaves uncompressed, to be compressed
    /// by a background pass once the store is open (invariant 29; default true). Compression
    /// is about a quarter of a custom stage's CPU; deferring it shortens the launch that
    /// migrates, and the store is larger until the pass is done.
    package var defersShadowCompression = true
    /// Records larger than this are stored in overflow pages (default 2 KiB).
    package var maximumInlineRecord = 2 << 10
    /// Size of each overflow page (default 1 MiB).
    package var overflowChunkSize = 1 << 20
    /// Modified nodes are written to the log when they pass this many bytes (default 8 MiB),
    /// so a transaction's memory does not grow with its size.
    package var dirtyBudget = 8 << 20

    package init() {}
}

/// Errors of record trees.
package enum RecordTreeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A record with this id already exists.
    case duplicateID(UInt64)
    /// A node page holds bytes that are not a valid node.
    case corruptNode(pageID: UInt64, reason: String)
    /// A page the tree refers to does not exist.
    case missingPage(pageID: UInt64)
    /// An index entry outside 9…520 bytes (a caller's error: entries come from `IndexKey.entry`).
    case invalidIndexEntry(length: Int)
    /// Record `recordID` of the entity holds the value that existing record `existingID` holds
    /// in a unique attribute (nothing of the change was applied).
    case uniqueConstraintViolation(entityID: UInt32, attributeID: UInt32, recordID: UInt64, existingID: UInt64)
    /// The entity has no index on the attribute.
    case noIndex(entityID: UInt32, attributeID: UInt32)
    /// Record bytes that are not a valid record, met while maintaining an index.
    case invalidRecord(entityID: UInt32, recordID: UInt64, reason: String)

    package var description: String {
        switch self {
        case .duplicateID(let id): "a record with id \(id) already exists"
        case .corruptNode(let pageID, let reason): "record tree page \(pageID) is corrupt: \(reason)"
        case .missingPage(let pageID): "record tree page \(pageID) is missing"
        case .invalidIndexEntry(let length): "an index entry of \(length) bytes is not 9 to 520 bytes long"
        case .uniqueConstraintViolation(let entityID, let attributeID, let recordID, let existingID):
            "record \(recordID) of entity \(entityID) would repeat record \(existingID)'s value of unique attribute \(attributeID)"
        case .noIndex(let entityID, let attributeID): "entity \(entityID) has no index on attribute \(attributeID)"
        case .invalidRecord(let entityID, let recordID, let reason): "record \(recordID) of entity \(entityID) is invalid: \(reason)"
        }
    }
}

/// An overflow reference, stored inline instead of a record too large for a leaf:
/// `total length:u64, chunk count:u32, chunk page ids:u64…`.
struct OverflowReference: Equatable {
    var length: UInt64
    var chunks: [UInt64]

    func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 12 + 8 * chunks.count)
        writer.append(length)
        writer.append(UInt32(chunks.count))
        for chunk in chunks { writer.append(chunk) }
        return writer.bytes
    }

    static func decode(_ raw: UnsafeRawBufferPointer) throws -> OverflowReference {
        var reader = ByteReader(raw)
        let length = try reader.read(UInt64.self, "overflow length")
        let count = Int(try reader.read(UInt32.self, "overflow chunk count"))
        guard reader.remaining == count * 8, length <= UInt64(count) * UInt64(FrameHeader.maximumRawLength) else {
            throw FormatError("overflow reference of \(count) chunks for \(length) bytes has \(raw.count) bytes")
        }
        var chunks: [UInt64] = []
        chunks.reserveCapacity(count)
        for _ in 0..<count { chunks.append(try reader.read(UInt64.self, "chunk page id")) }
        return OverflowReference(length: length, chunks: chunks)
    }
}
