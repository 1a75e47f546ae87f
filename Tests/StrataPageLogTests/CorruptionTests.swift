import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// Damaged stores: opening and reading either returns exactly the committed data or throws
/// a typed error — never a trap, a hang, or wrong data.
@Suite struct CorruptionTests {
    enum Outcome: Hashable { case correct, typedError }

    /// Opens a copy of `files` and reads every page. Returns the outcome, or records an issue
    /// when the store returns data that differs from `expected`.
    static func check(_ files: [String: [UInt8]], expected: [UInt64: [UInt8]], context: @autoclosure () -> String,
                      alsoAccept: [UInt64: [UInt8]]? = nil) -> Outcome? {
        let fs = MemoryFileSystem(files: files)
        do {
            let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
            let snapshot = try log.snapshot()
            // Scans read through SequentialPageReader: it must verify exactly as Snapshot.read does.
            let reader = SequentialPageReader(snapshot)
            var viaReader: [UInt64: [UInt8]] = [:]
            for id in try snapshot.pageIDs() {
                var bytes: [UInt8]?
                if try reader.withPage(id, { bytes = Array($0); return true }) == true { viaReader[id] = bytes }
            }
            var recovered: [UInt64: [UInt8]] = [:]
            for id in try snapshot.pageIDs() {
                guard let page = try snapshot.read(id) else {
                    Issue.record("page \(id) listed but unreadable (\(context()))")
                    return nil
                }
                recovered[id] = page.bytes
            }
            if viaReader != recovered {
                Issue.record("SequentialPageReader read \(viaReader.count) pages unlike Snapshot.read (\(context()))")
                return nil
            }
            if recovered == expected { return .correct }
            if let alsoAccept, recovered == alsoAccept { return .correct }
            Issue.record("wrong data without an error: \(recovered.count) pages, expected \(expected.count) (\(context()))")
            return nil
        } catch let error as PageLogError {
            switch error {
            case .corruption, .unsupportedFormatVersion: return .typedError
            default:
                Issue.record("unexpected error \(error) (\(context()))")
                return nil
            }
        } catch {
            Issue.record("untyped error \(error) (\(context()))")
            return nil
        }
    }

    /// Builds a store on an in-memory file system and closes it cleanly.
    static func makeStore(seed: UInt64, transactions: Int, pagesPerTransaction: Int, maximumPage: Int,
                          close: Bool = true) throws -> (files: [String: [UInt8]], expected: [UInt64: [UInt8]], beforeLast: [UInt64: [UInt8]]) {
        let fs = MemoryFileSystem()
        var random = SeededRandom(seed: seed)
        var expected: [UInt64: [UInt8]] = [:]
        var beforeLast: [UInt64: [UInt8]] = [:]
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        for round in 0..<transactions {
            beforeLast = expected
            try log.write { txn in
                for _ in 0..<pagesPerTransaction {
                    if !expected.isEmpty && round % 3 == 2 {
                        let id = expected.keys.sorted()[Int.random(in: 0..<expected.count, using: &random)]
                        let bytes = randomPage(&random, maximum: maximumPage)
                        try txn.write(id, bytes: bytes)
                        expected[id] = bytes
                    } else {
                        let id = try txn.allocatePageID()
                        let bytes = randomPage(&random, maximum: maximumPage)
                        try txn.write(id, bytes: bytes)
                        expected[id] = bytes
                    }
                }
            }
            if round % 10 == 9 { try log.checkpoint() }
        }
        if close { try log.close() }
        fs.syncEverything()
        return (fs.allFiles(), expected, beforeLast)
    }

    @Test func everyByteOfASmallStoreFlipped() throws {
        let (files, expected, _) = try Self.makeStore(seed: 11, transactions: 6, pagesPerTransaction: 2, maximumPage: 120)
        var outcomes: [Outcome: Int] = [:]
        var flips = 0
        for (path, bytes) in files.sorted(by: { $0.key < $1.key }) {
            for index in bytes.indices {
                var damaged = files
                damaged[path]![index] ^= 0x5A
                flips += 1
                if let outcome = Self.check(damaged, expected: expected, context: "byte \(index) of \(path)") {
                    outcomes[outcome, default: 0] += 1
                }
            }
        }
        print("everyByteOfASmallStoreFlipped: \(flips) flips over \(files.values.reduce(0) { $0 + $1.count }) bytes; outcomes \(outcomes)")
        #expect(outcomes.values.reduce(0, +) == flips)
        #expect(outcomes[.typedError, default: 0] > 0)
    }

    @Test func seededDamageToALargerStore() throws {
        let seed = SeededRandom.seed(default: 0xC0FF_EE01)
        print("seededDamageToALargerStore seed \(seed)")
        let (files, expected, _) = try Self.makeStore(seed: seed, transactions: 60, pagesPerTransaction: 5, maximumPage: 1500)
        var random = SeededRandom(seed: seed)
        let paths = files.keys.sorted()
        let total = files.values.reduce(0) { $0 + $1.count }
        var outcomes: [String: [Outcome: Int]] = [:]
        #if DEBUG
        let mutations = 1_000
        #else
        let mutations = 10_000
        #endif
        for iteration in 0..<mutations {
            // Pick a file in proportion to its size.
            var target = Int.random(in: 0..<total, using: &random)
            var path = paths[0]
            for candidate in paths {
                let size = files[candidate]!.count
                if target < size { path = candidate; break }
                target -= size
            }
            var damaged = files
            var bytes = damaged[path]!
            guard !bytes.isEmpty else { continue }
            let kind: String
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                kind = "flip"
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
                }
            case 1:
                kind = "truncate"
                bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
            default:
                kind = "zero"
                let start = Int.random(in: 0..<bytes.count, using: &random)
                let end = min(bytes.count, start + Int.random(in: 1...4096, using: &random))
                for index in start..<end { bytes[index] = 0 }
            }
            damaged[path] = bytes
            if let outcome = Self.check(damaged, expected: expected, context: "mutation \(iteration) (\(kind) in \(path)), seed \(seed)") {
                outcomes[kind, default: [:]][outcome, default: 0] += 1
            }
        }
        print("seededDamageToALargerStore: \(mutations) mutations of a \(total)-byte store in \(paths.count) files; outcomes \(outcomes)")
        #expect(outcomes.values.reduce(0) { $0 + $1.values.reduce(0, +) } == mutations)
    }

    /// A store whose last commits are only in the log tail (no clean close). Damage inside the
    /// final commit is indistinguishable from a torn write and loses only that commit; damage
    /// anywhere else is detected (Docs/Architecture.md, "Torn tail or corruption").
    @Test func damageInAnUncheckpointedTail() throws {
        let (files, expected, beforeLast) = try Self.makeStore(seed: 12, transactions: 14, pagesPerTransaction: 2,
                                                               maximumPage: 300, close: false)
        var outcomes: [Outcome: Int] = [:]
        var random = SeededRandom(seed: 12)
        for (path, bytes) in files.sorted(by: { $0.key < $1.key }) where path.hasSuffix(".seg") {
            for _ in 0..<400 {
                var damaged = files
                damaged[path]![Int.random(in: 0..<bytes.count, using: &random)] ^= 0xFF
                if let outcome = Self.check(damaged, expected: expected, context: "flip in \(path)", alsoAccept: beforeLast) {
                    outcomes[outcome, default: 0] += 1
                }
            }
        }
        print("damageInAnUncheckpointedTail: outcomes \(outcomes)")
        #expect(outcomes[.typedError, default: 0] > 0)
    }

    @Test func aNewerFormatVersionIsATypedError() throws {
        let (files, _, _) = try Self.makeStore(seed: 13, transactions: 2, pagesPerTransaction: 1, maximumPage: 50)
        var damaged = files
        let path = storePath + "/superblock"
        var bytes = damaged[path]!
        // Rewrite both slots with the next format version and a valid checksum, as a newer library would.
        let newer = UInt8(currentFormatVersion + 1)
        for slot in 0..<2 {
            let base = slot * Superblock.slotStride
            guard bytes[base] == UInt8(ascii: "S") else { continue }
            bytes[base + 8] = newer
            let crc = CRC32C.checksum(Array(bytes[base..<(base + Superblock.encodedSize - 4)]))
            withUnsafeBytes(of: crc.littleEndian) { raw in
                for (index, byte) in raw.enumerated() { bytes[base + Superblock.encodedSize - 4 + index] = byte }
            }
        }
        damaged[path] = bytes
        #expect(throws: PageLogError.unsupportedFormatVersion(file: path, found: UInt16(newer), supported: currentFormatVersion)) {
            _ = try PageLog.open(directory: storePath, fileSystem: MemoryFileSystem(files: damaged), options: smallOptions())
        }
    }
}
