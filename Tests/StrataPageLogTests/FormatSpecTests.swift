import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// Docs/FileFormat.md's page log tables against the code and the golden stores: the format
/// versions the spec lists are the ones the decoders accept, and every frame of every golden
/// store — and every frame this library appends to a copy of each — uses a codec the
/// "Frame kinds" table lists for its kind and format.
@Suite struct FormatSpecTests {
    /// `Tests/`, two levels up from this file.
    static let tests = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(2).joined(separator: "/")
    static let spec = tests + "/../Docs/FileFormat.md"

    static func specText() throws -> String {
        let file = try POSIXFileSystem().openFile(spec, create: false)
        return String(decoding: try file.read(count: Int(try file.size()), at: 0), as: UTF8.self)
    }

    /// The codecs FileFormat.md's "Frame kinds" table lists as written, by kind and format.
    static func documentedCodecs(_ kind: FrameKind, format: UInt8) -> Set<PayloadCodec> {
        switch kind {
        case .page: return format == 2 ? [.none, .lz4, .lz4Halves] : format >= 3 ? [.none, .lz4, .lz4Blocks] : [.none, .lz4]
        case .free, .commit: return [.none]
        case .tableChunk: return format == 2 ? [.none, .lz4Halves] : [.none, .lz4]
        case .checkpoint: return format == 2 ? [.none, .lz4, .lz4Halves] : [.none, .lz4]
        }
    }

    /// The first numbers of the rows of the first table after `heading`.
    static func firstColumn(after heading: String, in text: String) throws -> [Int] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0 == heading }, "no \(heading) in the spec")
        var numbers: [Int] = [], inTable = false
        for line in lines[(start + 1)...] {
            if line.hasPrefix("|") {
                inTable = true
                let cell = line.dropFirst().prefix { $0 != "|" }.filter { $0 != " " }
                if let number = Int(cell) { numbers.append(number) }
            } else if inTable {
                break
            }
        }
        return numbers
    }

    /// The versions `decode` accepts among 0 ... 9, given an encoder of each version.
    static func accepted(_ decodes: (UInt16) -> Bool) -> [Int] {
        (0...9).filter { decodes(UInt16($0)) }
    }

    @Test func documentedFormatVersionsAreTheOnesTheDecodersAccept() throws {
        let text = try Self.specText()
        let documented = try Self.firstColumn(after: "## Versions", in: text)
        #expect(documented == Array(1...Int(currentFormatVersion)), "FileFormat.md \"Versions\" lists \(documented)")
        let superblocks = Self.accepted { version in
            var block = Superblock(storeID: StoreID(high: 1, low: 2), epoch: 1, checkpointLSN: 1,
                                   root: FrameAddress(segment: 1, offset: 64, length: 104))
            block.formatVersion = version
            return (try? Superblock.decode(block.encoded())) != nil
        }
        let segments = Self.accepted { version in
            var header = SegmentHeader(storeID: StoreID(high: 1, low: 2), segmentID: 1, previousSegmentID: 0, previousSegmentEnd: 0)
            header.formatVersion = version
            return (try? SegmentHeader.decode(header.encoded())) != nil
        }
        let frames = Self.accepted { version in
            var header = FrameHeader(kind: .commit, codec: .none, pageID: 0, lsn: 2, entityID: 0, schemaVersion: 0,
                                     rawLength: 32, storedLength: 32)
            header.formatVersion = UInt8(version)
            var bytes = [UInt8](repeating: 0, count: FrameHeader.size)
            bytes.withUnsafeMutableBytes { header.write(to: $0) }
            return (try? bytes.withUnsafeBytes { try FrameHeader.decode($0) }) != nil
        }
        #expect(superblocks == documented)
        #expect(segments == documented)
        #expect(frames == documented)
        // Every "newer than the reader's" bound the spec states is the newest version.
        let newest = String(currentFormatVersion)
        var bounds: [Substring] = []
        for line in text.split(separator: "\n")
        where line.contains("unsupportedFormatVersion") || line.contains("version byte") || line.contains("reader's newest") {
            var rest = line[...]
            while let range = rest.firstRange(of: "> ") ?? rest.firstRange(of: "newest (") ?? rest.firstRange(of: "greater than ") {
                rest = rest[range.upperBound...]
                let number = rest.prefix { $0.isNumber }
                if !number.isEmpty { bounds.append(number) }
            }
        }
        #expect(bounds.count >= 4, "found \(bounds) in the spec")
        #expect(bounds.allSatisfy { $0 == newest }, "bounds in the spec: \(bounds), newest version \(newest)")
    }

    /// Every intact frame of a segment file, in order, up to the first that is not.
    static func frames(of bytes: [UInt8]) -> [FrameHeader] {
        var headers: [FrameHeader] = []
        var offset = SegmentHeader.size
        while offset + FrameHeader.size <= bytes.count {
            guard let header = try? bytes.withUnsafeBytes({ try FrameHeader.decode(UnsafeRawBufferPointer(rebasing: $0[offset...])) }),
                  offset + header.frameLength <= bytes.count else { break }
            let intact = bytes.withUnsafeBytes { raw in
                FrameCodec.isIntact(header, headerBytes: UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + FrameHeader.size)]),
                                    stored: UnsafeRawBufferPointer(rebasing: raw[(offset + FrameHeader.size)..<(offset + FrameHeader.size + Int(header.storedLength))]))
            }
            guard intact else { break }
            headers.append(header)
            offset += header.frameLength
        }
        return headers
    }

    /// Checks every frame of the segments in `directory` against the table; returns the
    /// (kind, codec) pairs seen.
    static func checkFrames(in directory: String, _ fs: POSIXFileSystem) throws -> Set<String> {
        var seen: Set<String> = []
        for name in try fs.contentsOfDirectory(directory) where name.hasSuffix(".seg") {
            let file = try fs.openFile(directory + "/" + name, create: false)
            for header in frames(of: try file.read(count: Int(try file.size()), at: 0)) {
                let format = header.formatVersion
                #expect(documentedCodecs(header.kind, format: format).contains(header.codec),
                        "\(directory)/\(name): a \(header.kind) frame of format \(format) with codec \(header.codec)")
                // Format 2 compresses in halves exactly from 1 KiB on (FileFormat.md, "Codecs").
                if format == 2 && header.codec == .lz4 { #expect(header.rawLength < 1_024) }
                if header.codec == .lz4Halves { #expect(header.rawLength >= 1_024) }
                seen.insert("\(format) \(header.kind) \(header.codec)")
            }
        }
        return seen
    }

    @Test func framesUseTheCodecsTheSpecLists() throws {
        let fs = POSIXFileSystem()
        var seen: Set<String> = []
        // The record layer's golden stores, as committed.
        let recordFixtures = Self.tests + "/StrataTests/Fixtures"
        for name in try fs.contentsOfDirectory(recordFixtures) {
            seen.formUnion(try Self.checkFrames(in: recordFixtures + "/" + name, fs))
        }
        // The page log's golden stores, and what this library appends to a copy of each.
        var random = SeededRandom(seed: 0x5_9EC)
        for name in ["v1-basic", "v2-basic", "v3-basic"] {
            let source = GoldenFixtureTests.fixtures + "/" + name
            let directory = try temporaryDirectory()
            defer { removeDirectory(directory) }
            for file in try fs.contentsOfDirectory(source) where file != "expected.txt" {
                let input = try fs.openFile(source + "/" + file, create: false)
                try fs.openFile(directory + "/" + file, create: true).write(try input.read(count: Int(try input.size()), at: 0), at: 0)
            }
            let log = try PageLog.open(directory: directory, fileSystem: fs)
            try log.write { transaction in
                let leaf = try transaction.allocatePageID()
                try transaction.write(leaf, entityID: 1, schemaVersion: 1, bytes: random.recordLikeBytes(3_000), directoryLength: 200)
                try transaction.write(try transaction.allocatePageID(), bytes: random.recordLikeBytes(3_000))
                try transaction.write(try transaction.allocatePageID(), bytes: random.recordLikeBytes(300))
                try transaction.write(try transaction.allocatePageID(), bytes: (0..<200).map { _ in UInt8.random(in: 0...255, using: &random) })
            }
            try log.write { try $0.free(17) }  // a page of every fixture
            try log.checkpoint()
            try log.close()
            seen.formUnion(try Self.checkFrames(in: directory, fs))
        }
        // Every format wrote table chunks and checkpoint roots, compressed, as the table says.
        for expected in ["1 table chunk lz4", "1 checkpoint lz4", "2 table chunk lz4Halves", "3 table chunk lz4", "3 checkpoint lz4",
                         "2 page lz4Halves", "3 page lz4Blocks", "1 free none", "1 commit none", "3 commit none"] {
            #expect(seen.contains(expected), "no \(expected) frame; seen: \(seen.sorted())")
        }
    }
}
