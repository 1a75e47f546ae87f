/// The 64-byte header at the start of every segment file (Docs/FileFormat.md, "Segment files").
/// A segment names its predecessor and the exact offset where the predecessor's log ends,
/// so recovery can tell a torn tail (only in the last segment) from corruption.
package struct SegmentHeader: Equatable, Sendable {
    /// `"STRATSEG"`.
    package static let magic: [UInt8] = Array("STRATSEG".utf8)
    package static let size = 64

    package var formatVersion: UInt16 = currentFormatVersion
    package var storeID: StoreID
    package var segmentID: UInt64
    /// The segment the log continues from, 0 for the first segment of a store.
    package var previousSegmentID: UInt64
    /// The offset in the previous segment where its log ends (the first byte not part of it).
    package var previousSegmentEnd: UInt64

    package init(storeID: StoreID, segmentID: UInt64, previousSegmentID: UInt64, previousSegmentEnd: UInt64) {
        self.storeID = storeID
        self.segmentID = segmentID
        self.previousSegmentID = previousSegmentID
        self.previousSegmentEnd = previousSegmentEnd
    }

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.append(bytes: Self.magic)
        writer.append(formatVersion)
        writer.append(UInt16(Self.size))
        writer.append(UInt32(0))  // flags
        writer.append(storeID.high)
        writer.append(storeID.low)
        writer.append(segmentID)
        writer.append(previousSegmentID)
        writer.append(previousSegmentEnd)
        writer.append(UInt32(0))  // reserved
        writer.append(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    package static func decode(_ bytes: [UInt8]) throws -> SegmentHeader {
        guard bytes.count >= size else { throw FormatError("segment header is \(bytes.count) bytes, needs \(size)") }
        guard Array(bytes[0..<8]) == magic else { throw FormatError("bad segment magic", at: 0) }
        let stored = bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: size - 4, as: UInt32.self)) }
        let computed = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(size - 4)])) }
        guard stored == computed else { throw FormatError("segment header checksum mismatch", at: size - 4) }
        return try bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw, position: 8)
            let version = try reader.read(UInt16.self, "format version")
            guard version >= 1, version <= currentFormatVersion else {
                throw FormatError("segment format version \(version) is not supported (this library reads 1...\(currentFormatVersion))", at: 8,
                                  unsupportedVersion: version)
            }
            let length = try reader.read(UInt16.self, "header length")
            guard Int(length) == size else { throw FormatError("segment header length \(length), expected \(size)", at: 10) }
            guard try reader.read(UInt32.self, "flags") == 0 else { throw FormatError("segment flags are not zero", at: 12) }
            let id = StoreID(high: try reader.read(UInt64.self, "store id"), low: try reader.read(UInt64.self, "store id"))
            let segment = try reader.read(UInt64.self, "segment id")
            let previous = try reader.read(UInt64.self, "previous segment id")
            let previousEnd = try reader.read(UInt64.self, "previous segment end")
            guard try reader.read(UInt32.self, "reserved") == 0 else { throw FormatError("reserved segment header field is not zero", at: 56) }
            guard segment > 0 else { throw FormatError("segment id 0", at: 32) }
            guard previousEnd <= UInt64(UInt32.max), previous == 0 || previousEnd >= UInt64(size) else {
                throw FormatError("previous segment end \(previousEnd) out of range", at: 48)
            }
            guard previous < segment else { throw FormatError("previous segment \(previous) is not before segment \(segment)", at: 40) }
            var header = SegmentHeader(storeID: id, segmentID: segment, previousSegmentID: previous, previousSegmentEnd: previousEnd)
            header.formatVersion = version
            return header
        }
    }
}
