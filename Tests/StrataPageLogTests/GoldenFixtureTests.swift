import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Golden stores of every shipped format version, committed under `Fixtures/` and never
/// regenerated. Each folder holds a store and `expected.txt` (page id, length, CRC32C of
/// every page). A test opens a copy of each and checks every page.
@Suite struct GoldenFixtureTests {
    static let fixtures = String(#filePath.prefix(upTo: #filePath.lastIndex(of: "/")!)) + "/Fixtures"

    @Test(arguments: [("v1-basic", 1 as UInt16), ("v2-basic", 2), ("v3-basic", 3)])
    func opensTheFixture(name: String, formatVersion: UInt16) throws {
        let source = Self.fixtures + "/" + name
        let fs = POSIXFileSystem()
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        // Opening may write (a new segment after a cut tail): work on a copy.
        for file in try fs.contentsOfDirectory(source) where file != "expected.txt" {
            let input = try fs.openFile(source + "/" + file, create: false)
            let bytes = try input.read(count: Int(try input.size()), at: 0)
            try fs.openFile(directory + "/" + file, create: true).write(bytes, at: 0)
        }
        let manifest = try fs.openFile(source + "/expected.txt", create: false)
        let text = String(decoding: try manifest.read(count: Int(try manifest.size()), at: 0), as: UTF8.self)
        var expected: [UInt64: (length: Int, crc: UInt32)] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let id = UInt64(fields[0]), let length = Int(fields[1]), let crc = UInt32(fields[2], radix: 16) else {
                Issue.record("bad manifest line: \(line)")
                continue
            }
            expected[id] = (length, crc)
        }
        #expect(!expected.isEmpty)
        // Every frame is in the fixture's format; format 2 compresses large pages in halves,
        // format 3 stores pages read in part in blocks, and each codec occurs only in its format.
        var codecs: [PayloadCodec: Int] = [:]
        for file in try fs.contentsOfDirectory(directory) where file.hasSuffix(".seg") {
            let bytes = try fs.openFile(directory + "/" + file, create: false).read(count: 1 << 24, at: 0)
            #expect(try SegmentHeader.decode(Array(bytes.prefix(SegmentHeader.size))).formatVersion == formatVersion, "\(file)")
            var offset = SegmentHeader.size
            while offset + FrameHeader.size <= bytes.count,
                  let header = try? bytes.withUnsafeBytes({ try FrameHeader.decode(UnsafeRawBufferPointer(rebasing: $0[offset...])) }) {
                #expect(UInt16(header.formatVersion) == formatVersion, "\(file) at \(offset)")
                codecs[header.codec, default: 0] += 1
                offset += header.frameLength
            }
        }
        #expect(codecs[.lz4, default: 0] > 0 || codecs[.lz4Halves, default: 0] > 0)
        #expect((codecs[.lz4Halves, default: 0] > 0) == (formatVersion == 2), "\(codecs)")
        #expect((codecs[.lz4Blocks, default: 0] > 0) == (formatVersion >= 3), "\(codecs)")
        let log = try PageLog.open(directory: directory, fileSystem: fs)
        #expect(log.formatVersion == formatVersion)
        #expect(log.recoveryReport.replayedTransactions > 0, "the fixture has an uncheckpointed tail to replay")
        let snapshot = try log.snapshot()
        #expect(Set(try snapshot.pageIDs()) == Set(expected.keys))
        for (id, entry) in expected {
            let page = try #require(try snapshot.read(id))
            #expect(page.bytes.count == entry.length && CRC32C.checksum(page.bytes) == entry.crc, "page \(id)")
        }
        // Writing keeps the store's format: an old store stays readable by the libraries that
        // wrote it.
        var random = SeededRandom(seed: 3)
        try log.write { try $0.write(try $0.allocatePageID(), bytes: random.recordLikeBytes(3_000), directoryLength: 300) }
        try log.checkpoint()
        try log.close()
        let reopened = try PageLog.open(directory: directory, fileSystem: fs)
        #expect(reopened.formatVersion == formatVersion)
        try reopened.close()
        for file in try fs.contentsOfDirectory(directory) where file.hasSuffix(".seg") {
            let bytes = try fs.openFile(directory + "/" + file, create: false).read(count: SegmentHeader.size, at: 0)
            #expect(try SegmentHeader.decode(bytes).formatVersion == formatVersion, "\(file) after writing")
        }
    }

    /// Writes a new fixture when STRATA_WRITE_FIXTURE names an empty folder. Used once per
    /// format version; existing fixtures are never regenerated.
    @Test func writeFixtureWhenAsked() throws {
        guard let target = getenv("STRATA_WRITE_FIXTURE").map({ String(cString: $0) }) else { return }
        var options = PageLogOptions()
        options.segmentSize = 16 << 10
        options.automaticCompaction = false
        let log = try PageLog.open(directory: target, options: options)
        var random = SeededRandom(seed: 0xF1C5)
        var ids: [UInt64] = []
        for round in 0..<40 {
            try log.write(durability: round % 4 == 0 ? .durable : .relaxed) { txn in
                // Format 2: a page large enough to be compressed in halves; format 3: stored
                // for partial reads (a directory raw, the rest in blocks).
                let large = try txn.allocatePageID()
                ids.append(large)
                try txn.write(large, entityID: 2, schemaVersion: 1, bytes: random.recordLikeBytes(Int.random(in: 1_100...4_000, using: &random)),
                              directoryLength: Int.random(in: 0...600, using: &random))
                for _ in 0..<3 {
                    if ids.count < 30 || Bool.random(using: &random) {
                        let id = try txn.allocatePageID()
                        ids.append(id)
                        try txn.write(id, entityID: UInt32(id % 3), schemaVersion: 1, bytes: randomPage(&random, maximum: 2000))
                    } else {
                        try txn.write(ids.randomElement(using: &random)!, entityID: 1, schemaVersion: 2, bytes: randomPage(&random, maximum: 2000))
                    }
                }
            }
            if round == 20 { try log.compact(targetAmplification: 1.0) }
            if round % 10 == 9 { try log.checkpoint() }
        }
        // A tail after the last checkpoint: a free and a fixed page, then no clean close.
        try log.write { txn in
            try txn.free(ids[0])
            try txn.write(2, bytes: Array("fixed page".utf8))
        }
        try log.write { try $0.write(ids[1], bytes: random.recordLikeBytes(3000)) }
        var manifest = "# page-id length crc32c(hex) of every page after recovery\n"
        let snapshot = try log.snapshot()
        for id in try snapshot.pageIDs() {
            let bytes = try #require(try snapshot.read(id)).bytes
            manifest += "\(id) \(bytes.count) \(String(CRC32C.checksum(bytes), radix: 16))\n"
        }
        try POSIXFileSystem().openFile(target + "/expected.txt", create: true).write(Array(manifest.utf8), at: 0)
        print("fixture written to \(target); the store was left open (not checkpointed) on purpose")
    }
}
