/// The payload of a commit frame (Docs/FileFormat.md, "Commit frames").
package struct CommitRecord: Equatable, Sendable {
    package static let size = 32

    /// How many page and free frames the transaction wrote before this commit frame.
    package var frameCount: UInt32
    /// The log position known durable (synced) when this commit was written. Recovery uses
    /// it to tell a torn tail from corruption: a valid commit frame found beyond an invalid
    /// frame that claims the invalid frame's position was durable proves corruption.
    package var durableSegment: UInt64
    package var durableOffset: UInt64
    /// The first page id never allocated, after this transaction.
    package var nextPageID: UInt64

    package init(frameCount: UInt32, durableSegment: UInt64, durableOffset: UInt64, nextPageID: UInt64) {
        self.frameCount = frameCount
        self.durableSegment = durableSegment
        self.durableOffset = durableOffset
        self.nextPageID = nextPageID
    }

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.append(frameCount)
        writer.append(UInt32(0))
        writer.append(durableSegment)
        writer.append(durableOffset)
        writer.append(nextPageID)
        return writer.bytes
    }

    package static func decode(_ bytes: [UInt8]) throws -> CommitRecord {
        guard bytes.count == size else { throw FormatError("commit record is \(bytes.count) bytes, expected \(size)") }
        return try bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            let count = try reader.read(UInt32.self, "frame count")
            guard try reader.read(UInt32.self, "reserved") == 0 else { throw FormatError("reserved commit field is not zero", at: 4) }
            return CommitRecord(frameCount: count, durableSegment: try reader.read(UInt64.self, "durable segment"),
                                durableOffset: try reader.read(UInt64.self, "durable offset"),
                                nextPageID: try reader.read(UInt64.self, "next page id"))
        }
    }
}
