import Testing
import StrataFormat
import StrataTestSupport

@Suite struct ChecksumTests {
    @Test func matchesTheStandardCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.portableChecksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
    }

    @Test func hardwareAndPortablePathsAgreeAndChain() {
        var random = SeededRandom(seed: 21)
        // Around the hardware path's 768-byte rounds of three interleaved 256-byte stripes, too.
        for length in [0, 1, 7, 8, 9, 63, 64, 65, 767, 768, 769, 1000, 1535, 1536, 2311, 4096, 16_141, 65_537] {
            let bytes = random.bytes(length)
            #expect(CRC32C.checksum(bytes) == CRC32C.portableChecksum(bytes), "length \(length)")
            let split = length / 3
            let chained = CRC32C.checksum(Array(bytes[split...]), seed: CRC32C.checksum(Array(bytes[..<split])))
            #expect(chained == CRC32C.checksum(bytes), "length \(length)")
        }
    }
}

@Suite struct FrameTests {
    func encode(_ payload: [UInt8], compress: Bool, pageID: UInt64 = 42, lsn: UInt64 = 7) -> [UInt8] {
        var buffer: [UInt8] = []
        payload.withUnsafeBytes {
            _ = FrameCodec.append(kind: .page, pageID: pageID, lsn: lsn, entityID: 3, schemaVersion: 9, payload: $0,
                                  compress: compress, to: &buffer)
        }
        return buffer
    }

    @Test func roundTripsRawAndCompressedPayloads() throws {
        var random = SeededRandom(seed: 22)
        for payload in [[], [1, 2, 3], random.bytes(5000), random.recordLikeBytes(16 << 10)] as [[UInt8]] {
            for compress in [false, true] {
                let frame = encode(payload, compress: compress)
                #expect(frame.count % FrameHeader.alignment == 0)
                let (header, decoded) = try frame.withUnsafeBytes { try FrameCodec.decode($0) }
                #expect(decoded == payload)
                #expect(header.pageID == 42 && header.lsn == 7 && header.entityID == 3 && header.schemaVersion == 9)
                #expect(header.frameLength == frame.count)
            }
        }
        // Record-like pages compress; random bytes are stored raw.
        let compressible = encode(random.recordLikeBytes(16 << 10), compress: true)
        #expect(compressible.count < 12 << 10)
        let incompressible = try encode(random.bytes(4096), compress: true).withUnsafeBytes { try FrameHeader.decode($0) }
        #expect(incompressible.codec == .none)
    }

    /// Format 2 compresses payloads of 1 KiB or more as two independent LZ4 blocks; format 1
    /// as one. Both decode to the payload, and each half's block expands to its half.
    @Test func format2CompressesLargePayloadsInHalves() throws {
        for length in [100, FrameCodec.halvesMinimum - 1, FrameCodec.halvesMinimum, 4097, 16 << 10] {
            // Record-like text with runs long enough that even 100 bytes compress.
            let payload = (0..<length).map { UInt8(ascii: "a") + UInt8(($0 / 9) % 5) }
            for version: UInt16 in [1, 2] {
                var frame: [UInt8] = []
                payload.withUnsafeBytes { raw in
                    _ = FrameCodec.append(kind: .page, pageID: 42, lsn: 7, payload: raw, compress: true, formatVersion: version, to: &frame)
                }
                let (header, decoded) = try frame.withUnsafeBytes { try FrameCodec.decode($0) }
                #expect(decoded == payload, "\(length) bytes, format \(version)")
                #expect(UInt16(header.formatVersion) == version)
                let halves = version >= 2 && length >= FrameCodec.halvesMinimum
                #expect(header.codec == (halves ? .lz4Halves : .lz4), "\(length) bytes, format \(version)")
                try frame.withUnsafeBytes { raw in
                    let stored = UnsafeRawBufferPointer(rebasing: raw[FrameHeader.size..<(FrameHeader.size + Int(header.storedLength))])
                    let blocks = try FrameCodec.blocks(header, stored: stored)
                    #expect(blocks.split == (halves ? length / 2 : length))
                    var second = [UInt8](repeating: 0, count: length - blocks.split)
                    if halves { try second.withUnsafeMutableBytes { try LZ4Codec.decompress(blocks.second, into: $0) } }
                    #expect(second == Array(payload[blocks.split...]))
                }
            }
        }
    }

    @Test func malformedHalvesAreErrors() throws {
        var random = SeededRandom(seed: 25)
        var frame: [UInt8] = []
        random.recordLikeBytes(4000).withUnsafeBytes { raw in
            _ = FrameCodec.append(kind: .page, pageID: 42, lsn: 7, payload: raw, compress: true, formatVersion: 2, to: &frame)
        }
        #expect(try frame.withUnsafeBytes { try FrameHeader.decode($0) }.codec == .lz4Halves)
        // Codec 2 in a format 1 frame: the header is invalid.
        var old = frame
        old[4] = 1
        #expect(throws: FormatError.self) { _ = try old.withUnsafeBytes { try FrameHeader.decode($0) } }
        // A first half's length past the payload, or zero: an error, checksum or not.
        for bad: UInt32 in [0, 1 << 20, UInt32(frame.count)] {
            var damaged = frame
            withUnsafeBytes(of: bad.littleEndian) { damaged.replaceSubrange(48..<52, with: $0) }
            let header = try damaged.withUnsafeBytes { try FrameHeader.decode($0) }
            #expect(throws: FormatError.self, "\(bad)") {
                try damaged.withUnsafeBytes { raw in
                    _ = try FrameCodec.payload(header, stored: UnsafeRawBufferPointer(rebasing: raw[48..<(48 + Int(header.storedLength))]))
                }
            }
        }
    }

    @Test func theChecksumCoversPageIDAndLSN() throws {
        let frame = encode([1, 2, 3, 4], compress: false)
        for (offset, name) in [(8, "page id"), (16, "lsn"), (24, "entity"), (28, "schema version"), (50, "payload")] {
            var damaged = frame
            damaged[offset] ^= 1
            #expect(throws: FormatError.self, "\(name)") { _ = try damaged.withUnsafeBytes { try FrameCodec.decode($0) } }
        }
    }

    @Test func rejectsImpossibleHeadersWithoutAllocating() {
        var frame = encode([UInt8](repeating: 7, count: 100), compress: false)
        // A raw length of 4 GiB must be refused by the header check, before any buffer is sized from it.
        frame.replaceSubrange(32..<36, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: FormatError.self) { _ = try frame.withUnsafeBytes { try FrameHeader.decode($0) } }
        var kind = encode([1], compress: false)
        kind[5] = 99
        #expect(throws: FormatError.self) { _ = try kind.withUnsafeBytes { try FrameHeader.decode($0) } }
        #expect(throws: FormatError.self) { _ = try [UInt8](repeating: 0, count: 47).withUnsafeBytes { try FrameHeader.decode($0) } }
    }

    @Test func malformedLZ4IsAnErrorNotATrap() throws {
        var random = SeededRandom(seed: 23)
        for _ in 0..<2000 {
            let garbage = random.bytes(Int.random(in: 1...200, using: &random))
            var out = [UInt8](repeating: 0, count: Int.random(in: 1...1000, using: &random))
            do {
                try garbage.withUnsafeBytes { source in try out.withUnsafeMutableBytes { try LZ4Codec.decompress(source, into: $0) } }
            } catch is FormatError {}
        }
    }
}

@Suite struct StructureTests {
    @Test func superblockRoundTripsAndDetectsDamage() throws {
        let block = Superblock(storeID: StoreID(high: 1, low: 2), epoch: 9, checkpointLSN: 77,
                               root: FrameAddress(segment: 3, offset: 4096, length: 200))
        let bytes = block.encoded()
        #expect(bytes.count == Superblock.encodedSize)
        #expect(try Superblock.decode(bytes) == block)
        for index in bytes.indices {
            var damaged = bytes
            damaged[index] ^= 0x80
            #expect(throws: FormatError.self, "byte \(index)") { _ = try Superblock.decode(damaged) }
        }
    }

    @Test func segmentHeaderRoundTrips() throws {
        let header = SegmentHeader(storeID: StoreID(high: 5, low: 6), segmentID: 12, previousSegmentID: 11, previousSegmentEnd: 999)
        #expect(try SegmentHeader.decode(header.encoded()) == header)
        var damaged = header.encoded()
        damaged[33] ^= 1
        #expect(throws: FormatError.self) { _ = try SegmentHeader.decode(damaged) }
    }

    @Test func checkpointRootAndChunksRoundTrip() throws {
        let location = PageLocation(segment: 2, offset: 64, length: 96, lsn: 5)
        let root = CheckpointRoot(lsn: 5, nextPageID: 2000, chunkEntries: 1024, chunks: [location, .none],
                                  segments: [.init(segmentID: 2, totalBytes: 1000, liveBytes: 160)])
        #expect(try CheckpointRoot.decode(root.encoded()) == root)
        let entries = (0..<1024).map { $0 % 3 == 0 ? location : .none }
        #expect(try TableChunkCodec.decode(TableChunkCodec.encode(entries), entries: 1024) == entries)
        // A count that does not match the bytes is refused before anything is allocated for it.
        var lying = root.encoded()
        lying.replaceSubrange(20..<24, with: [0xFF, 0xFF, 0xFF, 0x7F])
        #expect(throws: FormatError.self) { _ = try CheckpointRoot.decode(lying) }
    }

    @Test func commitRecordRoundTrips() throws {
        let record = CommitRecord(frameCount: 3, durableSegment: 4, durableOffset: 512, nextPageID: 99)
        #expect(try CommitRecord.decode(record.encoded()) == record)
        #expect(throws: FormatError.self) { _ = try CommitRecord.decode(Array(record.encoded().dropLast())) }
    }

    @Test func randomBytesNeverTrapTheDecoders() {
        let seed = SeededRandom.seed(default: 24)
        print("randomBytesNeverTrapTheDecoders seed \(seed)")
        var random = SeededRandom(seed: seed)
        for _ in 0..<5000 {
            let bytes = random.bytes(Int.random(in: 0...300, using: &random))
            _ = try? Superblock.decode(bytes)
            _ = try? SegmentHeader.decode(bytes)
            _ = try? CommitRecord.decode(bytes)
            _ = try? CheckpointRoot.decode(bytes)
            _ = try? TableChunkCodec.decode(bytes, entries: bytes.count / PageLocation.encodedSize)
            _ = try? bytes.withUnsafeBytes { try FrameCodec.decode($0) }
        }
    }
}

@Suite struct TableChunkDecodeTests {
    /// The in-place decoder recovery uses returns the entries and counts the present ones; an
    /// invalid entry or a payload of the wrong size is a `FormatError`.
    @Test func decodesInPlaceAndCountsPresentEntries() throws {
        var entries = [PageLocation](repeating: .none, count: 1024)
        for slot in stride(from: 3, to: 1024, by: 7) {
            entries[slot] = PageLocation(segment: 2, offset: UInt32(64 + slot * 64), length: 64, lsn: UInt64(slot + 1))
        }
        let bytes = TableChunkCodec.encode(entries)
        var present = 0
        let decoded = try bytes.withUnsafeBytes { raw in
            try [PageLocation](unsafeUninitializedCapacity: 1024) { buffer, initialized in
                present = try TableChunkCodec.decode(raw, into: buffer)
                initialized = 1024
            }
        }
        #expect(decoded == entries)
        #expect(present == entries.filter { !$0.isNone }.count)
        var damaged = bytes
        damaged[3 * PageLocation.encodedSize + 12] = 1  // reserved field of a present entry
        #expect(throws: FormatError.self) { try TableChunkCodec.decode(damaged, entries: 1024) }
        #expect(throws: FormatError.self) { try TableChunkCodec.decode(Array(bytes.dropLast()), entries: 1024) }
    }
}
