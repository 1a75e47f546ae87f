/// One of the two superblock slots of `superblock` (Docs/FileFormat.md, "Superblock").
/// The valid slot with the highest epoch names the checkpoint recovery starts from.
package struct Superblock: Equatable, Sendable {
    /// `"STRATASB"`.
    package static let magic: [UInt8] = Array("STRATASB".utf8)
    /// Bytes of a slot that are used (the rest of the 4096-byte slot is zero).
    package static let encodedSize = 128
    /// Distance between the two slots in the file.
    package static let slotStride = 4096
    /// Size of the superblock file.
    package static let fileSize = 2 * slotStride

    package var formatVersion: UInt16 = currentFormatVersion
    package var storeID: StoreID
    /// Incremented on every checkpoint; slots alternate by epoch parity.
    package var epoch: UInt64
    /// The LSN of the last transaction the checkpoint covers.
    package var checkpointLSN: UInt64
    /// Where the checkpoint root frame is.
    package var root: FrameAddress

    package init(storeID: StoreID, epoch: UInt64, checkpointLSN: UInt64, root: FrameAddress) {
        self.storeID = storeID
        self.epoch = epoch
        self.checkpointLSN = checkpointLSN
        self.root = root
    }

    /// Which slot (0 or 1) a superblock of this epoch is written to.
    package var slot: Int { Int(epoch % 2) }

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedSize)
        writer.append(bytes: Self.magic)
        writer.append(formatVersion)
        writer.append(UInt16(Self.encodedSize))
        writer.append(UInt32(0))  // flags
        writer.append(storeID.high)
        writer.append(storeID.low)
        writer.append(epoch)
        writer.append(checkpointLSN)
        writer.append(root.segment)
        writer.append(root.offset)
        writer.append(root.length)
        writer.appendZeros(Self.encodedSize - 4 - writer.count)
        writer.append(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    /// Decodes a slot. Throws `FormatError` when the slot is not a valid superblock of a
    /// format version this library reads.
    package static func decode(_ bytes: [UInt8]) throws -> Superblock {
        guard bytes.count >= encodedSize else {
            throw FormatError("superblock slot is \(bytes.count) bytes, needs \(encodedSize)")
        }
        guard Array(bytes[0..<8]) == magic else { throw FormatError("bad superblock magic", at: 0) }
        let stored = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: encodedSize - 4, as: UInt32.self) }
        let computed = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(encodedSize - 4)])) }
        guard UInt32(littleEndian: stored) == computed else {
            throw FormatError("superblock checksum mismatch", at: encodedSize - 4)
        }
        return try bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw, position: 8)
            let version = try reader.read(UInt16.self, "format version")
            guard version >= 1, version <= currentFormatVersion else {
                throw FormatError("superblock format version \(version) is not supported (this library reads 1...\(currentFormatVersion))", at: 8,
                                  unsupportedVersion: version)
            }
            let size = try reader.read(UInt16.self, "slot size")
            guard Int(size) == encodedSize else { throw FormatError("superblock slot size \(size), expected \(encodedSize)", at: 10) }
            guard try reader.read(UInt32.self, "flags") == 0 else { throw FormatError("superblock flags are not zero", at: 12) }
            let id = StoreID(high: try reader.read(UInt64.self, "store id"), low: try reader.read(UInt64.self, "store id"))
            let epoch = try reader.read(UInt64.self, "epoch")
            let lsn = try reader.read(UInt64.self, "checkpoint LSN")
            let segment = try reader.read(UInt64.self, "root segment")
            let offset = try reader.read(UInt64.self, "root offset")
            let length = try reader.read(UInt32.self, "root length")
            guard epoch > 0 else { throw FormatError("superblock epoch 0", at: 32) }
            guard segment > 0, segment <= UInt64(UInt32.max), offset >= UInt64(SegmentHeader.size), offset <= UInt64(UInt32.max),
                  offset % UInt64(FrameHeader.alignment) == 0, length >= UInt32(FrameHeader.size) else {
                throw FormatError("superblock names no valid checkpoint root (segment \(segment), offset \(offset), length \(length))", at: 48)
            }
            while reader.remaining > 4 {
                let at = reader.position
                guard try reader.read(UInt8.self, "reserved") == 0 else { throw FormatError("reserved superblock byte is not zero", at: at) }
            }
            var block = Superblock(storeID: id, epoch: epoch, checkpointLSN: lsn,
                                   root: FrameAddress(segment: segment, offset: offset, length: length))
            block.formatVersion = version
            return block
        }
    }
}

/// Where a frame is: segment id, byte offset in the segment file, and frame length
/// (header + stored payload + padding).
package struct FrameAddress: Hashable, Sendable, CustomStringConvertible {
    package var segment: UInt64
    package var offset: UInt64
    package var length: UInt32

    package init(segment: UInt64, offset: UInt64, length: UInt32) {
        self.segment = segment
        self.offset = offset
        self.length = length
    }

    package var end: UInt64 { offset + UInt64(length) }
    package var description: String { "segment \(segment) offset \(offset) (\(length) bytes)" }
}
