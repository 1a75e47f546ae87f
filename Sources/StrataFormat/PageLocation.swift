/// A page table entry: where the current image of a page is, and the LSN it was written
/// with. 24 bytes on disk (Docs/FileFormat.md, "Page table chunks"). An entry whose segment
/// is 0 means "no such page".
package struct PageLocation: Equatable, Hashable, Sendable {
    package static let encodedSize = 24
    package static let none = PageLocation(segment: 0, offset: 0, length: 0, lsn: 0)

    package var segment: UInt32
    package var offset: UInt32
    /// Frame length (header + stored payload + padding).
    package var length: UInt32
    package var lsn: UInt64

    package init(segment: UInt32, offset: UInt32, length: UInt32, lsn: UInt64) {
        self.segment = segment
        self.offset = offset
        self.length = length
        self.lsn = lsn
    }

    package var isNone: Bool { segment == 0 }

    package func append(to writer: inout ByteWriter) {
        writer.append(segment)
        writer.append(offset)
        writer.append(length)
        writer.append(UInt32(0))
        writer.append(lsn)
    }

    package static func read(from reader: inout ByteReader) throws -> PageLocation {
        let start = reader.position
        let location = PageLocation(segment: try reader.read(UInt32.self, "segment"), offset: try reader.read(UInt32.self, "offset"),
                                    length: try reader.read(UInt32.self, "length"),
                                    lsn: try { () throws -> UInt64 in
                                        guard try reader.read(UInt32.self, "reserved") == 0 else {
                                            throw FormatError("reserved page table entry field is not zero", at: start + 12)
                                        }
                                        return try reader.read(UInt64.self, "lsn")
                                    }())
        if location.segment == 0 {
            guard location == .none else { throw FormatError("empty page table entry with non-zero fields", at: start) }
        } else {
            guard location.length >= UInt32(FrameHeader.size), location.offset >= UInt32(SegmentHeader.size),
                  location.offset % UInt32(FrameHeader.alignment) == 0, location.lsn > 0 else {
                throw FormatError("invalid page table entry (segment \(location.segment), offset \(location.offset), length \(location.length))", at: start)
            }
        }
        return location
    }
}
