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
    /// problem found; stops at nothing. `progress`, when given, is called with the pages read so
    /// far after each page.
    package func verifyPages(in snapshot: Snapshot, progress: ((Int) -> Void)? = nil) -> (pages: Int, problems: [StoreProblem]) {
        var problems: [StoreProblem] = []
        var pages = 0
        snapshot.table.forEach(unreadable: { index, error in
            problems.append(unreadableChunk(index, error))
        }) { pageID, location in
            pages += 1
            do {
                _ = try snapshot.read(pageID, mapped: false)
            } catch {
                problems.append(damagedFrame(pageID, location, error))
            }
            progress?(pages)
        }
        if follower == nil {
            problems += checkInvariants().map { StoreProblem(file: "page log (in memory)", offset: nil, what: $0) }
        }
        return (pages, problems)
    }

    /// Checks the frame of every page of `snapshot` as `verifyPages` does — checksum, header,
    /// the page id, LSN and length the table expects — without decompressing them (the checksum
    /// covers the stored bytes), reading each segment file in order through one buffer of
    /// `bufferSize` bytes rather than one read per page: at the speed of a checksum. A backup's
    /// `.frames` verification of its copy.
    package func verifyFrames(in snapshot: Snapshot, bufferSize: Int = backupBufferSize) -> (pages: Int, problems: [StoreProblem]) {
        var problems: [StoreProblem] = []
        var pages: [(id: UInt64, location: PageLocation)] = []
        snapshot.table.forEach(unreadable: { index, error in
            problems.append(unreadableChunk(index, error))
        }) { pageID, location in
            pages.append((pageID, location))
        }
        pages.sort { ($0.location.segment, $0.location.offset) < ($1.location.segment, $1.location.offset) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bufferSize, 1), alignment: 4096)
        defer { buffer.deallocate() }
        // The bytes `buffer` holds: `count` of segment `segment` from offset `start`.
        var window = (segment: UInt32.max, start: UInt64(0), count: 0)
        for (pageID, location) in pages {
            let start = UInt64(location.offset), end = start + UInt64(location.length)
            do {
                let file = try snapshot.file(holding: pageID, at: location)
                try PageLog.checkFrameLength(location.length, path: file.path, offset: start)
                guard Int(location.length) <= buffer.count else {
                    let (header, _) = try PageLog.readFrame(in: file, at: start, length: location.length, decompress: false, mapped: false)
                    try PageLog.checkPageFrame(header, pageID: pageID, location: location, path: file.path)
                    continue
                }
                if window.segment != location.segment || start < window.start || end > window.start + UInt64(window.count) {
                    window = (location.segment, start, 0)
                    window.count = try PageLog.translatingIOErrors { try file.read(into: buffer, at: start) }
                }
                guard end <= window.start + UInt64(window.count) else {
                    throw PageLogError.corruption(file: file.path, offset: start, reason: "frame of \(location.length) bytes cut short at end of file")
                }
                let raw = UnsafeRawBufferPointer(rebasing: buffer[Int(start - window.start)..<Int(end - window.start)])
                let (header, _) = try PageLog.verifiedFrame(raw, path: file.path, offset: start)
                try PageLog.checkPageFrame(header, pageID: pageID, location: location, path: file.path)
            } catch {
                problems.append(damagedFrame(pageID, location, error))
            }
        }
        if follower == nil {
            problems += checkInvariants().map { StoreProblem(file: "page log (in memory)", offset: nil, what: $0) }
        }
        return (pages.count, problems)
    }

    /// The problem of a page table chunk that does not load.
    private func unreadableChunk(_ index: Int, _ error: any Error) -> StoreProblem {
        let reason = if case PageLogError.corruption(_, _, let reason) = error { reason } else { "\(error)" }
        return StoreProblem(file: path(StoreFileNames.superblock), offset: nil, what: "page table chunk \(index): \(reason)")
    }

    /// The problem of a page whose frame does not verify, reported at the frame's start (the
    /// error may name a byte inside it).
    private func damagedFrame(_ pageID: UInt64, _ location: PageLocation, _ error: any Error) -> StoreProblem {
        let reason = if case PageLogError.corruption(_, _, let reason) = error { reason } else { "\(error)" }
        return StoreProblem(file: path(StoreFileNames.segment(UInt64(location.segment))), offset: UInt64(location.offset),
                            what: "page \(pageID) (frame of \(location.length) bytes): \(reason)")
    }

    /// Checks the superblock file as it is now (invariant 9) and reports what is wrong with
    /// either slot, although the store opened from one that is good: each slot must decode
    /// (magic, checksum, version, fields) in its own place — or be all zero while no checkpoint
    /// has written it yet (a new store's slot 0) — and name a checkpoint root frame that reads
    /// back as that checkpoint; a writer's newest slot must be the checkpoint it wrote last. A
    /// damaged slot means the store cannot fall back to it; a damaged root that recovery
    /// could not start from. A follower's check is repeated once before a problem is
    /// reported: its writer may have rewritten a slot while it read.
    package func verifySuperblock() -> [StoreProblem] {
        let first = superblockProblems()
        guard !first.isEmpty, follower != nil else { return first }
        return superblockProblems()
    }

    private func superblockProblems() -> [StoreProblem] {
        let path = path(StoreFileNames.superblock)
        return writerLock.withLock { _ -> [StoreProblem] in
            let file = follower?.superblockFile ?? writer.superblockFile
            let bytes: [UInt8]
            do { bytes = try file.read(count: Superblock.fileSize, at: 0) } catch {
                return [StoreProblem(file: path, offset: nil, what: "the superblock file cannot be read: \(error)")]
            }
            var problems: [(slot: Int, offset: Int, what: String)] = []
            var valid: [Superblock] = []
            for slot in 0..<2 {
                let start = slot * Superblock.slotStride
                let slice = Array(bytes[min(start, bytes.count)..<min(bytes.count, start + Superblock.encodedSize)])
                do {
                    let block = try Superblock.decode(slice)
                    guard block.slot == slot else {
                        problems.append((slot, start + 32, "holds epoch \(block.epoch), which belongs in slot \(block.slot)"))
                        continue
                    }
                    valid.append(block)
                } catch let error as FormatError {
                    if slice.count == Superblock.encodedSize && slice.allSatisfy({ $0 == 0 }) {
                        problems.append((slot, start, "is all zero"))  // kept only if some checkpoint wrote this slot, below
                    } else {
                        problems.append((slot, start + error.offset, error.reason))
                    }
                } catch {
                    problems.append((slot, start, "\(error)"))
                }
            }
            // Slot 0 is first written at epoch 2: all zero is right while the store is at epoch 1.
            let newest = valid.max { $0.epoch < $1.epoch }
            if max(newest?.epoch ?? 0, writer.superblock.epoch) == 1 { problems.removeAll { $0.slot == 0 && $0.what == "is all zero" } }
            if follower == nil, let onDisk = valid.first(where: { $0.slot == writer.superblock.slot }), onDisk != writer.superblock {
                problems.append((onDisk.slot, onDisk.slot * Superblock.slotStride,
                                 "holds epoch \(onDisk.epoch), but this store last wrote epoch \(writer.superblock.epoch) there (the file was changed under it)"))
            }
            var reports = problems.map { problem in
                StoreProblem(file: path, offset: UInt64(problem.offset),
                             what: "superblock slot \(problem.slot) (offset \(problem.slot * Superblock.slotStride)) \(problem.what)"
                                 + (newest.map { "; recovery uses slot \($0.slot), epoch \($0.epoch)" } ?? ""))
            }
            // Each valid slot's checkpoint root: what recovery from that slot starts with.
            for block in valid {
                let segmentPath = self.path(StoreFileNames.segment(block.root.segment))
                do {
                    let opened = shared.withLock { $0.segments[block.root.segment] }
                    let segment = try opened ?? PageLog.translatingIOErrors { try fileSystem.openForReading(segmentPath) }
                    defer { if opened == nil { segment.close() } }
                    _ = try Recovery.readCheckpointRoot(of: block, in: segment)
                } catch {
                    let reason = if case PageLogError.corruption(_, _, let reason) = error { reason } else { "\(error)" }
                    reports.append(StoreProblem(file: segmentPath, offset: block.root.offset,
                                                what: "the checkpoint root superblock slot \(block.slot) (epoch \(block.epoch)) names: \(reason)"))
                }
            }
            return reports
        }
    }

    /// Checks that no segment file is shorter than the log this store knows it holds: the
    /// active segment at least the bytes this writer handed to the file system, each sealed
    /// one whose successor is present at least where the successor's header says its log
    /// ends. A shorter file lost transactions committed after its end — what the next open
    /// would take for a torn tail when nothing later pins the log (Docs/Testing.md, "What a
    /// shortened log shows"). A follower checks nothing here: it takes a shorter log for its
    /// writer's rollback (invariant 26) and reloads.
    package func verifyLogEnds() -> [StoreProblem] {
        guard follower == nil else { return [] }
        return writerLock.withLock { _ -> [StoreProblem] in
            let segments = shared.withLock { $0.segments }
            var problems: [StoreProblem] = []
            for (id, file) in segments.sorted(by: { $0.key < $1.key }) {
                let name = path(StoreFileNames.segment(id))
                let end: UInt64
                let source: String
                if id == writer.activeSegment {
                    end = writer.flushedOffset
                    source = "this store wrote its log up to offset \(end)"
                } else if let next = segments[id + 1] {
                    do {
                        end = try SegmentHeader.decode(try next.read(count: SegmentHeader.size, at: 0)).previousSegmentEnd
                    } catch {
                        problems.append(StoreProblem(file: next.path, offset: 0, what: "the segment header cannot be read back: \(error)"))
                        continue
                    }
                    source = "segment \(id + 1) says its log runs to offset \(end)"
                } else {
                    continue
                }
                do {
                    let size = try file.size()
                    if size < end {
                        problems.append(StoreProblem(file: name, offset: size,
                                                     what: "the file ends at offset \(size), but \(source): the transactions committed after offset \(size) are gone"))
                    }
                } catch {
                    problems.append(StoreProblem(file: name, offset: nil, what: "the file's size cannot be read: \(error)"))
                }
            }
            return problems
        }
    }
}
