import StrataFormat
import StrataPageLog

/// Where records a migration's transform rejected are kept (Docs/FileFormat.md, "Quarantine"):
/// a record tree whose entries are keyed by a sequence number and whose bytes the store API
/// encodes (entity, record id, catalog version, stage, reason, the old record's bytes). Its
/// root lives in fixed page 2 (absent: no quarantine).
///
/// ```
/// quarantine-root := "QRNT" version:u16 reserved:u16 rootPage:u64 count:u64 nextSequence:u64   ; 32 bytes
/// ```
package struct QuarantineRoot: Equatable, Sendable {
    package static let pageID: UInt64 = 2
    static let magic: [UInt8] = Array("QRNT".utf8)
    static let size = 32

    package var tree = RecordTreeRoot()
    /// The key the next entry gets (≥ 1).
    package var nextSequence: UInt64 = 1

    package init() {}

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.append(bytes: Self.magic)
        writer.append(UInt16(1))
        writer.append(UInt16(0))
        writer.append(tree.rootPageID)
        writer.append(tree.count)
        writer.append(nextSequence)
        return writer.bytes
    }

    package static func decode(_ bytes: [UInt8]) throws -> QuarantineRoot {
        try bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            guard raw.count == size, try reader.readBytes(4, "magic") == magic else { throw FormatError("bad quarantine root", at: 0) }
            let version = try reader.read(UInt16.self, "version")
            guard version == 1 else { throw FormatError("quarantine root version \(version) is not supported", at: 4, unsupportedVersion: version) }
            guard try reader.read(UInt16.self, "reserved") == 0 else { throw FormatError("reserved quarantine field is not zero", at: 6) }
            var root = QuarantineRoot()
            root.tree = RecordTreeRoot(rootPageID: try reader.read(UInt64.self, "root page"), count: try reader.read(UInt64.self, "count"))
            root.nextSequence = try reader.read(UInt64.self, "next sequence")
            guard (root.tree.rootPageID == 0) == (root.tree.count == 0), root.nextSequence > root.tree.count else {
                throw FormatError("inconsistent quarantine root (root \(root.tree.rootPageID), \(root.tree.count) entries, next \(root.nextSequence))", at: 8)
            }
            return root
        }
    }

    static func read(_ page: Page?) throws -> QuarantineRoot {
        guard let page else { return QuarantineRoot() }
        do { return try decode(page.bytes) } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: "quarantine root: \(error.reason)")
        }
    }
}

extension RecordTransaction {
    /// Adds an entry (bytes the caller encodes) to the quarantine; returns its sequence number.
    package func quarantine(_ entry: [UInt8]) throws -> UInt64 {
        var root = try QuarantineRoot.read(transaction.read(QuarantineRoot.pageID))
        let writer = RecordTreeWriter(transaction: transaction, root: root.tree, entityID: 0, schemaVersion: 0, options: options)
        writer.mappedReads = false
        let sequence = root.nextSequence
        try writer.insert(sequence, bytes: entry)
        root.tree = try writer.finish()
        root.nextSequence += 1
        try transaction.write(QuarantineRoot.pageID, bytes: root.encoded())
        return sequence
    }

    /// Removes every quarantine entry (their pages freed).
    package func clearQuarantine() throws {
        let root = try QuarantineRoot.read(transaction.read(QuarantineRoot.pageID))
        guard root.tree.count > 0 else { return }
        let writer = RecordTreeWriter(transaction: transaction, root: root.tree, entityID: 0, schemaVersion: 0, options: options)
        try writer.destroy()
        var cleared = root
        cleared.tree = RecordTreeRoot()
        try transaction.write(QuarantineRoot.pageID, bytes: cleared.encoded())
    }
}

extension RecordSnapshot {
    /// Every quarantine entry, by sequence number.
    package func quarantineEntries() throws -> [(sequence: UInt64, bytes: [UInt8])] {
        let root = try QuarantineRoot.read(snapshot.read(QuarantineRoot.pageID))
        var entries: [(sequence: UInt64, bytes: [UInt8])] = []
        try RecordTreeReader(snapshot: snapshot, root: root.tree, cache: cache).scan { sequence, bytes in
            entries.append((sequence, Array(bytes)))
            return true
        }
        return entries
    }
}
