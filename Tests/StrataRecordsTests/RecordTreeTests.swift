#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataTestSupport

/// Record trees checked against a dictionary, with tiny nodes so a few thousand records make
/// deep trees, many splits, emptied leaves and overflow chains.
@Suite struct RecordTreeTests {
    static func tinyTree() -> RecordTreeOptions {
        var options = RecordTreeOptions()
        options.maximumNodeSize = 512
        options.maximumInlineRecord = 160
        options.overflowChunkSize = 300
        options.dirtyBudget = 16 << 10
        return options
    }

    static let rootPage: UInt64 = 1

    static func saveRoot(_ root: RecordTreeRoot, in transaction: PageLogTransaction) throws {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: root.rootPageID.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: root.count.littleEndian) { bytes.append(contentsOf: $0) }
        try transaction.write(rootPage, bytes: bytes)
    }

    static func loadRoot(_ page: Page?) -> RecordTreeRoot {
        guard let bytes = page?.bytes, bytes.count == 16 else { return .empty }
        return bytes.withUnsafeBytes {
            RecordTreeRoot(rootPageID: UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                           count: UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }

    static func record(_ random: inout SeededRandom) -> [UInt8] {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return []
        case 1: return random.bytes(Int.random(in: 161...1500, using: &random))  // overflow
        default: return random.recordLikeBytes(Int.random(in: 1...120, using: &random))
        }
    }

    /// Calls `body` with `bytes` cut into up to 8 pieces at random places (empty ones too).
    static func withRandomPieces(_ bytes: [UInt8], _ random: inout SeededRandom, _ body: ([UnsafeRawBufferPointer]) throws -> Void) throws {
        let cuts = (0..<Int.random(in: 0...7, using: &random)).map { _ in Int.random(in: 0...bytes.count, using: &random) }.sorted()
        try bytes.withUnsafeBytes { raw in
            let bounds = [0] + cuts + [bytes.count]
            try body(zip(bounds, bounds.dropFirst()).map { UnsafeRawBufferPointer(rebasing: raw[$0..<$1]) })
        }
    }

    /// A record inserted in pieces — a chunk within one piece written straight from it, one
    /// spanning pieces gathered — is stored as the same record inserted whole: the same pages
    /// (chunks, leaf) with the same bytes.
    @Test func aRecordInPiecesIsStoredAsTheSameRecordWhole() throws {
        let seed = SeededRandom.seed(default: 0x91ECE5)
        print("aRecordInPiecesIsStoredAsTheSameRecordWhole seed \(seed)")
        var random = SeededRandom(seed: seed)
        var options = PageLogOptions()
        options.automaticCompaction = false
        /// Every page of a store made by `insert` of each record (ids 1, 2, …), by page id.
        func pages(_ insert: (RecordTreeWriter, UInt64, [UInt8]) throws -> Void, _ records: [[UInt8]]) throws -> [UInt64: [UInt8]] {
            let log = try PageLog.open(directory: "/store", fileSystem: MemoryFileSystem(), options: options)
            try log.write { transaction in
                let tree = RecordTreeWriter(transaction: transaction, root: .empty, entityID: 5, schemaVersion: 1, options: Self.tinyTree())
                for (index, bytes) in records.enumerated() { try insert(tree, UInt64(index + 1), bytes) }
                try Self.saveRoot(try tree.finish(), in: transaction)
            }
            let snapshot = try log.snapshot()
            return try Dictionary(uniqueKeysWithValues: snapshot.pageIDs().map { ($0, try snapshot.read($0)?.bytes ?? []) })
        }
        // Sizes around the chunk size (300): one chunk, exactly two, a byte past, many.
        let records = [161, 299, 300, 301, 600, 601, 2_999, 4_000].map { random.bytes($0) }
        let whole = try pages({ tree, id, bytes in try tree.insert(id, bytes: bytes) }, records)
        #expect(whole.count > 30)
        for round in 0..<20 {
            let inPieces = try pages({ tree, id, bytes in try Self.withRandomPieces(bytes, &random) { try tree.insert(id, pieces: $0) } },
                                     records)
            let same = inPieces == whole  // not printed: thousands of bytes
            #expect(same, "round \(round)")
        }
    }

    /// An overflowed record is read into memory of its own, bound to `SharedRecordBytes.current`
    /// while the caller decodes it: a large data value made from it shares that memory (no
    /// copy), a small one is copied, and the value outlives the reader, the snapshot and the log.
    @Test func largeValuesMadeFromAnOverflowedRecordShareItsMemory() throws {
        var random = SeededRandom(seed: 0x5A4ED)
        let record = random.bytes(3 << 20 | 5)  // three 1 MiB chunks and 5 bytes
        let range = 7..<(7 + 2_000_000)
        var shared: Data?
        do {
            let log = try PageLog.open(directory: "/store", fileSystem: MemoryFileSystem())
            try log.write { transaction in
                let tree = RecordTreeWriter(transaction: transaction, root: .empty, entityID: 5, schemaVersion: 1, options: RecordTreeOptions())
                try tree.insert(1, bytes: record)
                try tree.insert(2, bytes: [1, 2, 3])
                try Self.saveRoot(try tree.finish(), in: transaction)
            }
            let snapshot = try log.snapshot()
            let reader = RecordTreeReader(snapshot: snapshot, root: Self.loadRoot(try snapshot.read(Self.rootPage)), cache: NodeCache(budget: 64 << 10))
            let read = try reader.withRecord(1) { bytes in
                #expect(Array(bytes) == record)
                #expect(SharedRecordBytes.current?.bytes.baseAddress == bytes.baseAddress)
                let payload = UnsafeRawBufferPointer(rebasing: bytes[range])
                let value = SharedRecordBytes.data(payload)
                #expect(value.withUnsafeBytes { $0.baseAddress } == payload.baseAddress, "shared, not copied")
                let small = SharedRecordBytes.data(UnsafeRawBufferPointer(rebasing: bytes[0..<(SharedRecordBytes.sharedPayloadMinimum - 1)]))
                #expect(small.withUnsafeBytes { $0.baseAddress } != bytes.baseAddress, "a small value is copied")
                return value
            }
            shared = read
            #expect(SharedRecordBytes.current == nil)
            _ = try reader.withRecord(2) { _ in #expect(SharedRecordBytes.current == nil, "an inline record binds nothing") }
            // Memory that is not the bound record's is copied, whatever its size.
            let elsewhere = record.withUnsafeBytes { raw in
                SharedRecordBytes.$current.withValue(SharedRecordBytes(capacity: 16)) { SharedRecordBytes.data(raw) }
            }
            #expect(elsewhere.withUnsafeBytes { $0.baseAddress } != record.withUnsafeBytes { $0.baseAddress })
            try log.close()
        }
        #expect(shared == Data(record[range]))
        var changed = try #require(shared)
        changed[0] ^= 0xFF
        #expect(changed[0] != shared?[0], "a change is the changed value's own")
        #expect(shared == Data(record[range]))
    }

    /// A bulk append writes each full leaf as soon as the next one starts (through the frame
    /// pipeline, on from the first page here); changing those records later in the same
    /// transaction reads the leaves back from the log, still in flight or not.
    @Test func leavesWrittenDuringABulkAppendReadBack() throws {
        let seed = SeededRandom.seed(default: 0x7EE6)
        print("leavesWrittenDuringABulkAppendReadBack seed \(seed)")
        var random = SeededRandom(seed: seed)
        var options = PageLogOptions()
        options.automaticCompaction = false
        options.framePipeline = true  // whatever the processors (the default follows them)
        options.framePipelineThreshold = 0
        options.framePipelineBytes = 8 << 10
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: "/store", fileSystem: fs, options: options)
        var model: [UInt64: [UInt8]] = [:]
        try log.write { transaction in
            let tree = RecordTreeWriter(transaction: transaction, root: .empty, entityID: 5, schemaVersion: 1, options: Self.tinyTree())
            for id in UInt64(1)...3000 {
                let bytes = Self.record(&random)
                try tree.insert(id, bytes: bytes)
                model[id] = bytes
            }
            for _ in 0..<300 {
                let id = UInt64.random(in: 1...3000, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0:
                    #expect(try tree.get(id) == model[id], "id \(id)")
                case 1:
                    let bytes = Self.record(&random)
                    #expect(try tree.update(id, bytes: bytes) == (model[id] != nil))
                    if model[id] != nil { model[id] = bytes }
                default:
                    #expect(try tree.delete(id) == (model[id] != nil))
                    model[id] = nil
                }
            }
            try Self.saveRoot(try tree.finish(), in: transaction)
        }
        let snapshot = try log.snapshot()
        let reader = RecordTreeReader(snapshot: snapshot, root: Self.loadRoot(try snapshot.read(Self.rootPage)),
                                      cache: NodeCache(budget: 64 << 10))
        var scanned: [UInt64: [UInt8]] = [:]
        try reader.scan { id, bytes in scanned[id] = Array(bytes); return true }
        #expect(scanned == model)
    }

    @Test func matchesADictionaryThroughRandomOperations() throws {
        let seed = SeededRandom.seed(default: 0x7EE5)
        print("RecordTreeTests seed \(seed)")
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        var options = PageLogOptions()
        options.segmentSize = 256 << 10
        options.automaticCompaction = false
        var log = try PageLog.open(directory: "/store", fileSystem: fs, options: options)
        let cache = NodeCache(budget: 64 << 10)
        var model: [UInt64: [UInt8]] = [:]
        var nextID: UInt64 = 1
        var operations = 0
        for round in 0..<300 {
            try log.write(durability: .relaxed) { transaction in
                let tree = RecordTreeWriter(transaction: transaction, root: Self.loadRoot(try transaction.read(Self.rootPage)),
                                            entityID: 5, schemaVersion: 1, options: Self.tinyTree())
                for _ in 0..<Int.random(in: 1...60, using: &random) {
                    operations += 1
                    let existing = model.isEmpty ? nil : model.keys.sorted().randomElement(using: &random)  // sorted: reproducible
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<4:
                        // Mostly ascending ids (appends), sometimes gaps filled later.
                        let id = Bool.random(using: &random) ? nextID : nextID + UInt64.random(in: 1...50, using: &random)
                        nextID = max(nextID, id) + 1
                        if model[id] != nil {
                            #expect(throws: RecordTreeError.duplicateID(id)) { try tree.insert(id, bytes: [1]) }
                        } else {
                            let bytes = Self.record(&random)
                            // A third through the in-place path (a migration's), a third in
                            // pieces cut at random (a bulk insert of a large value): the same tree.
                            switch id % 3 {
                            case 0: try tree.insert(id, bytes: bytes)
                            case 1: try bytes.withUnsafeBytes { try tree.insert(id, raw: $0) }
                            default: try Self.withRandomPieces(bytes, &random) { try tree.insert(id, pieces: $0) }
                            }
                            model[id] = bytes
                        }
                    case 4..<6:
                        if let id = existing {
                            let bytes = Self.record(&random)
                            #expect(try tree.update(id, bytes: bytes))
                            model[id] = bytes
                        } else {
                            #expect(try !tree.update(12345, bytes: [1]))
                        }
                    case 6..<8:
                        if let id = existing {
                            #expect(try tree.delete(id))
                            model[id] = nil
                        }
                        #expect(try !tree.delete(UInt64.max - 1))
                    case 8:
                        let id = UInt64.random(in: 1...(nextID + 10), using: &random)
                        let bytes = Self.record(&random)
                        try tree.upsert(id, bytes: bytes)
                        model[id] = bytes
                        nextID = max(nextID, id + 1)
                    default:
                        if let id = existing { #expect(try tree.get(id) == model[id]) }
                    }
                }
                try Self.saveRoot(try tree.finish(), in: transaction)
            }
            // Readers on the committed snapshot see exactly the model.
            let snapshot = try log.snapshot()
            let reader = RecordTreeReader(snapshot: snapshot, root: Self.loadRoot(try snapshot.read(Self.rootPage)), cache: cache)
            #expect(reader.root.count == UInt64(model.count), "round \(round)")
            for _ in 0..<20 {
                let id = UInt64.random(in: 0...(nextID + 5), using: &random)
                #expect(try reader.get(id) == model[id], "round \(round) id \(id)")
            }
            if round % 25 == 24 {
                var scanned: [(UInt64, [UInt8])] = []
                try reader.scan { id, bytes in scanned.append((id, Array(bytes))); return true }
                let expected = model.sorted { $0.key < $1.key }
                #expect(scanned.map(\.0) == expected.map(\.key), "scan order, round \(round)")
                #expect(scanned.map(\.1) == expected.map(\.value), "scan contents, round \(round)")
                // A scan from the middle starts at the first id at or after it.
                if let middle = expected.dropFirst(expected.count / 2).first?.key {
                    var firstSeen: UInt64?
                    try reader.scan(from: middle) { id, _ in firstSeen = id; return false }
                    #expect(firstSeen == middle)
                }
                // Runs give the same records, from the start and from the middle, read in place or
                // with `pread` (read ahead: `ReadWindow`); each run's bytes are its records' back
                // to back, and any slice of it is a run too.
                for (start, mapped): (UInt64, Bool) in [(0, true), (0, false), (expected.dropFirst(expected.count / 2).first?.key ?? 0, false)] {
                    var ran: [(UInt64, [UInt8])] = []
                    try reader.scanRuns(from: start, mapped: mapped) { run in
                        #expect(run.count > 0)
                        let all = Array(run.allBytes)
                        var previousEnd = 0
                        for index in 0..<run.count {
                            ran.append((run.id(index), Array(run.bytes(index))))
                            #expect(Array(all[previousEnd..<run.end(index)]) == Array(run.bytes(index)), "round \(round)")
                            previousEnd = run.end(index)
                        }
                        #expect(previousEnd == all.count)
                        let tail = run.slice((run.count / 2)..<run.count)
                        #expect((0..<tail.count).map { tail.id($0) } == (run.count / 2..<run.count).map { run.id($0) })
                        #expect(Array(tail.allBytes) == (run.count / 2..<run.count).flatMap { Array(run.bytes($0)) })
                        return true
                    }
                    let from = expected.filter { $0.key >= start }
                    #expect(ran.map(\.0) == from.map(\.key), "run order, round \(round)")
                    #expect(ran.map(\.1) == from.map(\.value), "run contents, round \(round)")
                }
            }
            if round % 60 == 59 {
                try log.close()
                log = try PageLog.open(directory: "/store", fileSystem: fs, options: options)
            }
        }
        print("RecordTreeTests: \(operations) operations, \(model.count) records at the end")
        #expect(operations > 5000)
        // Deleting everything empties the tree and frees every page but the root record.
        try log.write { transaction in
            let tree = RecordTreeWriter(transaction: transaction, root: Self.loadRoot(try transaction.read(Self.rootPage)),
                                        entityID: 5, schemaVersion: 1, options: Self.tinyTree())
            for id in model.keys { #expect(try tree.delete(id)) }
            let root = try tree.finish()
            #expect(root == .empty)
            try Self.saveRoot(root, in: transaction)
        }
        #expect(try log.snapshot().pageIDs() == [Self.rootPage])
    }
}
