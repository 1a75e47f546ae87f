import StrataIO
import StrataPageLog
import StrataRecords

/// Tuning of the storage under a store.
public struct StorageOptions: Sendable {
    /// A new segment file is started when the next frame would pass this size (default 64 MiB).
    public var segmentSize: Int
    /// Bytes of log between automatic checkpoints; bounds recovery time (default 64 MiB).
    public var checkpointInterval: Int
    /// Compress pages with LZ4 when it saves at least 1/8 (default true).
    public var compression: Bool
    /// Compact in the background when the log passes twice the live data (default true).
    /// Off, the log only grows until the app calls `Store.compact()`.
    public var automaticCompaction: Bool
    /// Read pages through read-only memory maps of the store's files (default true): no
    /// system call and no copy per page read. The trade-off is SQLite's `mmap_size`: a disk
    /// error under a mapped page stops the process (SIGBUS) instead of throwing
    /// `StrataError.io`. Set false to read with `pread` only.
    public var memoryMappedReads = true
    /// Whether a custom migration stage stores the records it writes uncompressed, to be
    /// compressed in the background once the store is open (default: true where the process
    /// may run on one processor only, false on two or more). With a second processor the
    /// stage compresses on it (the page log's frame pipeline) while it transforms, so
    /// deferring saves little of the launch and costs more work in all: the uncompressed
    /// leaves written, read back and written again. On one processor LZ4 is about a quarter of
    /// the stage's CPU, and deferring it shortens the launch that migrates. Until the
    /// background pass is done (about a quarter of a second of one core per million records,
    /// at utility priority; started again at the next open if the app stops first) the
    /// migrated entities take more disk — up to their uncompressed size — and the pass takes
    /// the writer's lock for a few milliseconds at a time. `Store.compact()` finishes it at
    /// once. Docs/Migrations.md, "Speed".
    public var defersMigrationCompression = Processors.usable < 2
    /// Bytes the store keeps in reserve on the device (default 4 MiB; 0: none), as a file of
    /// zeros, `reserve`, in its folder. When a write finds the device full, the store gives
    /// them back at once (the save fails with `StrataError.io`, ``StrataError/isOutOfSpace``):
    /// reopened, the store has room to delete records and ``Store/compact()``, which frees space
    /// one segment at a time while the device is full and refills the reserve from what it
    /// frees. Docs/Architecture.md, "Space reserve".
    public var spaceReserve: Int
    /// Whether the deferred compression pass starts by itself when the store opens (tests
    /// turn it off to see the store before the pass; `Store.compact()` runs it).
    package var compressesDeferredLeavesInBackground = true

    /// The defaults.
    public init() {
        let defaults = PageLogOptions()
        segmentSize = defaults.segmentSize
        checkpointInterval = defaults.checkpointInterval
        compression = defaults.compression
        automaticCompaction = defaults.automaticCompaction
        spaceReserve = defaults.spaceReserve
    }

    /// The record layer's options these set.
    var recordTreeOptions: RecordTreeOptions {
        var options = RecordTreeOptions()
        options.defersShadowCompression = defersMigrationCompression
        return options
    }

    /// The file system the store's files are opened through.
    var fileSystem: POSIXFileSystem { POSIXFileSystem(memoryMapping: memoryMappedReads) }

    var pageLogOptions: PageLogOptions {
        var options = PageLogOptions()
        options.segmentSize = segmentSize
        options.checkpointInterval = checkpointInterval
        options.compression = compression
        options.automaticCompaction = automaticCompaction
        options.spaceReserve = spaceReserve
        return options
    }
}
