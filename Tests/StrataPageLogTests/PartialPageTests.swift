import Dispatch
import Synchronization
import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// `Snapshot.withPartialPage`: every prefix is exactly the start of what a full read returns,
/// and a damaged frame is a typed error however little of the page is asked for.
@Suite struct PartialPageTests {
    @Test func everyPrefixIsTheStartOfTheFullPage() throws {
        let seed = SeededRandom.seed(default: 0x9A27)
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        var pages: [UInt64: [UInt8]] = [:]
        for _ in 0..<20 {
            try log.write(durability: .relaxed) { transaction in
                for index in 0..<5 {
                    let id = try transaction.allocatePageID()
                    // Random pages (stored raw or in one block), and compressible ones: in one
                    // block, or, written with a directory length, stored for partial reads
                    // (format 3: the directory raw, the rest in blocks).
                    let bytes = index % 2 == 0 ? randomPage(&random, maximum: 6000)
                        : random.recordLikeBytes(Int.random(in: 1...6000, using: &random))
                    let directory = index % 4 == 1 ? Int.random(in: 0...min(bytes.count, 800), using: &random) : nil
                    try transaction.write(id, bytes: bytes, directoryLength: directory)
                    pages[id] = bytes
                }
            }
        }
        let snapshot = try log.snapshot()
        var blocked = 0
        for (id, bytes) in pages.sorted(by: { $0.key < $1.key }) {
            #expect(try snapshot.read(id)?.bytes == bytes)
            let lengths = (0..<6).map { _ in Int.random(in: 0...bytes.count, using: &random) } + [0, bytes.count, min(8, bytes.count)]
            let present = try snapshot.withPartialPage(id) { page in
                #expect(page.count == bytes.count)
                for length in lengths {  // longer and shorter, in any order
                    let prefix = Array(try page.prefix(length))
                    #expect(prefix == Array(bytes[0..<length]), "seed \(seed) page \(id) prefix \(length)")
                }
                #expect(throws: PageLogError.self) { _ = try page.prefix(bytes.count + 1) }
            }
            #expect(present)
            // Ranges anywhere, in any order: from the first block, the second, or both.
            _ = try snapshot.withPartialPage(id) { page in
                if page.directLength > 0 && page.directLength < page.count { blocked += 1 }
                for _ in 0..<8 {
                    let start = Int.random(in: 0...bytes.count, using: &random)
                    let range = start..<Int.random(in: start...bytes.count, using: &random)
                    let read = Array(try page.bytes(range))
                    #expect(read == Array(bytes[range]), "seed \(seed) page \(id) bytes \(range)")
                }
                // Empty ranges anywhere (past a raw directory too) are empty.
                for start in [0, bytes.count / 2, bytes.count] { #expect(try page.bytes(start..<start).isEmpty) }
                let tail = max(0, bytes.count - 10)..<bytes.count
                let read = Array(try page.bytes(tail))
                #expect(read == Array(bytes[tail]))
                #expect(throws: PageLogError.self) { _ = try page.bytes(0..<(bytes.count + 1)) }
            }
        }
        #expect(blocked > 10, "pages stored for partial reads: \(blocked)")
        #expect(try !snapshot.withPartialPage(99_999) { _ in Issue.record("no such page") })
    }

    @Test func damageAnywhereInTheFrameIsDetected() throws {
        let seed = SeededRandom.seed(default: 0xDA3A)
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        var pages: [UInt64: [UInt8]] = [:]
        try log.write { transaction in
            for _ in 0..<8 {
                let id = try transaction.allocatePageID()
                let bytes = random.recordLikeBytes(Int.random(in: 500...4000, using: &random))
                try transaction.write(id, bytes: bytes)
                pages[id] = bytes
            }
        }
        let snapshot = try log.snapshot()
        let locations = try pages.keys.sorted().map { ($0, try snapshot.location(of: $0)) }
        for (id, location) in locations {
            // Damage the last stored byte or a random one: far past the few bytes asked for.
            let hex = String(location.segment, radix: 16)
            let path = joinPath(storePath, String(repeating: "0", count: 16 - hex.count) + hex + ".seg")
            let original = try #require(fs.contents(of: path))
            var damaged = original
            let header = FrameHeader.size
            let position = Int(location.offset) + (Bool.random(using: &random)
                ? Int.random(in: header..<Int(location.length), using: &random) : Int.random(in: 0..<header, using: &random))
            damaged[position] ^= UInt8.random(in: 1...255, using: &random)
            fs.setContents(of: path, to: damaged)  // the open log reads the damaged bytes
            #expect("seed \(seed) page \(id) byte \(position)",
                    performing: { _ = try snapshot.withPartialPage(id) { page in _ = try page.prefix(min(8, page.count)) } },
                    throws: { ($0 as? PageLogError)?.isCorruption == true })
            #expect(throws: PageLogError.self) { _ = try snapshot.read(id) }  // as a full read
            fs.setContents(of: path, to: original)
            var restored: [UInt8]?
            _ = try snapshot.withPartialPage(id) { page in restored = Array(try page.prefix(page.count)) }
            #expect(restored == pages[id])
        }
    }

    /// A page stored for partial reads (format 3) is checked as far as it is read: damage to
    /// its table or raw directory fails every read; damage to one block fails the reads that
    /// need that block, and every full read, and no other partial read.
    @Test func aPartialReadChecksWhatItReads() throws {
        let seed = SeededRandom.seed(default: 0x3C4E)
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        let bytes = random.recordLikeBytes(4096)
        let id = try log.write { transaction in
            let id = try transaction.allocatePageID()
            try transaction.write(id, bytes: bytes, directoryLength: 440)
            return id
        }
        let snapshot = try log.snapshot()
        let location = try snapshot.location(of: id)
        let hex = String(location.segment, radix: 16)
        let path = joinPath(storePath, String(repeating: "0", count: 16 - hex.count) + hex + ".seg")
        let original = try #require(fs.contents(of: path))
        let frameStart = Int(location.offset)
        let header = try original.withUnsafeBytes { try FrameHeader.decode(UnsafeRawBufferPointer(rebasing: $0[frameStart...])) }
        try #require(header.codec == .lz4Blocks)
        let storedStart = frameStart + FrameHeader.size
        let layout = try original.withUnsafeBytes {
            try FrameCodec.BlockLayout(rawLength: 4096, stored: UnsafeRawBufferPointer(rebasing: $0[storedStart..<(storedStart + Int(header.storedLength))]))
        }
        #expect(layout.blockCount == 4 && layout.prefixLength == 440)
        func read(_ range: Range<Int>) throws -> [UInt8] {
            var result: [UInt8] = []
            _ = try snapshot.withPartialPage(id) { page in
                #expect(page.directLength == 440)
                result = Array(try page.bytes(range))
            }
            return result
        }
        func isCorruption(_ error: any Error) -> Bool { (error as? PageLogError)?.isCorruption == true }
        // Damage to the directory or the table: every read fails.
        for position in [storedStart + 2, storedStart + 9, storedStart + layout.headLength - 1] {
            var damaged = original
            damaged[position] ^= 0x20
            fs.setContents(of: path, to: damaged)
            #expect("seed \(seed) byte \(position)", performing: { _ = try read(0..<8) }, throws: isCorruption)
            #expect("seed \(seed) byte \(position)", performing: { _ = try snapshot.read(id) }, throws: isCorruption)
        }
        // Damage to one block: the reads that need it fail, the others read the page's bytes.
        var blockStart = storedStart + layout.headLength
        for index in 0..<layout.blockCount {
            var damaged = original
            damaged[blockStart + Int.random(in: 0..<layout.entry(index).storedLength, using: &random)] ^= 0x01
            fs.setContents(of: path, to: damaged)
            #expect(try read(0..<440) == Array(bytes[0..<440]))
            for other in 0..<layout.blockCount {
                let range = layout.rawRange(other).lowerBound..<(layout.rawRange(other).lowerBound + 50)
                if other == index {
                    #expect("seed \(seed) block \(index)", performing: { _ = try read(range) }, throws: isCorruption)
                } else {
                    #expect(try read(range) == Array(bytes[range]), "seed \(seed) block \(index) read from block \(other)")
                }
            }
            // A range across the directory and the damaged block.
            #expect("seed \(seed) block \(index)", performing: { _ = try read(400..<layout.rawRange(index).lowerBound + 1) }, throws: isCorruption)
            #expect("seed \(seed) block \(index)", performing: { _ = try snapshot.read(id) }, throws: isCorruption)
            blockStart += layout.entry(index).storedLength
        }
        fs.setContents(of: path, to: original)
        #expect(try read(0..<4096) == bytes)
        #expect(try snapshot.read(id)?.bytes == bytes)
    }

    @Test func lz4PrefixesMatchAndMalformedInputThrows() throws {
        var random = SeededRandom(seed: SeededRandom.seed(default: 0x1274))
        for _ in 0..<50 {
            let source = random.recordLikeBytes(Int.random(in: 1...5000, using: &random))
            var compressed = [UInt8](repeating: 0, count: LZ4Codec.bound(source.count))
            let size = try #require(source.withUnsafeBytes { src in compressed.withUnsafeMutableBytes { LZ4Codec.compress(src, into: $0) } })
            compressed.removeLast(compressed.count - size)
            for length in [1, source.count, Int.random(in: 1...source.count, using: &random)] {
                var prefix = [UInt8](repeating: 0, count: length)
                try compressed.withUnsafeBytes { src in try prefix.withUnsafeMutableBytes { try LZ4Codec.decompressPrefix(src, into: $0) } }
                #expect(prefix == Array(source[0..<length]))
            }
            // Random garbage: an error or some bytes, never a trap or a read past the input.
            let garbage = random.bytes(Int.random(in: 1...64, using: &random))
            var out = [UInt8](repeating: 0, count: 256)
            _ = try? garbage.withUnsafeBytes { src in try out.withUnsafeMutableBytes { try LZ4Codec.decompressPrefix(src, into: $0) } }
            // Cut input: fewer bytes than asked is an error.
            let cut = Array(compressed[0..<max(1, compressed.count / 3)])
            var whole = [UInt8](repeating: 0, count: source.count)
            if source.count > 64 {
                #expect(throws: FormatError.self) {
                    try cut.withUnsafeBytes { src in try whole.withUnsafeMutableBytes { try LZ4Codec.decompressPrefix(src, into: $0) } }
                }
            }
        }
    }
}

@Suite struct ScratchBufferTests {
    /// A nested or concurrent user never shares the buffer: each call's bytes stay its own
    /// until it returns, whether it got the reused buffer or a temporary one.
    @Test func usersNeverShareTheBuffer() throws {
        let scratch = ScratchBuffer()
        try scratch.with(byteCount: 4096) { outer in
            outer.initializeMemory(as: UInt8.self, repeating: 0xAA)
            try scratch.with(byteCount: 4096) { inner in
                #expect(inner.baseAddress != outer.baseAddress, "a nested call got the taken buffer")
                inner.initializeMemory(as: UInt8.self, repeating: 0x55)
            }
            #expect(outer.allSatisfy { $0 == 0xAA })
        }
        // Too large to keep: a temporary allocation of the size asked.
        try scratch.with(byteCount: ScratchBuffer.largestKept + 1) { #expect($0.count == ScratchBuffer.largestKept + 1) }
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            let pattern = UInt8(worker + 1)
            for round in 0..<2_000 {
                try? scratch.with(byteCount: 512 + (round % 7) * 500) { buffer in
                    buffer.initializeMemory(as: UInt8.self, repeating: pattern)
                    if !buffer.allSatisfy({ $0 == pattern }) { failures.add(1, ordering: .relaxed) }
                }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }
}
