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

    /// Format 2 compresses payloads of 1 KiB or more as two independent LZ4 blocks; formats 1
    /// and 3 as one (format 3 stores only pages written with a directory length otherwise).
    /// All decode to the payload, and each half's block expands to its half.
    @Test func format2CompressesLargePayloadsInHalves() throws {
        for length in [100, FrameCodec.halvesMinimum - 1, FrameCodec.halvesMinimum, 4097, 16 << 10] {
            // Record-like text with runs long enough that even 100 bytes compress.
            let payload = (0..<length).map { UInt8(ascii: "a") + UInt8(($0 / 9) % 5) }
            for version: UInt16 in [1, 2, 3] {
                var frame: [UInt8] = []
                payload.withUnsafeBytes { raw in
                    _ = FrameCodec.append(kind: .page, pageID: 42, lsn: 7, payload: raw, compress: true, formatVersion: version, to: &frame)
                }
                let (header, decoded) = try frame.withUnsafeBytes { try FrameCodec.decode($0) }
                #expect(decoded == payload, "\(length) bytes, format \(version)")
                #expect(UInt16(header.formatVersion) == version)
                let halves = version == 2 && length >= FrameCodec.halvesMinimum  // format 3: only pages read in part
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

    /// Format 3 stores a page written with a directory length for partial reads (codec 3): the
    /// directory raw, the rest in LZ4 blocks of `partialReadBlockSize` (raw when LZ4 does not
    /// help), each with its checksum. Every block expands to its part of the page, alone and
    /// in part; formats 1 and 2 never write codec 3.
    @Test func format3StoresPagesReadInPartInBlocks() throws {
        let seed = SeededRandom.seed(default: 0x3B10)
        var random = SeededRandom(seed: seed)
        var stored = 0, rawBlocks = 0, lz4Blocks = 0
        for round in 0..<300 {
            let length = Int.random(in: 64...9000, using: &random)
            var payload = random.recordLikeBytes(length)
            if round % 3 == 0 && length > 2000 {  // an incompressible stretch: some blocks stored raw
                let start = Int.random(in: 0..<(length - 1500), using: &random)
                payload.replaceSubrange(start..<(start + 1500), with: random.bytes(1500))
            }
            let directory = Int.random(in: 0...min(length, 700), using: &random)
            for version: UInt16 in [2, 3] {
                var frame: [UInt8] = []
                payload.withUnsafeBytes { raw in
                    _ = FrameCodec.append(kind: .page, pageID: 9, lsn: 4, payload: raw, compress: true, directoryLength: directory,
                                          formatVersion: version, to: &frame)
                }
                let (header, decoded) = try frame.withUnsafeBytes { try FrameCodec.decode($0) }
                #expect(decoded == payload, "seed \(seed) round \(round) format \(version)")
                guard version == 3 else {
                    #expect(header.codec != .lz4Blocks)
                    continue
                }
                guard header.codec == .lz4Blocks else {
                    #expect(header.codec == .none, "seed \(seed) round \(round): a page read in part is stored in blocks or raw")
                    continue
                }
                stored += 1
                try frame.withUnsafeBytes { raw in
                    let headerBytes = UnsafeRawBufferPointer(rebasing: raw[0..<FrameHeader.size])
                    let storedBytes = UnsafeRawBufferPointer(rebasing: raw[FrameHeader.size..<(FrameHeader.size + Int(header.storedLength))])
                    #expect(FrameCodec.isIntact(header, headerBytes: headerBytes, stored: storedBytes))
                    let layout = try FrameCodec.BlockLayout(rawLength: length, stored: storedBytes)
                    #expect(layout.prefixLength == directory && layout.blockSize == FrameCodec.partialReadBlockSize)
                    #expect(layout.blockCount == (length - directory + layout.blockSize - 1) / layout.blockSize)
                    #expect(Array(layout.prefix) == Array(payload[0..<directory]))
                    for index in 0..<layout.blockCount {
                        let range = layout.rawRange(index)
                        #expect(layout.blockIndex(containing: range.lowerBound) == index && layout.blockIndex(containing: range.upperBound - 1) == index)
                        let block = try layout.verifiedBlock(index)
                        if block.entry.isRaw { rawBlocks += 1 } else { lz4Blocks += 1 }
                        for count in [range.count, Int.random(in: 0...range.count, using: &random)] {
                            var out = [UInt8](repeating: 0, count: count)
                            try out.withUnsafeMutableBytes { try layout.expand(block.bytes, block.entry, index: index, into: $0) }
                            #expect(out == Array(payload[range.lowerBound..<(range.lowerBound + count)]), "seed \(seed) round \(round) block \(index)")
                        }
                    }
                }
            }
            // Without a directory length, format 3 stores a page in one block.
            var whole: [UInt8] = []
            payload.withUnsafeBytes { raw in _ = FrameCodec.append(kind: .page, pageID: 9, lsn: 4, payload: raw, compress: true, to: &whole) }
            #expect(try whole.withUnsafeBytes { try FrameHeader.decode($0) }.codec != .lz4Blocks)
        }
        #expect(stored > 200 && rawBlocks > 10 && lz4Blocks > 500, "seed \(seed): \(stored) pages, \(rawBlocks) raw and \(lz4Blocks) LZ4 blocks")
    }

    /// Damage to a codec 3 frame is found where it is: the header's checksum covers the table
    /// and the raw directory, each block's checksum its block — a partial read that does not
    /// read the damaged block does not see it, a whole read always does.
    @Test func codec3DamageIsFoundWhereItIs() throws {
        var random = SeededRandom(seed: SeededRandom.seed(default: 0x3DA3))
        let payload = random.recordLikeBytes(4096)
        var frame: [UInt8] = []
        payload.withUnsafeBytes { raw in
            _ = FrameCodec.append(kind: .page, pageID: 9, lsn: 4, payload: raw, compress: true, directoryLength: 440, formatVersion: 3, to: &frame)
        }
        let header = try frame.withUnsafeBytes { try FrameHeader.decode($0) }
        try #require(header.codec == .lz4Blocks)
        let end = FrameHeader.size + Int(header.storedLength)
        let layout = try frame.withUnsafeBytes { try FrameCodec.BlockLayout(rawLength: 4096, stored: UnsafeRawBufferPointer(rebasing: $0[FrameHeader.size..<end])) }
        #expect(layout.blockCount == 4)
        let head = FrameHeader.size + layout.headLength
        func check(_ damaged: [UInt8], headIntact: Bool, blockIntact: (Int) -> Bool, _ comment: Comment) throws {
            try damaged.withUnsafeBytes { raw in
                let headerBytes = UnsafeRawBufferPointer(rebasing: raw[0..<FrameHeader.size])
                let stored = UnsafeRawBufferPointer(rebasing: raw[FrameHeader.size..<end])
                #expect(FrameCodec.isHeadIntact(header, headerBytes: headerBytes, stored: stored) == headIntact, comment)
                #expect(!FrameCodec.isIntact(header, headerBytes: headerBytes, stored: stored), comment)
                #expect(throws: FormatError.self, comment) { _ = try FrameCodec.decode(raw) }
                guard headIntact else { return }
                let layout = try FrameCodec.BlockLayout(rawLength: 4096, stored: stored)
                for index in 0..<layout.blockCount {
                    if blockIntact(index) { _ = try layout.verifiedBlock(index) } else {
                        #expect(throws: FormatError.self, comment) { _ = try layout.verifiedBlock(index) }
                    }
                }
            }
        }
        // A byte of the table or of the raw directory: the header's checksum.
        for position in [FrameHeader.size + 1, FrameHeader.size + 13, head - 1, head - 200] {
            var damaged = frame
            damaged[position] ^= 0x10
            try check(damaged, headIntact: false, blockIntact: { _ in true }, "head byte \(position)")
        }
        // A byte of a block: that block's checksum, and no other.
        var position = head
        for index in 0..<layout.blockCount {
            let length = layout.entry(index).storedLength
            var damaged = frame
            damaged[position + Int.random(in: 0..<length, using: &random)] ^= 0x04
            try check(damaged, headIntact: true, blockIntact: { $0 != index }, "block \(index)")
            position += length
        }
        // Codec 3 in a format 2 frame is an invalid header.
        var older = frame
        older[4] = 2
        #expect(throws: FormatError.self) { _ = try older.withUnsafeBytes { try FrameHeader.decode($0) } }
        // A table whose lengths do not add up (the head's checksum made to match): an error.
        var forged = frame
        let first = UInt32(littleEndian: forged.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: FrameHeader.size + 8, as: UInt32.self) })
        withUnsafeBytes(of: (first + 1).littleEndian) { forged.replaceSubrange((FrameHeader.size + 8)..<(FrameHeader.size + 12), with: $0) }
        forged.withUnsafeMutableBytes { raw in
            var fixed = header
            fixed.checksum = FrameHeader.computeChecksum(header: UnsafeRawBufferPointer(rebasing: raw[0..<FrameHeader.size]),
                                                         payload: UnsafeRawBufferPointer(rebasing: raw[FrameHeader.size..<head]))
            fixed.write(to: UnsafeMutableRawBufferPointer(rebasing: raw[0..<FrameHeader.size]))
        }
        try forged.withUnsafeBytes { raw in
            let stored = UnsafeRawBufferPointer(rebasing: raw[FrameHeader.size..<end])
            let header = try FrameHeader.decode(raw)
            #expect(FrameCodec.isHeadIntact(header, headerBytes: UnsafeRawBufferPointer(rebasing: raw[0..<FrameHeader.size]), stored: stored))
            #expect(throws: FormatError.self) { _ = try FrameCodec.BlockLayout(rawLength: 4096, stored: stored) }
            #expect(throws: FormatError.self) { _ = try FrameCodec.decode(raw) }
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

    /// `bound` is liblz4's `LZ4_COMPRESSBOUND`: random bytes (which do not compress) of sizes
    /// around the block sizes the log uses compress into `bound` bytes; sizes LZ4 refuses
    /// bound to 0.
    @Test func boundIsLZ4sWorstCase() {
        var random = SeededRandom(seed: 29)
        for count in [1, 2, 15, 16, 17, 64, 254, 255, 256, 1023, 1024, 1025, 4096, 16_384, 65_536] {
            let source = random.bytes(count)
            #expect(LZ4Codec.bound(count) == count + count / 255 + 16, "size \(count)")
            var destination = [UInt8](repeating: 0, count: LZ4Codec.bound(count))
            let written = source.withUnsafeBytes { source in destination.withUnsafeMutableBytes { LZ4Codec.compress(source, into: $0) } }
            #expect((written ?? 0) > count, "size \(count): random bytes must fit the bound, and not shrink")
        }
        #expect(LZ4Codec.bound(-1) == 0)
        #expect(LZ4Codec.bound(LZ4Codec.maximumInputSize + 1) == 0)
    }

    /// A reused compression state gives the bytes of one-shot compression (`LZ4_compress_default`)
    /// whatever it compressed before — large or small, compressible or not, the same input
    /// again — so the frame pipeline's worker and the writer write the same frames; each
    /// output decompresses to its input.
    @Test func aReusedStateCompressesAsOneShotCompressionDoes() throws {
        let seed = SeededRandom.seed(default: 0x1A4)
        print("FrameTests.aReusedStateCompressesAsOneShotCompressionDoes seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let compressor = try #require(LZ4Compressor())
        let words = ["alpha ", "beta ", "gamma ", "ref ", "1234 ", "lorem ", "ipsum "].map { Array($0.utf8) }
        var previous: [UInt8] = []
        for round in 0..<300 {
            let count = [64, 100, 1024, 1500, 4096, 16_384, 70_000][Int(random.next() % 7)]
            var source: [UInt8]
            switch random.next() % 4 {
            case 0: source = random.bytes(count)  // does not compress
            case 1 where !previous.isEmpty: source = previous  // what the state just compressed
            default:
                source = []
                while source.count < count { source += words[Int(random.next() % UInt64(words.count))] }
                source.removeLast(source.count - count)
            }
            var oneShot = [UInt8](repeating: 0, count: LZ4Codec.bound(source.count))
            var reused = oneShot
            let expected = source.withUnsafeBytes { source in oneShot.withUnsafeMutableBytes { LZ4Codec.compress(source, into: $0) } }
            let written = source.withUnsafeBytes { source in reused.withUnsafeMutableBytes { LZ4Codec.compress(source, into: $0, using: compressor) } }
            let length = try #require(written, "round \(round), seed \(seed)")
            #expect(written == expected && reused[..<length] == oneShot[..<length], "round \(round), seed \(seed)")
            var back = [UInt8](repeating: 0, count: source.count)
            try reused.withUnsafeBytes { stored in
                try back.withUnsafeMutableBytes { try LZ4Codec.decompress(UnsafeRawBufferPointer(rebasing: stored[..<length]), into: $0) }
            }
            #expect(back == source, "round \(round), seed \(seed)")
            previous = source
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
