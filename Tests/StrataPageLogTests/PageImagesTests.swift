import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// `PageImages`: images a scan kept, taken by a write transaction's reads instead of reading
/// their frames again (a migration closure's flush rewriting the leaves its enumeration read).
@Suite struct PageImagesTests {
    /// Writes `pages` (one page id allocated for each) and returns their ids.
    static func write(_ pages: [[UInt8]], to log: PageLog) throws -> [UInt64] {
        var ids: [UInt64] = []
        try log.write { txn in
            for bytes in pages {
                let id = try txn.allocatePageID()
                try txn.write(id, bytes: bytes)
                ids.append(id)
            }
        }
        return ids
    }

    /// Pages written compressed and not, read by a scan that keeps their images: a write
    /// transaction's reads take each image (none left), and return the bytes the snapshot holds.
    @Test func aTransactionTakesTheImagesAScanKept() throws {
        let seed = SeededRandom.seed(default: 0x1A6E)
        print("aTransactionTakesTheImagesAScanKept seed \(seed)")
        var random = SeededRandom(seed: seed)
        let log = try PageLog.open(directory: storePath, fileSystem: MemoryFileSystem(), options: smallOptions())
        let pages = (0..<20).map { _ in randomPage(&random, maximum: 2000) }
        let ids = try Self.write(pages, to: log)
        let images = PageImages(budget: 1 << 20)
        let reader = SequentialPageReader(try log.snapshot(), mapped: false, keepingImagesIn: images)
        for (id, bytes) in zip(ids, pages) {
            let read = try reader.withPage(id) { #expect(Array($0) == bytes); return true }
            #expect(read == true)
        }
        #expect(images.count == 20)
        try log.write { txn throws in
            txn.pageImages = images
            for (id, bytes) in zip(ids, pages) { #expect(try txn.read(id)?.bytes == bytes) }
        }
        #expect(images.count == 0)
    }

    /// An image is the frame's at its location, and only that: a read takes the image kept
    /// there (here a forged one, which shows the frame was not read again); a page written
    /// since (by an earlier commit or by the transaction itself) is at another location, and
    /// its new bytes are read, whatever image the old location has.
    @Test func anImageServesOnlyItsFrame() throws {
        let log = try PageLog.open(directory: storePath, fileSystem: MemoryFileSystem(), options: smallOptions())
        let ids = try Self.write((1...3).map { [UInt8](repeating: UInt8($0), count: 100) }, to: log)
        let snapshot = try log.snapshot()
        let images = PageImages(budget: 1 << 20)
        for id in ids {
            let location = try snapshot.location(of: id)
            images.keep(Page(id: id, entityID: 0, schemaVersion: 0, lsn: location.lsn, bytes: [0xF0, UInt8(id)]), at: location)
        }
        try log.write { try $0.write(ids[1], bytes: [2, 2]) }  // the second page moves
        try log.write { txn throws in
            txn.pageImages = images
            #expect(try txn.read(ids[0])?.bytes == [0xF0, UInt8(ids[0])])  // the image at its location
            #expect(try txn.read(ids[1])?.bytes == [2, 2])  // written since: its new frame
            try txn.write(ids[2], bytes: [3, 3, 3])
            #expect(try txn.read(ids[2])?.bytes == [3, 3, 3])  // the transaction's own write
        }
        #expect(images.count == 2)  // the old locations of the last two: named by no table now
        // An image asked for under another page's id is not given.
        let location = try snapshot.location(of: ids[0])
        images.keep(Page(id: ids[0], entityID: 0, schemaVersion: 0, lsn: location.lsn, bytes: [1]), at: location)
        #expect(images.take(ids[1], at: location) == nil)
        #expect(images.take(ids[0], at: location)?.bytes == [1])
    }

    /// Past the budget the images kept first go first.
    @Test func theOldestImagesGoPastTheBudget() throws {
        let images = PageImages(budget: 1000)
        func location(_ id: UInt64) -> PageLocation { PageLocation(segment: 1, offset: UInt32(id) * 512, length: 400, lsn: 7) }
        for id in 1...10 as ClosedRange<UInt64> {
            images.keep(Page(id: id, entityID: 0, schemaVersion: 0, lsn: 7, bytes: [UInt8](repeating: 1, count: 300)), at: location(id))
        }
        #expect(images.count == 3)
        for id in 1...10 as ClosedRange<UInt64> { #expect((images.take(id, at: location(id)) != nil) == (id >= 8), "page \(id)") }
        images.keep(Page(id: 1, entityID: 0, schemaVersion: 0, lsn: 7, bytes: [UInt8](repeating: 1, count: 2000)), at: location(1))
        #expect(images.count == 0)  // larger than the budget: not kept
    }
}
