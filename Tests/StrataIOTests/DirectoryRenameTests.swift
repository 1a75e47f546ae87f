import Testing
import StrataIO
import StrataTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `FileSystem.rename` of a whole folder and `removeDirectory` (a backup is written beside its
/// destination and renamed into place), the same on real files and in `MemoryFileSystem`.
@Suite struct DirectoryRenameTests {
    @Test(arguments: [false, true]) func aFolderRenamesWholeAndAnEmptyOneIsRemoved(realFiles: Bool) throws {
        let root = realFiles ? try temporaryDirectory() : "/root"
        defer { if realFiles { removeDirectory(root) } }
        let memory = MemoryFileSystem()
        let fs: any FileSystem = realFiles ? POSIXFileSystem() : memory
        let source = joinPath(root, "copy.tmp"), destination = joinPath(root, "copy")
        try fs.createDirectory(source)
        for (name, byte) in [("superblock", UInt8(1)), ("0000000000000001.seg", 2)] {
            let file = try fs.openFile(joinPath(source, name), create: true)
            try file.write([byte, byte], at: 0)
            try file.sync()
            file.close()
        }
        // A folder holding something is neither removed nor a rename's target.
        #expect(throws: IOError.self) { try fs.removeDirectory(source) }
        try fs.createDirectory(joinPath(root, "full"))
        let blocker = try fs.openFile(joinPath(root, "full/x"), create: true)
        blocker.close()
        do {
            try fs.rename(source, to: joinPath(root, "full"))
            Issue.record("a folder was renamed onto a folder holding a file")
        } catch let error as IOError {
            #expect(error.code == ENOTEMPTY || error.code == EEXIST, "\(error)")
        }
        #expect(fs.fileExists(joinPath(source, "superblock")))
        try fs.rename(source, to: destination)
        try fs.syncDirectory(root)
        #expect(!fs.fileExists(source) && !fs.fileExists(joinPath(source, "superblock")))
        #expect(Set(try fs.contentsOfDirectory(destination)) == ["superblock", "0000000000000001.seg"])
        #expect(try fs.openForReading(joinPath(destination, "0000000000000001.seg")).read(count: 2, at: 0) == [2, 2])
        if !realFiles {
            // Renamed and the parent synced: the files are durable under their new names.
            var random = SeededRandom(seed: 0xD1)
            memory.simulateCrash(mode: .dropAll, using: &random)
            #expect(memory.contents(of: joinPath(destination, "superblock")) == [1, 1])
            #expect(memory.contents(of: joinPath(source, "superblock")) == nil)
        }
        try fs.createDirectory(joinPath(root, "empty"))
        try fs.removeDirectory(joinPath(root, "empty"))
        #expect(!fs.fileExists(joinPath(root, "empty")))
        #expect(throws: IOError.self) { try fs.removeDirectory(joinPath(root, "empty")) }
    }
}
