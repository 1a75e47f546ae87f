import FoundationEssentials
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
