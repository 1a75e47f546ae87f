/// What a frame holds (Docs/FileFormat.md, "Frames"). Numbers are never reused.
package enum FrameKind: UInt8, Sendable, CustomStringConvertible {
    /// A page image: the new content of one page, part of the transaction named by the LSN.
    case page = 1
    /// A page freed by the transaction named by the LSN.
    case free = 2
    /// Commits the transaction named by the LSN: its page and free frames take effect together.
    case commit = 3
    /// One chunk of the page table, written by a checkpoint.
    case tableChunk = 4
    /// A checkpoint root: the page table's chunk addresses and segment statistics.
    case checkpoint = 5

    package var description: String {
        switch self {
        case .page: "page"
        case .free: "free"
        case .commit: "commit"
        case .tableChunk: "table chunk"
        case .checkpoint: "checkpoint"
        }
    }
}

/// How a frame's payload is stored.
package enum PayloadCodec: UInt8, Sendable {
    case none = 0
    /// One LZ4 block.
    case lz4 = 1
    /// Two independent LZ4 blocks (format version 2): the payload's first half (`rawLength / 2`
    /// bytes) and the rest, after the first block's stored length (`u32`). A reader that needs
    /// bytes of the second half decompresses that block alone.
    case lz4Halves = 2
    /// A page stored for partial reads (format version 3): a table, the page's first bytes
    /// (its directory) raw, then the rest in independent LZ4 blocks of a fixed raw size, each
    /// with its own CRC32C (`FrameCodec.BlockLayout`). The header's checksum covers the table
    /// and the raw bytes; a reader verifies and decompresses only the blocks it needs.
    case lz4Blocks = 3
}

/// The 48-byte header in front of every frame; for page frames it is the page header.
/// The checksum covers the header (with the page id and LSN) and the stored payload, so a
/// frame read from the wrong place, or a stale copy of a page, fails verification.
package struct FrameHeader: Equatable, Sendable {
    package static let size = 48
    /// `"SFRM"` read as a little-endian UInt32.
    package static let magic: UInt32 = 0x4D52_4653
    /// Largest raw payload a frame may have (64 MiB); larger lengths are corruption.
    package static let maximumRawLength = 64 << 20
    /// Frames start at multiples of this in a segment.
    package static let alignment = 8
    /// The longest a valid frame can be: header, worst-case LZ4 output of the largest payload, padding.
    package static var maximumFrameLength: Int { alignedLength(size + LZ4Codec.bound(maximumRawLength)) }

    package var formatVersion: UInt8 = UInt8(currentFormatVersion)
    package var kind: FrameKind
    package var codec: PayloadCodec
    package var pageID: UInt64
    package var lsn: UInt64
    package var entityID: UInt32
    package var schemaVersion: UInt32
    package var rawLength: UInt32
    package var storedLength: UInt32
    package var checksum: UInt32 = 0

    package init(kind: FrameKind, codec: PayloadCodec, pageID: UInt64, lsn: UInt64, entityID: UInt32,
                 schemaVersion: UInt32, rawLength: UInt32, storedLength: UInt32) {
        self.kind = kind
        self.codec = codec
        self.pageID = pageID
        self.lsn = lsn
        self.entityID = entityID
        self.schemaVersion = schemaVersion
        self.rawLength = rawLength
        self.storedLength = storedLength
    }

    /// Header + stored payload + zero padding to the alignment.
    package var frameLength: Int { Self.alignedLength(Self.size + Int(storedLength)) }

    package static func alignedLength(_ length: Int) -> Int { (length + alignment - 1) / alignment * alignment }

    /// Writes the header (with `checksum` as set) into 48 bytes at `destination`.
    package func write(to destination: UnsafeMutableRawBufferPointer) {
        precondition(destination.count >= Self.size)
        destination.storeBytes(of: Self.magic.littleEndian, toByteOffset: 0, as: UInt32.self)
        destination.storeBytes(of: formatVersion, toByteOffset: 4, as: UInt8.self)
        destination.storeBytes(of: kind.rawValue, toByteOffset: 5, as: UInt8.self)
        destination.storeBytes(of: codec.rawValue, toByteOffset: 6, as: UInt8.self)
        destination.storeBytes(of: UInt8(0), toByteOffset: 7, as: UInt8.self)
        destination.storeBytes(of: pageID.littleEndian, toByteOffset: 8, as: UInt64.self)
        destination.storeBytes(of: lsn.littleEndian, toByteOffset: 16, as: UInt64.self)
        destination.storeBytes(of: entityID.littleEndian, toByteOffset: 24, as: UInt32.self)
        destination.storeBytes(of: schemaVersion.littleEndian, toByteOffset: 28, as: UInt32.self)
        destination.storeBytes(of: rawLength.littleEndian, toByteOffset: 32, as: UInt32.self)
        destination.storeBytes(of: storedLength.littleEndian, toByteOffset: 36, as: UInt32.self)
        destination.storeBytes(of: UInt32(0).littleEndian, toByteOffset: 40, as: UInt32.self)
        destination.storeBytes(of: checksum.littleEndian, toByteOffset: 44, as: UInt32.self)
    }

    /// Decodes and validates a header (everything but the checksum, which needs the payload).
    /// Throws `FormatError` naming the first invalid field.
    package static func decode(_ raw: UnsafeRawBufferPointer) throws -> FrameHeader {
        guard raw.count >= size else { throw FormatError("frame header is \(raw.count) bytes, needs \(size)") }
        let magic = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
        guard magic == Self.magic else { throw FormatError("bad frame magic", at: 0) }
        let version = raw[4]
        guard version >= 1, UInt16(version) <= currentFormatVersion else {
            throw FormatError("frame format version \(version) is not supported", at: 4,
                              unsupportedVersion: version == 0 ? nil : UInt16(version))
        }
        guard let kind = FrameKind(rawValue: raw[5]) else { throw FormatError("unknown frame kind \(raw[5])", at: 5) }
        guard let codec = PayloadCodec(rawValue: raw[6]) else { throw FormatError("unknown payload codec \(raw[6])", at: 6) }
        guard raw[7] == 0 else { throw FormatError("frame flags \(raw[7]) are not zero", at: 7) }
        func u64(_ at: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        func u32(_ at: Int) -> UInt32 { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
        var header = FrameHeader(kind: kind, codec: codec, pageID: u64(8), lsn: u64(16), entityID: u32(24),
                                 schemaVersion: u32(28), rawLength: u32(32), storedLength: u32(36))
        header.formatVersion = version
        header.checksum = u32(44)
        guard u32(40) == 0 else { throw FormatError("reserved frame field is not zero", at: 40) }
        guard Int(header.rawLength) <= maximumRawLength else {
            throw FormatError("raw length \(header.rawLength) exceeds the maximum \(maximumRawLength)", at: 32)
        }
        switch codec {
        case .none:
            guard header.storedLength == header.rawLength else {
                throw FormatError("stored length \(header.storedLength) differs from raw length \(header.rawLength) without compression", at: 36)
            }
        case .lz4:
            guard header.storedLength > 0, Int(header.storedLength) <= LZ4Codec.bound(Int(header.rawLength)),
                  UInt64(header.rawLength) <= UInt64(header.storedLength) * 255 + 255 else {
                throw FormatError("stored length \(header.storedLength) impossible for \(header.rawLength) LZ4-compressed bytes", at: 36)
            }
        case .lz4Halves:
            guard version >= 2 else { throw FormatError("payload codec 2 in a frame of format version \(version)", at: 6) }
            let raw = Int(header.rawLength), half = raw / 2
            guard half > 0, header.storedLength >= 6,
                  Int(header.storedLength) <= 4 + LZ4Codec.bound(half) + LZ4Codec.bound(raw - half),
                  UInt64(header.rawLength) <= UInt64(header.storedLength) * 255 + 510 else {
                throw FormatError("stored length \(header.storedLength) impossible for \(header.rawLength) bytes LZ4-compressed in halves", at: 36)
            }
        case .lz4Blocks:
            guard version >= 3 else { throw FormatError("payload codec 3 in a frame of format version \(version)", at: 6) }
            // The writer stores a page this way only when it is smaller than the page.
            guard header.storedLength >= UInt32(FrameCodec.BlockLayout.fixedSize), header.storedLength < header.rawLength else {
                throw FormatError("stored length \(header.storedLength) impossible for \(header.rawLength) bytes stored in LZ4 blocks", at: 36)
            }
        }
        guard header.lsn > 0 else { throw FormatError("frame LSN 0", at: 16) }
        return header
    }

    /// The checksum of a header and the bytes of a stored payload it covers (the checksum field
    /// itself is excluded): the whole stored payload, except for codec 3 (`FrameCodec.coveredLength`).
    package static func computeChecksum(header: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) -> UInt32 {
        let first = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: header[0..<44]))
        return CRC32C.checksum(payload, seed: first)
    }
}

/// Builds frames into a byte buffer and reads them back.
package enum FrameCodec {
    /// Compress when the result saves at least this fraction (1/8) of the raw size.
    static let minimumSavingsShift = 3

    /// Payloads at least this long are compressed in halves (`PayloadCodec.lz4Halves`) in
    /// format 2: a point lookup in a 4 KiB leaf then decompresses about 40 % fewer bytes on
    /// average, for about 7 % more stored bytes.
    package static let halvesMinimum = 1024

    /// The raw size of the LZ4 blocks of a page stored for partial reads (codec 3, format 3).
    /// A point lookup in a 4 KiB leaf verifies and decompresses one such block, at most up to
    /// the record's end.
    package static let partialReadBlockSize = 1024

    /// Appends one frame (header, possibly compressed payload, padding) to `buffer`, in format
    /// `formatVersion` (the store's), and returns the frame's length in bytes.
    ///
    /// How a compressed payload is stored depends on the format: one LZ4 block in format 1; in
    /// format 2, two (`lz4Halves`) from `halvesMinimum` bytes on; in format 3, one block,
    /// except for a page written with a `directoryLength` — one read in part, a record tree
    /// leaf — which is stored for partial reads (`lz4Blocks`): its first `directoryLength`
    /// bytes raw, the rest in blocks of `partialReadBlockSize`.
    @discardableResult
    package static func append(kind: FrameKind, pageID: UInt64, lsn: UInt64, entityID: UInt32 = 0, schemaVersion: UInt32 = 0,
                               payload: UnsafeRawBufferPointer, compress: Bool, directoryLength: Int? = nil,
                               formatVersion: UInt16 = currentFormatVersion, compressor: LZ4Compressor? = nil,
                               to buffer: inout [UInt8]) -> Int {
        let start = buffer.count
        let rawLength = payload.count
        var codec = PayloadCodec.none
        var stored = rawLength
        var covered = rawLength  // the stored bytes the header's checksum covers
        if compress && rawLength >= 64 {
            func block(_ source: UnsafeRawBufferPointer, _ destination: UnsafeMutableRawBufferPointer) -> Int? {
                if let compressor { return LZ4Codec.compress(source, into: destination, using: compressor) }
                return LZ4Codec.compress(source, into: destination)
            }
            let limit = rawLength - (rawLength >> minimumSavingsShift)
            if formatVersion >= 3, let directoryLength {
                let layout = BlockLayout.Shape(rawLength: rawLength, prefixLength: min(max(directoryLength, 0), rawLength),
                                               blockSize: partialReadBlockSize)
                let bound = layout.storedBound
                buffer.append(contentsOf: repeatElement(0, count: FrameHeader.size + bound))
                let produced = buffer.withUnsafeMutableBytes { raw -> Int in
                    let destination = UnsafeMutableRawBufferPointer(rebasing: raw[(start + FrameHeader.size)..<(start + FrameHeader.size + bound)])
                    return layout.write(payload, into: destination, compress: block)
                }
                if produced <= limit {
                    codec = .lz4Blocks
                    stored = produced
                    covered = layout.headLength
                    buffer.removeLast(bound - produced)
                } else {
                    buffer.removeLast(FrameHeader.size + bound)
                }
            } else {
                let split = formatVersion == 2 && rawLength >= halvesMinimum ? rawLength / 2 : 0
                let bound = split > 0 ? 4 + LZ4Codec.bound(split) + LZ4Codec.bound(rawLength - split) : LZ4Codec.bound(rawLength)
                buffer.append(contentsOf: repeatElement(0, count: FrameHeader.size + bound))
                let produced = buffer.withUnsafeMutableBytes { raw -> Int? in
                    let destination = UnsafeMutableRawBufferPointer(rebasing: raw[(start + FrameHeader.size)..<(start + FrameHeader.size + bound)])
                    guard split > 0 else { return block(payload, destination) }
                    guard let first = block(UnsafeRawBufferPointer(rebasing: payload[0..<split]), UnsafeMutableRawBufferPointer(rebasing: destination[4...])),
                          let second = block(UnsafeRawBufferPointer(rebasing: payload[split...]),
                                             UnsafeMutableRawBufferPointer(rebasing: destination[(4 + first)...])) else { return nil }
                    destination.storeBytes(of: UInt32(first).littleEndian, toByteOffset: 0, as: UInt32.self)
                    return 4 + first + second
                }
                if let produced, produced <= limit {
                    codec = split > 0 ? .lz4Halves : .lz4
                    stored = produced
                    covered = produced
                    buffer.removeLast(bound - produced)
                } else {
                    buffer.removeLast(FrameHeader.size + bound)
                }
            }
        }
        if codec == .none {
            buffer.append(contentsOf: repeatElement(0, count: FrameHeader.size))
            buffer.append(contentsOf: payload)
        }
        let frameLength = FrameHeader.alignedLength(FrameHeader.size + stored)
        buffer.append(contentsOf: repeatElement(0, count: frameLength - FrameHeader.size - stored))
        var header = FrameHeader(kind: kind, codec: codec, pageID: pageID, lsn: lsn, entityID: entityID,
                                 schemaVersion: schemaVersion, rawLength: UInt32(rawLength), storedLength: UInt32(stored))
        header.formatVersion = UInt8(truncatingIfNeeded: formatVersion)
        buffer.withUnsafeMutableBytes { raw in
            let headerBytes = UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + FrameHeader.size)])
            header.write(to: headerBytes)
            let coveredBytes = UnsafeRawBufferPointer(rebasing: raw[(start + FrameHeader.size)..<(start + FrameHeader.size + covered)])
            header.checksum = FrameHeader.computeChecksum(header: UnsafeRawBufferPointer(headerBytes), payload: coveredBytes)
            header.write(to: headerBytes)
        }
        return frameLength
    }

    /// Appends a copy of an existing frame (header already validated, stored payload as read
    /// and verified) with a new LSN, keeping its codec and payload bytes. Used by compaction.
    @discardableResult
    package static func appendRelocated(_ original: FrameHeader, storedPayload: UnsafeRawBufferPointer, lsn: UInt64,
                                        to buffer: inout [UInt8]) -> Int {
        var header = original
        header.lsn = lsn
        header.checksum = 0
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: FrameHeader.size))
        buffer.append(contentsOf: storedPayload)
        let frameLength = header.frameLength
        buffer.append(contentsOf: repeatElement(0, count: frameLength - FrameHeader.size - storedPayload.count))
        buffer.withUnsafeMutableBytes { raw in
            let headerBytes = UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + FrameHeader.size)])
            header.write(to: headerBytes)
            // A verified payload: its covered bytes are known (else the whole payload, which no
            // reader would accept for codec 3 — the frame then reads as damaged, as it was).
            let covered = coveredLength(header, stored: storedPayload) ?? storedPayload.count
            header.checksum = FrameHeader.computeChecksum(header: UnsafeRawBufferPointer(headerBytes),
                                                          payload: UnsafeRawBufferPointer(rebasing: storedPayload[0..<covered]))
            header.write(to: headerBytes)
        }
        return frameLength
    }

    /// How many of the stored payload's first bytes the header's checksum covers: all of
    /// them, except for codec 3 — its table and raw prefix (the blocks have checksums of their
    /// own). Nil when a codec 3 payload's table does not fit in it.
    package static func coveredLength(_ header: FrameHeader, stored: UnsafeRawBufferPointer) -> Int? {
        guard header.codec == .lz4Blocks else { return stored.count }
        return BlockLayout.headLength(rawLength: Int(header.rawLength), stored: stored)
    }

    /// Whether the header's checksum matches the bytes it covers (`coveredLength`): for every
    /// codec but 3 the whole frame; for codec 3 its header, table and raw prefix — what a
    /// partial read checks before reading blocks, each verified as it is read
    /// (`BlockLayout.verifiedBlock`).
    package static func isHeadIntact(_ header: FrameHeader, headerBytes: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer) -> Bool {
        guard let covered = coveredLength(header, stored: stored) else { return false }
        return FrameHeader.computeChecksum(header: headerBytes, payload: UnsafeRawBufferPointer(rebasing: stored[0..<covered])) == header.checksum
    }

    /// Whether a whole frame is intact: `isHeadIntact` and, for codec 3, every block's checksum
    /// and length (the table is then trusted).
    package static func isIntact(_ header: FrameHeader, headerBytes: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer) -> Bool {
        guard isHeadIntact(header, headerBytes: headerBytes, stored: stored) else { return false }
        guard header.codec == .lz4Blocks else { return true }
        guard let layout = try? BlockLayout(rawLength: Int(header.rawLength), stored: stored) else { return false }
        var intact = true
        layout.forEachBlock { _, entry, block in intact = intact && CRC32C.checksum(block) == entry.checksum }
        return intact
    }

    /// Verifies a frame whose header was decoded from `headerBytes` and whose stored payload is
    /// `stored` (`isIntact`); then returns the raw payload (decompressed if needed).
    package static func verifiedPayload(_ header: FrameHeader, headerBytes: UnsafeRawBufferPointer,
                                        stored: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard stored.count == Int(header.storedLength) else {
            throw FormatError("frame payload is \(stored.count) bytes, header says \(header.storedLength)", at: FrameHeader.size)
        }
        guard isIntact(header, headerBytes: headerBytes, stored: stored) else {
            throw FormatError("frame checksum mismatch", at: 44)
        }
        return try payload(header, stored: stored)
    }

    /// The raw payload of a verified frame: `stored`, decompressed when the header says so.
    package static func payload(_ header: FrameHeader, stored: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard header.codec != .none else { return [UInt8](stored) }
        // Uninitialized: decompress either fills every byte or throws.
        return try [UInt8](unsafeUninitializedCapacity: Int(header.rawLength)) { buffer, initialized in
            try decompress(header, stored: stored, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = buffer.count
        }
    }

    /// Decompresses the stored payload of a compressed frame (verified: `isIntact`) into
    /// `destination`, which must be `rawLength` bytes. Throws `FormatError` for malformed data.
    package static func decompress(_ header: FrameHeader, stored: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) throws {
        if header.codec == .lz4Blocks {
            let layout = try BlockLayout(rawLength: Int(header.rawLength), stored: stored)
            guard destination.count == layout.rawLength else {
                throw FormatError("a \(destination.count)-byte buffer for a \(layout.rawLength)-byte payload")
            }
            if layout.prefixLength > 0, let target = destination.baseAddress, let source = layout.prefix.baseAddress {
                target.copyMemory(from: source, byteCount: layout.prefixLength)
            }
            try layout.forEachBlock { index, entry, block in
                try layout.expand(block, entry, index: index, into: UnsafeMutableRawBufferPointer(rebasing: destination[layout.rawRange(index)]))
            }
            return
        }
        let blocks = try self.blocks(header, stored: stored)
        try LZ4Codec.decompress(blocks.first, into: UnsafeMutableRawBufferPointer(rebasing: destination[0..<blocks.split]))
        if blocks.split < destination.count {
            try LZ4Codec.decompress(blocks.second, into: UnsafeMutableRawBufferPointer(rebasing: destination[blocks.split...]))
        }
    }

    /// The independent LZ4 blocks of a compressed frame's stored payload in codec 1 or 2: the
    /// first expands to the payload's bytes `0..<split`, the second to `split..<rawLength`
    /// (empty, with `split` the raw length, for a single block). Throws `FormatError` when the
    /// first block's stored length does not fit, or for codec 3 (`BlockLayout`).
    package static func blocks(_ header: FrameHeader, stored: UnsafeRawBufferPointer)
        throws -> (first: UnsafeRawBufferPointer, second: UnsafeRawBufferPointer, split: Int) {
        switch header.codec {
        case .none, .lz4:
            return (stored, UnsafeRawBufferPointer(rebasing: stored[stored.count...]), Int(header.rawLength))
        case .lz4Halves:
            guard stored.count >= 4 else { throw FormatError("LZ4 halves without the first half's length", at: FrameHeader.size) }
            let first = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: 0, as: UInt32.self)))
            guard first > 0, first < stored.count - 4 else {
                throw FormatError("first LZ4 half of \(first) bytes in a payload of \(stored.count)", at: FrameHeader.size)
            }
            return (UnsafeRawBufferPointer(rebasing: stored[4..<(4 + first)]), UnsafeRawBufferPointer(rebasing: stored[(4 + first)...]),
                    Int(header.rawLength) / 2)
        case .lz4Blocks:
            throw FormatError("LZ4 blocks read as halves", at: FrameHeader.size)
        }
    }

    /// Decodes a whole frame held in `bytes` (header at the start), verifying it.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> (header: FrameHeader, payload: [UInt8]) {
        let header = try FrameHeader.decode(bytes)
        let end = FrameHeader.size + Int(header.storedLength)
        guard bytes.count >= end else {
            throw FormatError("frame needs \(end) bytes, \(bytes.count) available", at: FrameHeader.size)
        }
        let payload = try verifiedPayload(header, headerBytes: UnsafeRawBufferPointer(rebasing: bytes[0..<FrameHeader.size]),
                                          stored: UnsafeRawBufferPointer(rebasing: bytes[FrameHeader.size..<end]))
        return (header, payload)
    }
}
