#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
import Strata
import StrataTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an app sees when the store's folder is unreadable, damaged, on a read-only or full
/// file system (issue 21, "Failure paths"): each failure named as it is, never as "no store".
@Suite struct FailurePathTests {
    struct Parcel: PersistentRecord, Equatable {
        var label: String
        var weight: Int
    }

    static let path = "/store"

    static func configuration(readOnly: Bool = false) -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.isReadOnly = readOnly
        configuration.storage.segmentSize = 16 << 10  // several segment files
        configuration.storage.automaticCompaction = false
        return configuration
    }

    static func open(_ fs: MemoryFileSystem, readOnly: Bool = false, configuration: Store.Configuration? = nil) throws -> Store {
        let schema = try Schema(version: Schema.Version(1, 0, 0), types: [Parcel.self])
        return try Store(at: path, schema: schema, configuration: configuration ?? Self.configuration(readOnly: readOnly), fileSystem: fs)
    }

    /// A closed store of `count` parcels on a new in-memory file system.
    static func makeStore(count: Int = 300) throws -> MemoryFileSystem {
        let fs = MemoryFileSystem()
        let store = try open(fs)
        try store.write { transaction in
            for index in 0..<count { _ = try transaction.insert(Parcel(label: "parcel \(index) " + String(repeating: "x", count: 60), weight: index)) }
        }
        try store.close()
        return fs
    }

    /// The errno of a `StrataError.io`, nil for any other error.
    static func errnoOf(_ error: any Error) -> Int32? {
        if case StrataError.io(_, _, _, let code, _) = error { return code }
        return nil
    }

    // MARK: Item 1: a read-only open names what is wrong

    /// A read-only open of a store this process may not read said `storeNotFound` ("there is
    /// no store at …"), which an app shows as "no data yet". It must fail as the writable open
    /// does: permission denied. (Tests run as root, which file permissions do not stop, so the
    /// in-memory file system refuses as `chmod 000` would.)
    @Test func aReadOnlyOpenOfAnUnreadableStoreSaysPermissionDenied() throws {
        let fs = try Self.makeStore()
        for denied in [Self.path, Self.path + "/superblock"] {
            // The folder (listing it, and every path in it), or only the superblock file.
            fs.setAccessRule { path, _ in path == denied || (denied == Self.path && path.hasPrefix(Self.path + "/")) ? EACCES : nil }
            for readOnly in [false, true] {
                do {
                    _ = try Self.open(fs, readOnly: readOnly)
                    Issue.record("opening \(denied) denied, read-only \(readOnly), succeeded")
                } catch {
                    #expect(Self.errnoOf(error) == EACCES, "denied \(denied), read-only \(readOnly): \(error)")
                }
            }
            #expect(throws: (any Error).self) { _ = try Store.storedSchema(at: Self.path, fileSystem: fs) }
            do { _ = try Store.storedSchema(at: Self.path, fileSystem: fs) } catch {
                #expect(Self.errnoOf(error) == EACCES, "storedSchema, denied \(denied): \(error)")
            }
        }
        // Readable again: the store is there, whole.
        fs.setAccessRule(nil)
        let store = try Self.open(fs, readOnly: true)
        #expect(try Context(store).fetchCount(FetchDescriptor<Parcel>()) == 300)
        try store.close()
    }

    /// A store whose superblock file is gone while its segment files remain is damaged, not
    /// absent: the read-only open said `storeNotFound`; it must say corruption, naming the
    /// superblock file, as the writable open does.
    @Test func aReadOnlyOpenOfAStoreWithoutItsSuperblockIsCorruption() throws {
        let fs = try Self.makeStore()
        try fs.removeFile(Self.path + "/superblock")
        fs.syncEverything()
        for readOnly in [true, false] {
            do {
                _ = try Self.open(fs, readOnly: readOnly)
                Issue.record("opening a store without its superblock succeeded (read-only \(readOnly))")
            } catch let StrataError.corruption(file, offset, reason) {
                #expect(file == Self.path + "/superblock" && offset == 0, "\(file) \(offset)")
                #expect(reason.contains("superblock file is missing"), "\(reason)")
            }
        }
        do {
            _ = try Store.storedSchema(at: Self.path, fileSystem: fs)
            Issue.record("storedSchema of a store without its superblock succeeded")
        } catch let StrataError.corruption(file, _, _) {
            #expect(file == Self.path + "/superblock")
        }
    }

    /// Only a folder that really holds no store is `storeNotFound`: missing, empty, or left by
    /// a creation interrupted before its superblock (segment 1 alone, as long as a new store's).
    @Test func onlyAFolderWithoutAStoreIsStoreNotFound() throws {
        let fs = MemoryFileSystem()
        #expect(throws: StrataError.storeNotFound(path: Self.path)) { _ = try Self.open(fs, readOnly: true) }
        try fs.createDirectory(Self.path)
        #expect(throws: StrataError.storeNotFound(path: Self.path)) { _ = try Self.open(fs, readOnly: true) }
        #expect(throws: StrataError.storeNotFound(path: Self.path)) { _ = try Store.storedSchema(at: Self.path, fileSystem: fs) }
        // A creation cut by a power loss before its superblock was renamed into place.
        let interrupted = MemoryFileSystem()
        interrupted.setFaultInjector { $0.kind == .rename && $0.path.hasSuffix("superblock.tmp") ? .crash : nil }
        #expect(throws: (any Error).self) { _ = try Self.open(interrupted) }
        interrupted.setFaultInjector(nil)
        var random = SeededRandom(seed: 21)
        interrupted.simulateCrash(mode: .keepAll, using: &random)
        #expect(interrupted.allFiles().keys.sorted() == [Self.path + "/0000000000000001.seg", Self.path + "/superblock.tmp"])
        #expect(throws: StrataError.storeNotFound(path: Self.path)) { _ = try Self.open(interrupted, readOnly: true) }
        // The writer then creates the store there.
        try Self.open(interrupted).close()
        try Self.open(interrupted, readOnly: true).close()
    }
}

extension FailurePathTests {
    // MARK: Item 2: errors name the errno and the fix

    /// A writable open on a read-only file system said "permission denied", with no hint that
    /// `isReadOnly` reads the store. It must name `EROFS` and say how to read the store.
    @Test func aWritableOpenOnAReadOnlyFileSystemSaysHowToReadIt() throws {
        let fs = try Self.makeStore()
        fs.setAccessRule { _, access in access == .readWrite ? EROFS : nil }  // mounted read-only
        do {
            _ = try Self.open(fs)
            Issue.record("a writable open on a read-only file system succeeded")
        } catch let error as StrataError {
            #expect(Self.errnoOf(error) == EROFS, "\(error)")
            let text = "\(error)"
            #expect(text.contains("read-only file system (EROFS)"), "\(text)")
            #expect(text.contains("Store.Configuration.isReadOnly = true"), "\(text)")
            #expect(error.remedy?.contains("isReadOnly") == true)
        }
        // As the message says: read-only, the store opens and reads.
        let store = try Self.open(fs, readOnly: true)
        #expect(try Context(store).fetchCount(FetchDescriptor<Parcel>()) == 300)
        try store.close()
    }

    /// A plain file given as the store's path said "errno 20". It must name `ENOTDIR` and say
    /// that a store's path names a folder — for a writable and a read-only open alike — and
    /// leave the file as it was.
    @Test func aFileAsTheStorePathSaysItIsNotAFolder() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let path = folder + "/notes.txt"
        let contents = Array("not a store".utf8)
        let file = try POSIXFileSystem().openFile(path, create: true)
        try file.write(contents, at: 0)
        file.close()
        for readOnly in [false, true] {
            do {
                _ = try Store(at: path, for: [Parcel.self], configuration: Self.configuration(readOnly: readOnly))
                Issue.record("a store opened at a plain file (read-only \(readOnly))")
            } catch let error as StrataError {
                #expect(Self.errnoOf(error) == ENOTDIR, "read-only \(readOnly): \(error)")
                let text = "\(error)"
                #expect(text.contains("not a directory (ENOTDIR)") && text.contains("is a file, not a folder"), "\(text)")
                #expect(!text.contains("errno"), "\(text)")
            }
        }
        let reread = try POSIXFileSystem().openFile(path, create: false)
        #expect(try reread.read(count: 100, at: 0) == contents)
    }

    /// Every I/O error names its errno symbolically, simulated ones (no code) by their kind's;
    /// an errno this platform has no name for is given as a number.
    @Test func everyIOErrorNamesItsErrno() {
        #expect(IOError(errnoCode: ENOSPC, operation: "pwrite", path: "/s/a.seg", offset: 4096).description
            == "pwrite failed on /s/a.seg at offset 4096: no space left on device (ENOSPC)")
        #expect(IOError(.permissionDenied, operation: "open", path: "/s/LOCK").description == "open failed on /s/LOCK: permission denied (EACCES)")
        #expect(IOError(.other(4242), operation: "open", path: "/s").description == "open failed on /s: errno 4242")
        let full = StrataError.io(operation: "pwrite", path: "/s/a.seg", offset: 0, errno: ENOSPC, reason: "…")
        #expect(full.isOutOfSpace)
        #expect(full.remedy?.contains("compact()") == true && "\(full)".hasSuffix(full.remedy ?? "-"))
        #expect(StrataError.io(operation: "pread", path: "/s", offset: nil, errno: EBADF, reason: "…").remedy == nil)
        #expect(StrataError.closed.remedy == nil)
    }
}

extension FailurePathTests {
    // MARK: Item 3: a full disk does not lock the app out

    /// Every parcel of the store, by id.
    static func parcels(_ store: Store) throws -> [UInt64: Parcel] {
        Dictionary(uniqueKeysWithValues: try Context(store).fetch(FetchDescriptor<Parcel>()).map { ($0.id.rawValue, $0.record) })
    }

    /// After ENOSPC, every writable open started a new segment file — on the full device — and
    /// failed, so the app could not open its store to delete records and free space. Now the
    /// failed save gives the space reserve back; the store reopens (a cut tail is truncated in
    /// place, no new file), takes deletes, and compaction frees space and refills the reserve.
    @Test func aFullDiskLeavesTheStoreOpenToDeletesAndCompaction() throws {
        let seed = SeededRandom.seed(default: 0xD15C_F011)
        print("aFullDiskLeavesTheStoreOpenToDeletesAndCompaction seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        var configuration = Self.configuration()
        configuration.storage.segmentSize = 64 << 10
        configuration.storage.spaceReserve = 96 << 10
        let fs = MemoryFileSystem()
        var model: [UInt64: Parcel] = [:]
        var batch = 0
        func insertBatch(_ store: Store) throws {
            var inserted: [UInt64: Parcel] = [:]
            try store.write { transaction in
                for index in 0..<100 {
                    let parcel = Parcel(label: "batch \(batch) parcel \(index) " + random.bytes(40).map { String($0, radix: 16) }.joined(),
                                        weight: batch * 100 + index)
                    inserted[try transaction.insert(parcel).rawValue] = parcel
                }
            }
            model.merge(inserted) { _, new in new }
            batch += 1
        }
        var store = try Self.open(fs, configuration: configuration)
        for _ in 0..<30 { try insertBatch(store) }
        #expect(fs.contents(of: Self.path + "/reserve")?.count == 96 << 10)
        // The device fills up: saves go on until one fails.
        fs.setCapacity(fs.usedBytes + 6000)
        var failure: StrataError?
        for _ in 0..<100 where failure == nil {
            do { try insertBatch(store) } catch let error as StrataError { failure = error }
        }
        let error = try #require(failure)
        #expect(error.isOutOfSpace && "\(error)".contains("(ENOSPC)"), "\(error)")
        #expect(error.remedy?.contains("reopen it, delete records and call compact()") == true, "\(error)")
        #expect(fs.contents(of: Self.path + "/reserve")?.count == 0, "the failed save gave the reserve back")
        try? store.close()

        // The app reopens its store, on the full device.
        store = try Self.open(fs, configuration: configuration)
        #expect(try Self.parcels(store) == model)
        // It deletes the oldest three quarters of its parcels, in a few saves.
        let oldest = model.keys.sorted().prefix(model.count * 3 / 4)
        for start in stride(from: 0, to: oldest.count, by: 500) {
            let context = Context(store)
            for id in oldest.dropFirst(start).prefix(500) {
                try context.delete(RecordID<Parcel>(rawValue: id))
                model[id] = nil
            }
            try context.save()
        }
        // Compaction gives space back and refills the reserve from it.
        let used = fs.usedBytes
        try store.compact()
        #expect(fs.usedBytes < used - (64 << 10), "compaction freed space: \(fs.usedBytes) of \(used) bytes")
        #expect(fs.contents(of: Self.path + "/reserve")?.count ?? 0 > 0, "the reserve was refilled")
        // Saves fit again; nothing was lost or damaged on the way.
        try insertBatch(store)
        #expect(try Self.parcels(store) == model)
        let report = try store.verify()
        #expect(report.isValid, "\(report)")
        try store.close()
        let reopened = try Self.open(fs, configuration: configuration)
        #expect(try Self.parcels(reopened) == model)
        try reopened.close()
    }
}

extension FailurePathTests {
    // MARK: Item 4: verify reports a damaged superblock slot

    static let superblock = path + "/superblock"

    /// The little-endian `UInt64` at `offset`.
    static func uint64(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * $1) }
    }

    /// A closed store whose two superblock slots both hold a checkpoint.
    static func checkpointedStore() throws -> MemoryFileSystem {
        let fs = try makeStore()
        let store = try open(fs)
        try store.write { _ = try $0.insert(Parcel(label: "one more", weight: -1)) }
        try store.checkpoint()
        try store.close()
        let bytes = try #require(fs.contents(of: superblock))
        #expect(uint64(bytes, at: 32) >= 2 && uint64(bytes, at: 4096 + 32) >= 2, "both slots written")
        return fs
    }

    /// A damaged superblock slot was invisible to `verify()` when the other slot was good (the
    /// store opens from it). It must be reported, naming the slot and its offset in the file —
    /// the slot in charge or the older one, a flipped byte or a zeroed slot.
    @Test func verifyReportsADamagedSuperblockSlotEvenWhenTheOtherIsGood() throws {
        for slot in 0..<2 {
            for zeroed in [false, true] {
                let fs = try Self.checkpointedStore()
                var bytes = try #require(fs.contents(of: Self.superblock))
                let start = slot * 4096
                if zeroed {
                    bytes.replaceSubrange(start..<(start + 128), with: repeatElement(0, count: 128))
                } else {
                    bytes[start + 40] ^= 0x01  // the checkpoint LSN: the slot's checksum no longer matches
                }
                fs.setContents(of: Self.superblock, to: bytes)
                let store = try Self.open(fs)  // from the other slot
                #expect(try Self.parcels(store).count == 301)
                let report = try store.verify()
                let context = "slot \(slot), \(zeroed ? "zeroed" : "one byte flipped")"
                #expect(report.problems.count == 1, "\(context): \(report)")
                let problem = try #require(report.problems.first, "\(context)")
                #expect(problem.file == Self.superblock && problem.offset == UInt64(start + (zeroed ? 0 : 124)), "\(context): \(problem)")
                #expect(problem.what.contains("superblock slot \(slot) (offset \(start))"), "\(context): \(problem)")
                #expect(problem.what.contains(zeroed ? "all zero" : "checksum"), "\(context): \(problem)")
                try store.close()
            }
        }
        // A new store's slot 0, never written yet, is no problem.
        let fresh = MemoryFileSystem()
        let store = try Self.open(fresh)
        try store.write { _ = try $0.insert(Parcel(label: "first", weight: 1)) }
        #expect(try store.verify().isValid)
        try store.close()
    }

    /// The checkpoint root the older slot names is what recovery falls back to when the newer
    /// one is damaged; damage to it must be reported too, at its segment file and offset.
    @Test func verifyReportsADamagedCheckpointRootOfTheOlderSlot() throws {
        let fs = try Self.checkpointedStore()
        let bytes = try #require(fs.contents(of: Self.superblock))
        let older = Self.uint64(bytes, at: 32) < Self.uint64(bytes, at: 4096 + 32) ? 0 : 1
        let segment = Self.uint64(bytes, at: older * 4096 + 48), offset = Self.uint64(bytes, at: older * 4096 + 56)
        let hex = String(segment, radix: 16)
        let segmentPath = Self.path + "/" + String(repeating: "0", count: 16 - hex.count) + hex + ".seg"
        var segmentBytes = try #require(fs.contents(of: segmentPath))
        segmentBytes[Int(offset) + 50] ^= 0x20  // inside the root's payload
        fs.setContents(of: segmentPath, to: segmentBytes)
        let store = try Self.open(fs)
        let report = try store.verify()
        #expect(report.problems.count == 1, "\(report)")
        let problem = try #require(report.problems.first)
        #expect(problem.file == segmentPath && problem.offset == offset, "\(problem)")
        #expect(problem.what.contains("checkpoint root superblock slot \(older)"), "\(problem)")
        try store.close()
    }
}

extension FailurePathTests {
    // MARK: Item 5: a log shorter than the store knows it reached

    /// The segment file with the highest id.
    static func lastSegment(_ fs: MemoryFileSystem) throws -> String {
        try #require(fs.allFiles().keys.filter { $0.hasSuffix(".seg") }.max())
    }

    /// A store whose log is cut inside its uncheckpointed tail opened cleanly and `verify()`
    /// said nothing, though commits acknowledged durable were gone. While the store is open it
    /// knows how far it wrote its log: `verify()` must report a segment file shorter than that.
    /// After a kill nothing records it, and the reopened store is a committed prefix (the
    /// limit Docs/Testing.md states, "What a shortened log shows").
    @Test func verifyReportsALogShorterThanTheStoreWroteIt() throws {
        let fs = MemoryFileSystem()
        let store = try Self.open(fs)
        for batch in 0..<5 {
            try store.write { transaction in
                for index in 0..<20 { _ = try transaction.insert(Parcel(label: "batch \(batch) parcel \(index)", weight: index)) }
            }
        }
        #expect(try store.verify().isValid)
        // Something cuts the active segment's last 8 bytes: the last commit frame is no longer whole.
        let segment = try Self.lastSegment(fs)
        var bytes = try #require(fs.contents(of: segment))
        while bytes.last == 0 { bytes.removeLast() }  // the zeros written ahead of the log (invariant 35) first
        bytes.removeLast(8)
        fs.setContents(of: segment, to: bytes)
        let report = try store.verify()
        #expect(report.problems.count == 1, "\(report)")
        let problem = try #require(report.problems.first)
        #expect(problem.file == segment && problem.offset == UInt64(bytes.count), "\(problem)")
        #expect(problem.what.contains("transactions committed after offset \(bytes.count) are gone"), "\(problem)")
        // The process is killed: the next open cannot tell the cut from a torn tail.
        var random = SeededRandom(seed: 5)
        fs.simulateCrash(mode: .keepAll, using: &random)
        let reopened = try Self.open(fs)
        #expect(try Self.parcels(reopened).count == 80)
        #expect(try reopened.verify().isValid)
        try reopened.close()
    }

    /// Where the store recorded how far its log reached — a checkpoint, and the checkpoint
    /// every clean close writes — a log cut shorter than that never opens as if nothing were
    /// lost: opening (writable or read-only) fails with corruption naming the segment file.
    /// A cut after it opens a committed state at or after the checkpoint's: the uncheckpointed
    /// commits after a kill are the part no open can vouch for.
    @Test func aLogCutBeforeItsLastCheckpointDoesNotOpen() throws {
        // A clean close, and a kill after a checkpoint and three more commits.
        for killed in [false, true] {
            let fs = try Self.makeStore(count: 200)
            let reader = try Self.open(fs, readOnly: true)
            var states: [[UInt64: Parcel]] = [try Self.parcels(reader)]
            try reader.close()
            if killed {
                let store = try Self.open(fs)
                for batch in 0..<3 {
                    try store.write { _ = try $0.insert(Parcel(label: "after the checkpoint \(batch)", weight: batch)) }
                    states.append(try Self.parcels(store))
                }
                var random = SeededRandom(seed: 6)
                fs.simulateCrash(mode: .keepAll, using: &random)
            }
            let segment = try Self.lastSegment(fs)
            let bytes = try #require(fs.contents(of: segment))
            let superblock = try #require(fs.contents(of: Self.superblock))
            // Where the newest slot's checkpoint root ends (its offset plus its length).
            let newest = Self.uint64(superblock, at: 32) > Self.uint64(superblock, at: 4096 + 32) ? 0 : 4096
            let rootEnd = Self.uint64(superblock, at: newest + 56) + UInt64(UInt32(truncatingIfNeeded: Self.uint64(superblock, at: newest + 64)))
            #expect(segment.hasSuffix(String(Self.uint64(superblock, at: newest + 48), radix: 16) + ".seg"), "the root is in the last segment")
            var failed = 0, opened = 0
            for cut in stride(from: 64, to: bytes.count, by: 53) {
                var files = fs.allFiles()
                files[segment] = Array(bytes[..<cut])
                for readOnly in [true, false] {
                    let context = "\(killed ? "killed" : "closed") store, \(segment) cut to \(cut) bytes, read-only \(readOnly)"
                    do {
                        let store = try Self.open(MemoryFileSystem(files: files), readOnly: readOnly)
                        let found = try Self.parcels(store)
                        try store.close()
                        #expect(UInt64(cut) >= rootEnd, "\(context): opened, though the checkpoint ends at \(rootEnd)")
                        #expect(states.contains(found), "\(context): not a committed state")
                        if !killed { #expect(found == states[0], "\(context): parcels lost") }
                        opened += 1
                    } catch let StrataError.corruption(file, _, _) {
                        #expect(UInt64(cut) < rootEnd && file == segment, "\(context): corruption in \(file)")
                        failed += 1
                    }
                }
            }
            #expect(failed > 0 && (killed ? opened > 0 : true), "failed \(failed), opened \(opened)")
        }
    }
}
