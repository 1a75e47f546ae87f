import StrataFormat
import StrataIO

/// A consistent, read-only view of the store as of one commit. Reads never wait for the
/// writer and never see a later or uncommitted change. Holding a snapshot keeps the segment
/// files it refers to from being deleted by compaction; release it (drop the reference) when
/// done. Thread-safe: a snapshot may be shared between threads.
package final class Snapshot: Sendable {
    /// The LSN of the last transaction visible in this snapshot.
    package let lsn: UInt64
    let table: PageTable
    let segments: [UInt64: any StorageFile]
    let log: PageLog
    let token: UInt64
    /// Frames ending after this are read with `pread`, never through a memory map: a follower's
    /// writer may still truncate them (invariant 32). Nil: every frame may be mapped.
    let mappableEnd: LogPosition?
    /// Which table a follower published this snapshot from: equal numbers, equal tables (0 for
    /// every snapshot of a writer). A reader compares them to tell whether a `refresh()` —
    /// its own or another thread's — changed anything.
    package let publication: UInt64

    init(log: PageLog, table: PageTable, lsn: UInt64, segments: [UInt64: any StorageFile], token: UInt64,
         mappableEnd: LogPosition? = nil, publication: UInt64 = 0) {
        self.log = log
        self.table = table
        self.lsn = lsn
        self.segments = segments
        self.token = token
        self.mappableEnd = mappableEnd
        self.publication = publication
    }

    /// Whether the frame at `location` may be read through a memory map.
    func mayMap(_ location: PageLocation) -> Bool {
        guard let mappableEnd else { return true }
        return LogPosition(segment: UInt64(location.segment), offset: UInt64(location.offset) + UInt64(location.length)) <= mappableEnd
    }

    deinit { log.releaseSnapshot(token) }

    /// The page with this id, or nil when no such page exists in this snapshot.
    /// Throws `PageLogError.corruption` when the stored frame fails verification. `mapped`
    /// false reads with `pread`: for pages read once per commit (a store root), whose fault on
    /// a memory map would also map the recently written pages around them.
    package func read(_ pageID: UInt64, mapped: Bool = true) throws -> Page? {
        let location = try table.location(of: pageID)
        guard !location.isNone else { return nil }
        return try PageLog.readPage(pageID, at: location, in: file(holding: pageID, at: location), mapped: mapped && mayMap(location))
    }

    /// The segment file holding page `pageID`'s frame at `location`.
    /// - Throws: `PageLogError.corruption` when the snapshot has no such segment.
    package func file(holding pageID: UInt64, at location: PageLocation) throws -> any StorageFile {
        guard let file = segments[UInt64(location.segment)] else {
            throw PageLogError.corruption(file: StoreFileNames.segment(UInt64(location.segment)), offset: UInt64(location.offset),
                                          reason: "segment \(location.segment), which holds page \(pageID), is missing")
        }
        return file
    }

    /// The location of a page in this snapshot (for tests and verification).
    /// - Throws: what loading a pending page table chunk throws (invariant 16).
    package func location(of pageID: UInt64) throws -> PageLocation { try table.location(of: pageID) }

    /// Ids of every page present in this snapshot, ascending.
    package func pageIDs() throws -> [UInt64] {
        var ids: [UInt64] = []
        try table.forEach { id, _ in ids.append(id) }
        return ids
    }
}
