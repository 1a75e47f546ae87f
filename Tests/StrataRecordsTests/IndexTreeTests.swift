import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataTestSupport

/// Index trees checked against a sorted array, with tiny nodes so a few thousand entries make
/// deep trees, many splits and emptied leaves; inside write transactions and in snapshots.
@Suite struct IndexTreeTests {
    /// A sorted array of entries, the model of a tree.
    struct Model {
        private(set) var entries: [[UInt8]] = []

        func position(_ entry: [UInt8]) -> (found: Bool, index: Int) {
            var low = 0, high = entries.count
            while low < high {
                let middle = (low + high) / 2
                if IndexKey.compare(entries[middle], entry) < 0 { low = middle + 1 } else { high = middle }
            }
            return (low < entries.count && entries[low] == entry, low)
        }

        func contains(_ entry: [UInt8]) -> Bool { position(entry).found }

        mutating func insert(_ entry: [UInt8]) -> Bool {
            let (found, index) = position(entry)
            if !found { entries.insert(entry, at: index) }
            return !found
        }

        mutating func remove(_ entry: [UInt8]) -> Bool {
            let (found, index) = position(entry)
            if found { entries.remove(at: index) }
            return found
        }
    }

    /// (value, id) of an entry whose value is an int.
    static func decodeInt(_ entry: [UInt8]) -> (value: Int64, id: UInt64) {
        var bits: UInt64 = 0
        for byte in entry[1..<9] { bits = bits << 8 | UInt64(byte) }
        return (Int64(bitPattern: bits ^ (1 << 63)), IndexKey.recordID(ofEntry: entry))
    }

    static func randomRange(_ random: inout SeededRandom) -> (range: IndexRange, contains: (Int64) -> Bool) {
        let lower: Int64? = Int.random(in: 0..<4, using: &random) == 0 ? nil : Int64.random(in: -60...60, using: &random)
        let upper: Int64? = Int.random(in: 0..<4, using: &random) == 0 ? nil : lower.map { $0 + Int64.random(in: -2...30, using: &random) }
            ?? Int64.random(in: -60...60, using: &random)
        let lowerInclusive = Bool.random(using: &random), upperInclusive = Bool.random(using: &random)
        let range = IndexRange(lower: lower.map(Value.int), lowerInclusive: lowerInclusive, upper: upper.map(Value.int), upperInclusive: upperInclusive)
        return (range, { value in
            if let lower, lowerInclusive ? value < lower : value <= lower { return false }
            if let upper, upperInclusive ? value > upper : value >= upper { return false }
            return true
        })
    }

    @Test func matchesASortedArrayThroughRandomOperations() throws {
        let seed = SeededRandom.seed(default: 0x1D7EE)
        print("IndexTreeTests.matchesASortedArrayThroughRandomOperations seed \(seed)")
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        var options = PageLogOptions()
        options.segmentSize = 256 << 10
        options.automaticCompaction = false
        let log = try PageLog.open(directory: "/store", fileSystem: fs, options: options)
        var treeOptions = RecordTreeTests.tinyTree()
        treeOptions.maximumNodeSize = 200
        treeOptions.dirtyBudget = 2 << 10
        let cache = NodeCache(budget: 64 << 10)
        var model = Model()
        var rangesChecked = 0
        for round in 0..<250 {
            let committed = model
            let abort = round % 17 == 16
            do {
                try log.write(durability: .relaxed) { transaction in
                    let tree = IndexTreeWriter(transaction: transaction, root: RecordTreeTests.loadRoot(try transaction.read(RecordTreeTests.rootPage)),
                                               entityID: 3, schemaVersion: 1, options: treeOptions)
                    for _ in 0..<Int.random(in: 1...80, using: &random) {
                        let value = Int64.random(in: -50...50, using: &random)
                        let entry = IndexKey.entry(IndexKey.encode(.int(value)), id: UInt64.random(in: 1...400, using: &random))
                        let existing = model.entries.randomElement(using: &random)
                        switch Int.random(in: 0..<10, using: &random) {
                        case 0..<5:
                            #expect(try tree.insert(entry) == model.insert(entry))
                        case 5..<8:
                            if let existing {
                                #expect(try tree.delete(existing))
                                _ = model.remove(existing)
                            }
                        case 8:
                            #expect(try tree.delete(entry) == model.remove(entry))
                        default:
                            if let existing { #expect(try tree.contains(existing)) }
                            #expect(try tree.contains(entry) == model.contains(entry))
                        }
                    }
                    // The transaction sees its own entries, from any lower bound.
                    var seen: [[UInt8]] = []
                    let lower = IndexKey.encode(.int(Int64.random(in: -55...55, using: &random)))
                    try tree.scan(from: lower) { seen.append($0); return true }
                    #expect(seen == Array(model.entries[model.position(lower).index...]), "round \(round), seed \(seed)")
                    #expect(tree.root.count == UInt64(model.entries.count))
                    try RecordTreeTests.saveRoot(try tree.finish(), in: transaction)
                    struct Abort: Error {}
                    if abort { throw Abort() }
                }
            } catch {
                model = committed
            }
            // A snapshot sees exactly the committed entries; ranges select what the model selects.
            let snapshot = try log.snapshot()
            let reader = IndexTreeReader(snapshot: snapshot, root: RecordTreeTests.loadRoot(try snapshot.read(RecordTreeTests.rootPage)), cache: cache)
            var all: [[UInt8]] = []
            try reader.scan(from: []) { all.append($0); return true }
            #expect(all == model.entries, "round \(round), seed \(seed)")
            #expect(reader.root.count == UInt64(model.entries.count))
            for _ in 0..<4 {
                let (range, contains) = Self.randomRange(&random)
                var ids: [UInt64] = []
                try reader.scan(range) { ids.append($0); return true }
                let expected = model.entries.map(Self.decodeInt).filter { contains($0.value) }.map(\.id)
                #expect(ids == expected, "range \(range), round \(round), seed \(seed)")
                rangesChecked += 1
            }
        }
        #expect(rangesChecked == 1000)
        #expect(!model.entries.isEmpty)
    }

    /// Deleting every entry frees every page; the tree is empty again.
    @Test func deletingEverythingFreesEveryPage() throws {
        let log = try PageLog.open(directory: "/store", fileSystem: MemoryFileSystem())
        var options = RecordTreeOptions()
        options.maximumNodeSize = 256
        let entries = (0..<2000).map { IndexKey.entry(IndexKey.encode(.string("name \($0 % 97)")), id: UInt64($0 + 1)) }
        let pagesBefore = try log.snapshot().pageIDs().count
        try log.write { transaction in
            let tree = IndexTreeWriter(transaction: transaction, root: .empty, entityID: 1, schemaVersion: 1, options: options)
            for entry in entries { #expect(try tree.insert(entry)) }
            try RecordTreeTests.saveRoot(try tree.finish(), in: transaction)
        }
        #expect(try log.snapshot().pageIDs().count > pagesBefore + 20)
        try log.write { transaction in
            let tree = IndexTreeWriter(transaction: transaction, root: RecordTreeTests.loadRoot(try transaction.read(RecordTreeTests.rootPage)),
                                       entityID: 1, schemaVersion: 1, options: options)
            for entry in entries.reversed() { #expect(try tree.delete(entry)) }
            #expect(tree.root == .empty)
            try RecordTreeTests.saveRoot(try tree.finish(), in: transaction)
        }
        #expect(try log.snapshot().pageIDs().count == pagesBefore + 1)  // the saved root only
    }

    /// Values whose keys pass 512 bytes share a stored prefix: a range or equality scan returns
    /// them all as candidates (never fewer), and entries of bad length are refused.
    @Test func cutKeysGiveCandidatesAndBadEntriesAreRefused() throws {
        let log = try PageLog.open(directory: "/store", fileSystem: MemoryFileSystem())
        let prefix = String(repeating: "p", count: 600)
        let values = ["a", prefix + "1", prefix + "2", prefix + "3", "q"]
        try log.write { transaction in
            let tree = IndexTreeWriter(transaction: transaction, root: .empty, entityID: 1, schemaVersion: 1)
            for (index, value) in values.enumerated() {
                #expect(try tree.insert(IndexKey.entry(IndexKey.encode(.string(value)), id: UInt64(index + 1))))
            }
            #expect(throws: RecordTreeError.invalidIndexEntry(length: 8)) { try tree.insert([UInt8](repeating: 1, count: 8)) }
            #expect(throws: RecordTreeError.invalidIndexEntry(length: 600)) { try tree.insert([UInt8](repeating: 1, count: 600)) }
            try RecordTreeTests.saveRoot(try tree.finish(), in: transaction)
        }
        let snapshot = try log.snapshot()
        let reader = IndexTreeReader(snapshot: snapshot, root: RecordTreeTests.loadRoot(try snapshot.read(RecordTreeTests.rootPage)), cache: NodeCache())
        func ids(_ range: IndexRange) throws -> [UInt64] {
            var ids: [UInt64] = []
            try reader.scan(range) { ids.append($0); return true }
            return ids
        }
        #expect(try ids(.equal(to: .string(prefix + "2"))) == [2, 3, 4])
        #expect(try ids(IndexRange(lower: .string(prefix + "2"), lowerInclusive: false)) == [2, 3, 4, 5])
        #expect(try ids(IndexRange(upper: .string(prefix + "1"), upperInclusive: false)) == [1, 2, 3, 4])
        #expect(try ids(.equal(to: .string("a"))) == [1])
        #expect(try ids(IndexRange(lower: .string("a"), lowerInclusive: false, upper: .string("q"), upperInclusive: false)) == [2, 3, 4])
        #expect(try ids(.all) == [1, 2, 3, 4, 5])
    }
}

