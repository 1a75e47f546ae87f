#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A small file system of its own — ext4 in a file mounted through a loop device, or tmpfs
/// with a size limit — mounted in a temporary folder: a disk that really fills up. Needs root
/// (mount), a loop device and `mkfs.ext4`; where any is missing the tests that use it are
/// skipped (the in-memory file system's full device, `FailurePathTests`, runs everywhere).
struct ScratchDisk {
    enum Kind: String, CaseIterable, Sendable {
        case ext4, tmpfs
    }

    let folder: String
    let image: String
    let mountPoint: String

    /// Whether both kinds can be mounted here (tried once).
    static let isAvailable: Bool = {
        guard geteuid() == 0 else { return false }
        for kind in Kind.allCases {
            guard let disk = try? ScratchDisk(kind, megabytes: 2) else { return false }
            disk.remove()
        }
        return true
    }()

    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    /// Makes a file system of `kind` and `megabytes` in a new temporary folder and mounts it.
    init(_ kind: Kind, megabytes: Int) throws {
        let folder = try temporaryDirectory()
        self.folder = folder
        image = folder + "/disk.img"
        mountPoint = folder + "/mnt"
        guard mkdir(mountPoint, 0o755) == 0 else { throw SetupError(description: "mkdir \(mountPoint): errno \(errno)") }
        let commands = switch kind {
        case .ext4: [["truncate", "-s", "\(megabytes)M", image], ["mkfs.ext4", "-q", "-F", image], ["mount", "-o", "loop", image, mountPoint]]
        case .tmpfs: [["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", mountPoint]]
        }
        for command in commands {
            guard let status = runCommand(command), status == 0 else {
                removeDirectory(folder)
                throw SetupError(description: "\(command.joined(separator: " ")) failed")
            }
        }
    }

    /// Unmounts the file system and deletes its folder.
    func remove() {
        _ = runCommand(["umount", mountPoint])
        removeDirectory(folder)
    }
}

/// A full disk, for real: a store on a 16 MiB file system of its own (ext4, which allocates
/// blocks late, and tmpfs) is written until a save fails with ENOSPC — the kernel's, at
/// whichever write or sync it comes —
/// then reopened on the full device, where it takes deletes, compacts, and takes saves again;
/// nothing committed is lost, nothing of the failed save is kept (`FailurePathTests` does the
/// same on the in-memory file system's capacity).
@Suite(.serialized, .enabled(if: ScratchDisk.isAvailable, "needs root, a loop device and mkfs.ext4"))
struct RealDiskFullTests {
    typealias Parcel = FailurePathTests.Parcel

    @Test(arguments: ScratchDisk.Kind.allCases)
    func aFullDiskLeavesTheStoreOpenToDeletesAndCompaction(_ kind: ScratchDisk.Kind) throws {
        let seed = SeededRandom.seed(default: 0xE47F_0011)
        print("RealDiskFullTests seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let disk = try ScratchDisk(kind, megabytes: 16)
        defer { disk.remove() }
        let path = disk.mountPoint + "/store"
        var configuration = Store.Configuration()
        configuration.storage.segmentSize = 1 << 20
        var model: [UInt64: Parcel] = [:]
        var batch = 0
        func insertBatch(_ store: Store) throws {
            var inserted: [UInt64: Parcel] = [:]
            try store.write { transaction in
                for index in 0..<500 {
                    // Random hex: LZ4 saves little, so the disk fills.
                    let parcel = Parcel(label: "batch \(batch) parcel \(index) " + random.bytes(48).map { String($0, radix: 16) }.joined(),
                                        weight: batch * 1_000 + index)
                    inserted[try transaction.insert(parcel).rawValue] = parcel
                }
            }
            model.merge(inserted) { _, new in new }
            batch += 1
        }
        var store = try Store(at: path, for: [Parcel.self], configuration: configuration)
        #expect(fileSize(path + "/reserve") == 4 << 20)
        var failure: StrataError?
        for _ in 0..<1_000 where failure == nil {
            do { try insertBatch(store) } catch let error as StrataError { failure = error }
        }
        let error = try #require(failure, "16 MiB never filled")
        #expect(error.isOutOfSpace && "\(error)".contains("ENOSPC"), "\(error)")
        #expect(fileSize(path + "/reserve") == 0, "the failed save gave the reserve back")
        print("RealDiskFullTests (\(kind)): \(batch) saves of 500 parcels before \(error)")
        try? store.close()

        // The app reopens its store, on the full device: every saved parcel, none of the failed save.
        store = try Store(at: path, for: [Parcel.self], configuration: configuration)
        #expect(try FailurePathTests.parcels(store) == model)
        // It deletes the oldest three quarters of its parcels, in a few saves.
        let oldest = model.keys.sorted().prefix(model.count * 3 / 4)
        for start in stride(from: 0, to: oldest.count, by: 2_000) {
            let context = Context(store)
            for id in oldest.dropFirst(start).prefix(2_000) {
                try context.delete(RecordID<Parcel>(rawValue: id))
                model[id] = nil
            }
            try context.save()
        }
        // Compaction gives space back and refills the reserve; saves fit again.
        try store.compact()
        #expect(fileSize(path + "/reserve") > 0, "the reserve was refilled")
        try insertBatch(store)
        #expect(try FailurePathTests.parcels(store) == model)
        let report = try store.verify()
        #expect(report.isValid, "\(report)")
        try store.close()
        let reopened = try Store(at: path, for: [Parcel.self], configuration: configuration)
        #expect(try FailurePathTests.parcels(reopened) == model)
        try reopened.close()
    }
}
