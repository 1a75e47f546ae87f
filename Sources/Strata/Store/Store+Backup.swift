import Dispatch
import StrataIO
import StrataPageLog
import StrataRecords

/// Where a running backup is (`Store.backup(to:verification:progress:)`). Delivered after each piece copied
/// (at most 1 MiB), once when the copy is complete and its verification starts, and once when
/// the backup is in place. `bytesCopied` never decreases and ends at `bytesTotal`.
public struct BackupProgress: Sendable, Equatable {
    /// Bytes of the store's files copied so far.
    public var bytesCopied: UInt64
    /// Bytes the backup copies in all: the store's files as of the committed state it pinned.
    public var bytesTotal: UInt64
    /// Whether every byte is copied and the copy is being verified (it reads the whole copy).
    public var isVerifying: Bool
    /// Whether the backup is verified and in place at its destination: the last progress.
    public var isFinished: Bool

    /// The fraction of the bytes copied, 0…1.
    public var fractionDone: Double {
        bytesTotal == 0 ? 1 : min(1, Double(bytesCopied) / Double(bytesTotal))
    }
}

/// What a finished backup wrote (`Store.backup(to:verification:progress:)`).
public struct BackupReport: Sendable {
    /// The backup's folder: a store that opens like any other.
    public let path: String
    /// Bytes copied: the store's files as of the committed state the backup holds.
    public let bytes: UInt64
    /// Files copied (the superblock and the segments).
    public let files: Int
    /// The verification of the copy (sound, or the backup would have failed); with
    /// `BackupVerification.frames`, its `records`, `indexEntries` and `historyParts` are 0.
    public let verification: VerificationReport
}

/// How a backup checks its copy before renaming it into place
/// (`Store.backup(to:verification:progress:)`).
public enum BackupVerification: Sendable, Equatable {
    /// The default: the copy opens, and every page's frame is whole — the superblock slots and
    /// the checkpoint roots they name, the log's length, each frame's checksum and header with
    /// the page id, LSN and length the copy's page table expects — nothing decompressed or
    /// decoded. The copy's bytes are the source's, so this proves it is a whole image of one
    /// committed state; its records are as sound as the source's (which `verify()` on the
    /// source, or `.full`, checks). It reads the copy once, through one buffer, at checksum
    /// speed: a backup takes about 1.5 times a plain copy of the files (Docs/Benchmarks.md).
    case frames
    /// What `Store.verify()` checks, on the copy: the superblock, the log, every page frame
    /// (decompressed), every record tree, index and the history journal. It reads and decodes
    /// every record: as long as `verify()` of the store, about ten times the copying.
    case full
}

/// What `Store.backingUp(to:verification:)` delivers.
public enum BackupEvent: Sendable {
    /// The backup's progress.
    case progress(BackupProgress)
    /// The backup is verified and in place. The last event.
    case finished(BackupReport)
}

extension Store {
    /// Backs the store up into a new store folder at `path` while the app goes on using it:
    /// the backup holds exactly one committed state — every transaction committed before the
    /// call started, perhaps some committed during it, nothing partial — and opens as a store of
    /// its own (same schema versions, records, indexes, history journal).
    ///
    /// Writers are never kept waiting for the copy: the committed state is pinned by holding
    /// the writer lock only between two commits, while the segment files are opened (a
    /// read-only store, whose writer is another process, pins without any lock); compaction
    /// and checkpoints go on meanwhile (Docs/Architecture.md, "Backup"). Memory stays bounded
    /// (one 1 MiB buffer) whatever the store's size. The copy is written into the sibling
    /// folder `path + ".tmp"`, every file and the folder synced, opened read-only and verified
    /// (`verification`: every page frame's checksum by default, or in full as `verify()`
    /// checks), and only then renamed to `path`: `path` never holds a half-written
    /// or unverified backup. On any failure the temporary folder is removed and nothing is
    /// at `path`. A temporary folder left by a backup a crash interrupted is removed first.
    ///
    /// The backup holds what readers see: a commit whose sync has not returned yet (a
    /// `.relaxed` one, or a durable one still syncing) may be in it although a power cut could
    /// still take it from the store itself.
    ///
    /// `progress` is called on the calling thread (see `BackupProgress`); keep it short.
    /// Thread-safe; several backups may run at once (to different paths).
    ///
    /// - Returns: what was copied, and the copy's verification.
    /// - Throws: `StrataError.destinationExists` when something already is at `path` (nothing
    ///   is written); `.closed`; `.poisoned` (an earlier write of this instance failed, so its
    ///   files may lag what it holds); `.corruption` when the copy fails verification (the
    ///   source may be damaged: run `verify()`); `.io` (a full device, no permission at `path`).
    @discardableResult
    public func backup(to path: String, verification: BackupVerification = .frames,
                       progress: ((BackupProgress) -> Void)? = nil) throws -> BackupReport {
        try StoreBackup.run(records.log, to: path, verification: verification, progress: progress)
    }

    /// ``backup(to:verification:progress:)`` that asks `isCancelled` before each piece it copies
    /// and stops with `CancellationError` (nothing left at `path`) once it says true.
    package func backup(to path: String, verification: BackupVerification, progress: ((BackupProgress) -> Void)?,
                        isCancelled: () -> Bool) throws -> BackupReport {
        try StoreBackup.run(records.log, to: path, verification: verification, progress: progress, isCancelled: isCancelled)
    }

    /// Backs the store up as ``backup(to:verification:progress:)`` does, on a thread of its own
    /// while the calling task is suspended; `progress` is called on that thread.
    /// - Throws: as ``backup(to:verification:progress:)``.
    @discardableResult
    public func backup(to path: String, verification: BackupVerification = .frames,
                       progress: (@Sendable (BackupProgress) -> Void)? = nil) async throws -> BackupReport {
        try await runOffTheCooperativePool { try self.backup(to: path, verification: verification, progress: progress) }
    }

    /// Backs the store up as ``backup(to:verification:progress:)`` does — on a thread of its own — and streams
    /// its progress, then its report:
    ///
    /// ```swift
    /// for try await event in store.backingUp(to: backupPath) {
    ///     switch event {
    ///     case .progress(let progress): showProgress(progress.fractionDone)
    ///     case .finished(let report): print("backed up \(report.bytes) bytes")
    ///     }
    /// }
    /// ```
    ///
    /// The stream ends after `.finished`, or throws what the backup throws. Cancelling the
    /// consuming task stops the copy at its next piece (nothing is left at `backupPath`).
    public func backingUp(to path: String, verification: BackupVerification = .frames) -> AsyncThrowingStream<BackupEvent, any Error> {
        let log = records.log
        return AsyncThrowingStream { continuation in
            let cancelled = Lock(false)
            continuation.onTermination = { termination in
                if case .cancelled = termination { cancelled.withLock { $0 = true } }
            }
            DispatchQueue.global(qos: .userInitiated).async {
                do {
                    let report = try StoreBackup.run(log, to: path, verification: verification, progress: { continuation.yield(.progress($0)) },
                                                     isCancelled: { cancelled.withLock { $0 } })
                    continuation.yield(.finished(report))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
        }
    }
}

/// The backup shared by `Store` and the `strata` tool (`StoreInspection`): `PageLog.backUp`
/// with the record layer's verification of the copy and progress that never goes back.
enum StoreBackup {
    /// Backs up the store `log` writes or follows to `path` (see `Store.backup(to:verification:progress:)`).
    /// `isCancelled` is asked before each piece: true stops the backup with `CancellationError`.
    static func run(_ log: PageLog, to path: String, verification level: BackupVerification, progress: ((BackupProgress) -> Void)?,
                    isCancelled: () -> Bool = { false }) throws -> BackupReport {
        var verification: VerificationReport?
        var reported = BackupProgress(bytesCopied: 0, bytesTotal: 0, isVerifying: false, isFinished: false)
        let (bytes, files) = try translatingErrors {
            try log.backUp(to: path, progress: { step in
                if isCancelled() { throw CancellationError() }
                // A follower's retried copy starts again from 0: report only what goes forward.
                let next = BackupProgress(bytesCopied: max(reported.bytesCopied, step.done), bytesTotal: max(reported.bytesTotal, step.total),
                                          isVerifying: reported.isVerifying || step.verifying, isFinished: false)
                if next != reported {
                    reported = next
                    progress?(next)
                }
            }, verify: { directory, fileSystem in
                verification = try verifyCopy(at: directory, fileSystem: fileSystem, level: level)
            })
        }
        reported = BackupProgress(bytesCopied: bytes, bytesTotal: bytes, isVerifying: false, isFinished: true)
        progress?(reported)
        guard let verification else { throw StrataError.corruption(file: path, offset: 0, reason: "the backup was not verified") }
        return BackupReport(path: path, bytes: bytes, files: files, verification: verification)
    }

    /// Opens the copy at `directory` read-only and verifies it (`level`).
    /// - Throws: `PageLogError.corruption` naming the first problem when it is not sound (or
    ///   does not open), so a follower's backup tries again (`PageLog.backUp`).
    static func verifyCopy(at directory: String, fileSystem: any FileSystem, level: BackupVerification) throws -> VerificationReport {
        let report: VerificationReport
        do {
            let copy = try StoreInspection(at: directory, fileSystem: fileSystem)
            defer { copy.close() }
            report = level == .full ? copy.verify() : copy.verifyFrames()
        } catch StrataError.corruption(let file, let offset, let reason) {
            throw PageLogError.corruption(file: file, offset: offset, reason: "the backup's copy does not open: \(reason)")
        }
        if let first = report.problems.first {
            throw PageLogError.corruption(file: first.file, offset: first.offset ?? 0,
                                          reason: "the backup's copy failed verification (\(report.problems.count) problem"
                                              + "\(report.problems.count == 1 ? "" : "s")): \(first.what)")
        }
        return report
    }
}
