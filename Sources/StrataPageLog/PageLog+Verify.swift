import StrataFormat
import StrataIO

/// One problem a verification found: where (a file of the store folder and a byte offset in
/// it, when known) and what.
package struct StoreProblem: Equatable, Sendable, CustomStringConvertible {
    /// The file's path (in the store folder), or a description of the structure in memory.
    package var file: String
    /// The byte offset in `file`, when known.
    package var offset: UInt64?
    package var what: String

    package init(file: String, offset: UInt64?, what: String) {
        self.file = file
        self.offset = offset
        self.what = what
    }

    package var description: String { "\(file)\(offset.map { " at \($0)" } ?? ""): \(what)" }
}

extension PageLog {
    /// The path of a file of the store.
    package func filePath(_ name: String) -> String { path(name) }

    /// Where a page of `snapshot` is stored: its segment file's path and the frame's offset
    /// (nil for a page the snapshot does not hold).
    package func place(of pageID: UInt64, in snapshot: Snapshot) -> (file: String, offset: UInt64)? {
        guard let location = try? snapshot.location(of: pageID), !location.isNone else { return nil }
        return (path(StoreFileNames.segment(UInt64(location.segment))), UInt64(location.offset))
    }

    /// Reads and verifies the frame of every page of `snapshot` (checksum, header, page id,
    /// LSN and length as the table expects, decompression), and — for a writer — checks the
    /// in-memory invariants (`checkInvariants`). Returns how many pages were read and every
    /// problem found; stops at nothing.
    package func verifyPages(in snapshot: Snapshot) -> (pages: Int, problems: [StoreProblem]) {
        var problems: [StoreProblem] = []
        var pages = 0
        snapshot.table.forEach(unreadable: { index, error in
            let reason = if case PageLogError.corruption(_, _, let reason) = error { reason } else { "\(error)" }
            problems.append(StoreProblem(file: path(StoreFileNames.superblock), offset: nil, what: "page table chunk \(index): \(reason)"))
        }) { pageID, location in
            pages += 1
            do {
                _ = try snapshot.read(pageID, mapped: false)
            } catch {
                // Reported at the frame's start (the error may name a byte inside it).
                let reason = if case PageLogError.corruption(_, _, let reason) = error { reason } else { "\(error)" }
                problems.append(StoreProblem(file: path(StoreFileNames.segment(UInt64(location.segment))), offset: UInt64(location.offset),
                                             what: "page \(pageID) (frame of \(location.length) bytes): \(reason)"))
            }
        }
        if follower == nil {
            problems += checkInvariants().map { StoreProblem(file: "page log (in memory)", offset: nil, what: $0) }
        }
        return (pages, problems)
    }
}
