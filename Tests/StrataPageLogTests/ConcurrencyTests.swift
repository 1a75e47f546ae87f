import Dispatch
import Synchronization
import Testing
import StrataIO
import StrataPageLog
import StrataTestSupport

@Suite struct ConcurrencyTests {
    /// Durable commits from several threads: every commit lands, each thread's pages are
    /// intact (the commits share fdatasync calls through group commit).
    @Test func concurrentDurableCommitsAllLand() throws {
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        let log = try PageLog.open(directory: directory)
        let threads = 4, commits = 50
        let failures = Lock<[String]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<commits {
                do {
                    try log.write(durability: .durable) { txn in
                        let id = try txn.allocatePageID()
                        try txn.write(id, entityID: UInt32(thread), bytes: [UInt8(thread), UInt8(index)])
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let snapshot = try log.snapshot()
        var seen = Set<[UInt8]>()
        for id in try snapshot.pageIDs() {
            let page = try #require(try snapshot.read(id))
            #expect(page.bytes.count == 2 && page.bytes[0] == UInt8(page.entityID))
            seen.insert(page.bytes)
        }
        #expect(seen.count == threads * commits)
        try log.close()
    }

    /// Readers on snapshots run while a writer commits; each snapshot stays internally
    /// consistent (every page of a transaction carries the same generation number).
    @Test func readersSeeConsistentSnapshotsWhileWriting() throws {
        let log = try PageLog.open(directory: "/store", fileSystem: MemoryFileSystem())
        let pages: [UInt64] = [1, 2, 3, 4]
        try log.write { txn in for id in pages { try txn.write(id, bytes: [0]) } }
        let done = Atomic<Bool>(false)
        let problems = Lock<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            if worker == 0 {
                for generation in 1...200 {
                    try? log.write(durability: .relaxed) { txn in
                        for id in pages { try txn.write(id, bytes: [UInt8(generation % 256)]) }
                    }
                }
                done.store(true, ordering: .releasing)
            } else {
                while !done.load(ordering: .acquiring) {
                    do {
                        let snapshot = try log.snapshot()
                        let values = try pages.map { try snapshot.read($0)?.bytes ?? [] }
                        if Set(values).count != 1 { problems.withLock { $0.append("torn snapshot \(values)") } }
                    } catch {
                        problems.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        #expect(problems.withLock { $0 }.isEmpty)
        #expect(try log.read(1)?.bytes == [200])
    }
}
