import Foundation
import Strata

/// backup: `Store.backup(to:verification: .frames)` of a store of 1,000,000 persons held open
/// by the app, against the "copy" baseline — the same files copied to a new folder the
/// plainest way (pread and pwrite through a 1 MiB buffer, each file fdatasync'd, the folder
/// fsync'd), what `cp` plus a sync does. Strata's backup also pins a committed state, opens the
/// copy and checks every page frame's checksum, and renames it into place. A backup verifying
/// in full (`.full`: every record, index entry and history part decoded) is timed beside each,
/// reported in the notes. Runs alternate (5 pairs), all on the page cache's warm files; medians
/// count. The store is built first (not timed); each backup is checked by opening it and reading
/// a sample of persons.
enum BackupWorkload {
    static let workload = Workload(
        name: "backup",
        summary: "Store.backup(to:) of 1M persons (frames verified) vs copying the store's files (copy + fdatasync)",
        run: run
    )

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let count = 1_000_000
        let pairs = context.scale.pick(quick: 5, full: 9)
        let storePath = context.path("store")
        context.progress("creating a store of \(count) persons (not timed)")
        try PersonRecordStore.createWithPersons(at: storePath, count: count)
        let storeBytes = FolderSize.bytes(at: storePath)
        let store = try PersonRecordStore.open(at: storePath)

        context.progress("\(pairs) backups and \(pairs) copies of \(ByteCount.text(storeBytes)), alternating")
        sync()
        var backupSeconds: [Double] = []
        var fullSeconds: [Double] = []
        var copySeconds: [Double] = []
        var copyPhaseSeconds: [Double] = []
        var backupBytes: UInt64 = 0
        var round = 0
        try Measurements.alternating(pairs: pairs, {
            let destination = context.path("backup-\(round)")
            let stopwatch = Stopwatch()
            var copied = 0.0
            let report = try store.backup(to: destination, verification: .frames) { progress in
                if progress.isVerifying { copied = stopwatch.elapsedSeconds }
            }
            backupSeconds.append(stopwatch.elapsedSeconds)
            copyPhaseSeconds.append(copied)
            backupBytes = report.bytes
            try check(destination, count: count)
            try FileManager.default.removeItem(atPath: destination)
            let full = context.path("full-\(round)")
            fullSeconds.append(try Stopwatch.time { try store.backup(to: full, verification: .full) }.seconds)
            try FileManager.default.removeItem(atPath: full)
        }, {
            let destination = context.path("copy-\(round)")
            let (_, seconds) = try Stopwatch.time { try copyFolder(storePath, to: destination) }
            copySeconds.append(seconds)
            try FileManager.default.removeItem(atPath: destination)
            round += 1
        })
        try store.close()

        return WorkloadResult(
            workload: workload.name,
            records: count,
            strataSeconds: Measurements.median(backupSeconds),
            baseline: .copy(seconds: Measurements.median(copySeconds)),
            notes: "median of \(pairs) backups verifying frames (\(Measurements.range(backupSeconds)) s) vs \(pairs) copies"
                + " (\(Measurements.range(copySeconds)) s) of \(ByteCount.text(backupBytes)), warm cache;"
                + " verifying in full: \(String(format: "%.2f", Measurements.median(fullSeconds))) s"
                + " (\(String(format: "%.1f", Measurements.median(fullSeconds) / max(Measurements.median(copySeconds), 1e-9)))×)",
            extra: [
                ("store_bytes", .int(Int64(clamping: storeBytes))),
                ("backup_bytes", .int(Int64(clamping: backupBytes))),
                ("backup_seconds", .array(backupSeconds.map { .double($0) })),
                ("backup_until_copied_seconds", .array(copyPhaseSeconds.map { .double($0) })),
                ("backup_full_verification_seconds", .array(fullSeconds.map { .double($0) })),
                ("copy_seconds", .array(copySeconds.map { .double($0) })),
            ]
        )
    }

    /// Opens the backup at `path` and reads a sample of its persons.
    private static func check(_ path: String, count: Int) throws {
        let backup = try PersonRecordStore.open(at: path)
        _ = try Context(backup).verifyPersons(count: count, countAll: true)
        try backup.close()
    }

    /// The baseline: every file of `source` copied into the new folder `destination` through
    /// a 1 MiB buffer, each file synced, then the folder.
    static func copyFolder(_ source: String, to destination: String) throws {
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: false)
        var buffer = [UInt8](repeating: 0, count: CopyBaseline.writeSize)
        for name in try FileManager.default.contentsOfDirectory(atPath: source) where name != "LOCK" && name != "reserve" {
            let input = try RawFile(path: source + "/" + name, truncate: false)
            let output = try RawFile(path: destination + "/" + name, truncate: true)
            var offset: UInt64 = 0
            while true {
                let read = try input.read(into: &buffer, at: offset)
                if read == 0 { break }
                try buffer.withUnsafeBytes { try output.write(UnsafeRawBufferPointer(rebasing: $0[0..<read]), at: offset) }
                offset += UInt64(read)
            }
            try output.sync()
            try output.close()
            try input.close()
        }
        let folder = open(destination, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { throw BenchmarkError.system(call: "open", path: destination, errno: errno) }
        defer { close(folder) }
        guard fsync(folder) == 0 else { throw BenchmarkError.system(call: "fsync", path: destination, errno: errno) }
    }
}
