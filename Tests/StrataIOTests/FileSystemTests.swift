import Testing
import StrataIO
import StrataTestSupport

@Suite struct POSIXFileSystemTests {
    @Test func readsWritesSyncsRenamesAndRemoves() throws {
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        let fs = POSIXFileSystem()
        let path = joinPath(directory, "a")
        let file = try fs.openFile(path, create: true)
        try file.write([1, 2, 3, 4, 5], at: 10)
        try file.sync()
        #expect(try file.size() == 15)
        #expect(try file.read(count: 5, at: 10) == [1, 2, 3, 4, 5])
        #expect(try file.read(count: 10, at: 12) == [3, 4, 5])
        try file.truncate(to: 11)
        #expect(try file.size() == 11)
        try fs.rename(path, to: joinPath(directory, "b"))
        try fs.syncDirectory(directory)
        #expect(try fs.contentsOfDirectory(directory) == ["b"])
        #expect(!fs.fileExists(path))
        try fs.removeFile(joinPath(directory, "b"))
        #expect(throws: IOError.self) { _ = try fs.openFile(path, create: false) }
        file.close()
    }

    /// Mapped reads see every write made through the file, follow it as it grows past the
    /// map (a new, larger map), and never read past its end — after a truncation too (a read
    /// past the end through a map would be SIGBUS, not an error).
    @Test func mappedReadsFollowWritesGrowthAndTruncation() throws {
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        for mapping in [true, false] {
            let file = try POSIXFileSystem(memoryMapping: mapping).openFile(joinPath(directory, "m\(mapping)"), create: true)
            func bytes(at offset: UInt64, count: Int) throws -> [UInt8]? { try file.withBytes(at: offset, count: count) { Array($0) } }
            #expect(try bytes(at: 0, count: 1) == nil)
            try file.write([1, 2, 3], at: 0)
            #expect(try bytes(at: 0, count: 3) == [1, 2, 3])
            #expect(try bytes(at: 1, count: 3) == nil)
            try file.write([9], at: 1)
            #expect(try bytes(at: 0, count: 3) == [1, 9, 3], "a write after mapping is seen")
            // Far past the first map (at least 64 MiB): the file is mapped anew.
            let far: UInt64 = 200 << 20
            try file.write([7, 8], at: far)
            #expect(try bytes(at: far, count: 2) == [7, 8])
            #expect(try bytes(at: 0, count: 3) == [1, 9, 3])
            try file.truncate(to: 2)
            #expect(try bytes(at: 0, count: 2) == [1, 9])
            #expect(try bytes(at: 0, count: 3) == nil, "truncated away")
            #expect(try bytes(at: far, count: 2) == nil, "truncated away")
            file.close()
        }
    }

    @Test func theLockIsExclusiveUntilReleased() throws {
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        let fs = POSIXFileSystem()
        let lock = try fs.lock(joinPath(directory, "LOCK"), exclusive: true)
        do {
            _ = try fs.lock(joinPath(directory, "LOCK"), exclusive: true)
            Issue.record("a second exclusive lock was granted")
        } catch let error as IOError {
            #expect(error.kind == .locked)
        }
        lock.unlock()
        let again = try fs.lock(joinPath(directory, "LOCK"), exclusive: true)
        again.unlock()
    }
}

@Suite struct MemoryFileSystemTests {
    @Test func unsyncedWritesAreDroppedOrKeptAtACrash() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        let file = try fs.openFile("/d/f", create: true)
        try fs.syncDirectory("/d")
        try file.write([1, 1, 1, 1], at: 0)
        try file.sync()
        try file.write([2, 2], at: 4)
        var random = SeededRandom(seed: 31)
        let copy = MemoryFileSystem(files: fs.allFiles())
        fs.simulateCrash(mode: .dropAll, using: &random)
        #expect(fs.contents(of: "/d/f") == [1, 1, 1, 1])
        // Handles from before the crash are dead.
        #expect(throws: IOError.self) { try file.write([3], at: 0) }
        let kept = try copy.openFile("/d/f", create: false)
        #expect(try kept.read(count: 10, at: 0) == [1, 1, 1, 1, 2, 2])
    }

    @Test func unsyncedCreationsVanishAtACrash() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        let file = try fs.openFile("/d/new", create: true)
        try file.write([9], at: 0)
        try file.sync()  // contents synced, but not the directory entry
        var random = SeededRandom(seed: 32)
        fs.simulateCrash(mode: .dropAll, using: &random)
        #expect(!fs.fileExists("/d/new"))
    }

    @Test func tornWritesKeepWholeSectorsOnly() throws {
        var sawPartial = false
        for seed in 0..<40 {
            let fs = MemoryFileSystem()
            try fs.createDirectory("/d")
            let file = try fs.openFile("/d/f", create: true)
            try fs.syncDirectory("/d")
            try file.write([UInt8](repeating: 7, count: 4096), at: 0)
            var random = SeededRandom(seed: UInt64(seed))
            fs.simulateCrash(mode: .tear, using: &random)
            let bytes = fs.contents(of: "/d/f") ?? []
            // Every 512-byte sector is either all written or all absent (zero / beyond the end).
            for sector in stride(from: 0, to: bytes.count, by: 512) {
                let slice = bytes[sector..<min(bytes.count, sector + 512)]
                #expect(slice.allSatisfy { $0 == 7 } || slice.allSatisfy { $0 == 0 })
            }
            let written = bytes.filter { $0 == 7 }.count
            if written > 0 && written < 4096 { sawPartial = true }
        }
        #expect(sawPartial)
    }

    @Test func injectedFaultsFailTheOperationAndApplyNothing() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        let file = try fs.openFile("/d/f", create: true)
        fs.setFaultInjector { $0.kind == .write ? .fail(.noSpace) : nil }
        do {
            try file.write([1], at: 0)
            Issue.record("the injected failure did not happen")
        } catch let error as IOError {
            #expect(error.kind == .noSpace && error.operation == "pwrite")
        }
        #expect(try file.size() == 0)
        fs.setFaultInjector { $0.kind == .sync ? .crash : nil }
        #expect(throws: IOError.self) { try file.sync() }
        #expect(fs.isCrashed)
        #expect(throws: IOError.self) { _ = try fs.openFile("/d/g", create: true) }
    }

    /// A full device takes what fits of a write (a short write) and refuses the rest with
    /// ENOSPC; an allocation that does not fit takes nothing; removing or cutting files frees.
    @Test func aFullDeviceTakesWhatFitsAndFreesWhatIsRemoved() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        let a = try fs.openFile("/d/a", create: true)
        try a.write([UInt8](repeating: 1, count: 1000), at: 0)
        fs.setCapacity(1500)
        #expect(fs.usedBytes == 1000)
        try a.write([UInt8](repeating: 2, count: 300), at: 900)  // 200 new bytes: fits
        let b = try fs.openFile("/d/b", create: true)
        do {
            try b.write([UInt8](repeating: 3, count: 500), at: 0)
            Issue.record("a write past the capacity succeeded")
        } catch let error as IOError {
            #expect(error.kind == .noSpace && error.code == 28 && error.offset == 300, "\(error)")
        }
        #expect(try b.size() == 300 && fs.usedBytes == 1500)  // the short write's part stays
        #expect(throws: IOError.self) { try b.allocate(upTo: 400) }
        #expect(try b.size() == 300)
        try a.write([UInt8](repeating: 4, count: 100), at: 0)  // an overwrite needs no room
        try b.truncate(to: 100)
        try b.allocate(upTo: 300)
        #expect(try b.read(count: 300, at: 0) == [UInt8](repeating: 3, count: 100) + [UInt8](repeating: 0, count: 200))
        try fs.removeFile("/d/a")
        #expect(fs.usedBytes == 300)
        try b.write([UInt8](repeating: 5, count: 1000), at: 300)
    }

    /// An access rule refuses as permissions would: the errno it gives, nothing applied, and a
    /// path refused for reading does not exist for `fileExists`.
    @Test func anAccessRuleRefusesWithItsErrno() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        try fs.openFile("/d/a", create: true).write([1], at: 0)
        fs.setAccessRule { path, access in path.hasPrefix("/d/a") ? 13 : (access == .readWrite ? 30 : nil) }  // EACCES, EROFS
        #expect(!fs.fileExists("/d/a") && fs.fileExists("/d"))
        for attempt in [{ _ = try fs.openForReading("/d/a") }, { _ = try fs.openFile("/d/a", create: false) }] {
            do { try attempt(); Issue.record("a refused open succeeded") } catch let error as IOError {
                #expect(error.kind == .permissionDenied && error.code == 13, "\(error)")
            }
        }
        do { _ = try fs.openFile("/d/b", create: true); Issue.record("a create on a read-only mount succeeded") } catch let error as IOError {
            #expect(error.code == 30 && error.description.hasSuffix("read-only file system (EROFS)"), "\(error)")
        }
        #expect(try fs.contentsOfDirectory("/d") == ["a"])
        fs.setAccessRule(nil)
        #expect(try fs.openForReading("/d/a").read(count: 1, at: 0) == [1])
    }
}

/// What page log followers rely on (Architecture.md invariant 32), on both file systems: a
/// handle opened for reading refuses writes; `status()` reports the size another handle grows
/// or cuts, and that the file was removed or replaced; a handle of a removed file still reads
/// its bytes (POSIX).
@Suite struct ReadOnlyHandleTests {
    @Test(arguments: [false, true]) func readOnlyHandlesSeeOtherWritersAndOutliveRemoval(realFiles: Bool) throws {
        let directory = realFiles ? try temporaryDirectory() : "/dir"
        defer { if realFiles { removeDirectory(directory) } }
        let fs: any FileSystem = realFiles ? POSIXFileSystem() : MemoryFileSystem()
        if !realFiles { try fs.createDirectory(directory) }
        let path = joinPath(directory, "a")
        #expect(throws: IOError.self) { _ = try fs.openForReading(path) }
        let writer = try fs.openFile(path, create: true)
        try writer.write([1, 2, 3], at: 0)
        let reader = try fs.openForReading(path)
        #expect(try reader.status() == FileStatus(size: 3, isLinked: true))
        #expect(throws: IOError.self) { try reader.write([9], at: 0) }
        #expect(throws: IOError.self) { try reader.truncate(to: 0) }
        #expect(throws: IOError.self) { try reader.sync() }
        // Growth and truncation through the other handle.
        try writer.write([4, 5], at: 3)
        #expect(try reader.status().size == 5)
        #expect(try reader.withBytes(at: 0, count: 5) { Array($0) } == [1, 2, 3, 4, 5])
        try writer.truncate(to: 2)
        #expect(try reader.status().size == 2)
        #expect(try reader.read(count: 5, at: 0) == [1, 2])
        // Replaced by a rename: the old handle reads the old file, which is no longer linked.
        let other = try fs.openFile(joinPath(directory, "b"), create: true)
        try other.write([7, 7, 7, 7], at: 0)
        try fs.rename(joinPath(directory, "b"), to: path)
        #expect(try reader.status() == FileStatus(size: 2, isLinked: false))
        #expect(try reader.read(count: 5, at: 0) == [1, 2])
        let fresh = try fs.openForReading(path)
        #expect(try fresh.status() == FileStatus(size: 4, isLinked: true))
        // Removed: still readable through the handle.
        try fs.removeFile(path)
        #expect(try fresh.status() == FileStatus(size: 4, isLinked: false))
        #expect(try fresh.read(count: 4, at: 0) == [7, 7, 7, 7])
        for file in [writer, reader, other, fresh] { file.close() }
    }
}
