import Dispatch
import Synchronization
import StrataFormat
import StrataIO

/// One page write handed to the frame pipeline: the page's bytes (owned: a copy, or an array
/// the caller gave away) and the header fields; whoever builds it fills in `frame`.
///
/// Thread-safety (`@unchecked Sendable`): the `let` properties are immutable. `frame` is
/// written by the initializer of a free (`init(freeing:lsn:formatVersion:)`, never in the
/// inbox), otherwise only by the thread that took the job from the inbox (the pipeline's
/// worker, or the transaction waiting for a frame), before it sets `done` (releasing), and
/// read only by the transaction after it loaded `done` as true (acquiring) — the atomic
/// orders the two accesses, so they never overlap. A job is built exactly once (the inbox
/// hands each job out once).
final class FrameJob: @unchecked Sendable {
    /// The page written.
    let pageID: UInt64
    /// The transaction's LSN.
    let lsn: UInt64
    /// The page header's entity id.
    let entityID: UInt32
    /// The page header's schema version.
    let schemaVersion: UInt32
    /// The page's content, owned by the job.
    let payload: [UInt8]
    /// Whether to try LZ4 (`FrameCodec.append`'s `compress`).
    let compress: Bool
    /// Whether the frame frees the page (a `.free` frame, built when the job is made) rather
    /// than writing it.
    let frees: Bool
    /// `FrameCodec.append`'s `directoryLength`: the page is read in part.
    let directoryLength: Int?
    /// The store's format version, which the frame is written in (`FrameCodec.append`'s).
    let formatVersion: UInt16
    /// The finished frame (header, stored payload, padding), exactly the bytes
    /// `FrameCodec.append` appends; valid once `done` is true.
    var frame: [UInt8] = []
    /// What the job counts for against the pipeline's bound: its payload plus a frame header,
    /// so even empty pages are bounded in number.
    var cost: Int { payload.count + FrameHeader.size }
    /// Set by the worker once `frame` is complete.
    let done = Atomic<Bool>(false)

    /// A job for one page write.
    init(pageID: UInt64, lsn: UInt64, entityID: UInt32, schemaVersion: UInt32, payload: [UInt8], compress: Bool, directoryLength: Int? = nil,
         formatVersion: UInt16) {
        self.pageID = pageID
        self.lsn = lsn
        self.entityID = entityID
        self.schemaVersion = schemaVersion
        self.payload = payload
        self.compress = compress
        self.directoryLength = directoryLength
        self.formatVersion = formatVersion
        frees = false
    }

    /// A job freeing `pageID`, its `.free` frame (a header, no payload) built already and
    /// `done`: it only keeps its place among the frames in flight, and never goes to the
    /// worker.
    init(freeing pageID: UInt64, lsn: UInt64, formatVersion: UInt16) {
        self.pageID = pageID
        self.lsn = lsn
        entityID = 0
        schemaVersion = 0
        payload = []
        compress = false
        directoryLength = nil
        self.formatVersion = formatVersion
        frees = true
        _ = [UInt8]().withUnsafeBytes { empty in
            FrameCodec.append(kind: .free, pageID: pageID, lsn: lsn, payload: empty, compress: false, formatVersion: formatVersion,
                              to: &frame)
        }
        done.store(true, ordering: .releasing)
    }
}

/// The background worker that compresses, frames and checksums page writes of large write
/// transactions (Architecture.md, invariant 17), on a Dispatch serial queue, one job at a
/// time in submission order, with its own LZ4 state.
///
/// The worker only builds frames in memory: it never touches the writer's state, the files
/// or the page table. A transaction that must place every frame in flight (at commit, or
/// before it reads a page among them) builds the jobs nobody took yet itself meanwhile, in
/// order, with the writer's compression state, instead of sleeping — both threads then
/// compress, and the bytes are the same whoever built a frame (`LZ4Codec.compress(_:into:using:)`
/// depends on its input alone). The transaction places finished frames into the write buffer itself,
/// in submission order, on its own thread (so every I/O call happens there, in the order the
/// synchronous path makes it). One pipeline belongs to one `PageLog` and is used only by the
/// transaction holding the writer lock; every transaction waits for the worker to stop
/// (`waitUntilIdle`) before it ends, so no work outlives a transaction, let alone the store.
final class FramePipeline: Sendable {
    private struct Inbox {
        /// Submitted jobs; those before `next` were handed to the worker (and their slots
        /// cleared, so a built frame is held only by the transaction).
        var jobs: [FrameJob?] = []
        var next = 0
        /// Whether a worker run is scheduled or running (it drains `jobs` before it stops).
        var running = false
    }

    private let inbox = Lock(Inbox())
    /// Signalled after every finished job and when the worker stops; waiters re-check their
    /// condition, so signals nobody waited for are harmless.
    private let progress = DispatchSemaphore(value: 0)
    private let queue = DispatchQueue(label: "strata.pagelog.frame-pipeline")
    /// The worker's compression state (used only by the worker run, one at a time: the queue is
    /// serial and a run starts only when the previous one set `running` to false).
    private let compressor = LZ4Compressor()

    /// Whether `start()` starts the worker (`PageLogOptions.framePipelineWorkerStarts`).
    private let workerStarts: Bool
    /// Frames built by transactions waiting to place them rather than by the worker (tests).
    let framesBuiltByWaiters = Atomic<Int>(0)

    /// An idle pipeline; no thread runs until jobs are started.
    init(workerStarts: Bool = true) {
        self.workerStarts = workerStarts
    }

    /// Whether the worker has its compression state. Without one it would compress with
    /// `LZ4_compress_default`, whose output can differ from a reused state's, so the
    /// transaction then builds every frame itself.
    var isAvailable: Bool { compressor != nil }

    /// Queues a job. With `start` true the worker is started if it is idle; otherwise the job
    /// waits until the next `start` (a running worker takes it anyway). Batching the start
    /// saves a thread wake-up per page.
    func submit(_ job: FrameJob, start: Bool) {
        let start = start && workerStarts
        let wake = inbox.withLock { inbox in
            inbox.jobs.append(job)
            guard start, !inbox.running else { return false }
            inbox.running = true
            return true
        }
        if wake { queue.async { self.work() } }
    }

    /// Starts the worker if jobs wait and it is idle.
    func start() {
        guard workerStarts else { return }
        let wake = inbox.withLock { inbox in
            guard !inbox.running, inbox.next < inbox.jobs.count else { return false }
            inbox.running = true
            return true
        }
        if wake { queue.async { self.work() } }
    }

    /// Blocks until `job` is built (starting the worker first, so it cannot wait for a job
    /// nobody will build). With a `compressor` (the writer's: the calling thread must own it),
    /// builds the jobs no one took yet on the calling thread meanwhile, the oldest first.
    func wait(for job: FrameJob, helpingWith compressor: LZ4Compressor? = nil) {
        guard !job.done.load(ordering: .acquiring) else { return }
        start()
        while !job.done.load(ordering: .acquiring) {
            if let compressor, let next = takeUnstarted() {
                build(next, with: compressor)
                framesBuiltByWaiters.add(1, ordering: .relaxed)
                continue
            }
            progress.wait()
        }
    }

    /// Blocks until every submitted job is built and the worker has stopped.
    func waitUntilIdle() {
        guard workerStarts else {
            // No worker: jobs of an abandoned transaction are dropped, never built.
            inbox.withLock { inbox in
                inbox.jobs.removeAll(keepingCapacity: true)
                inbox.next = 0
            }
            return
        }
        start()
        while inbox.withLock({ $0.running }) { progress.wait() }
    }

    /// The worker run: builds jobs in order until none is left, then stops.
    private func work() {
        while let job = takeNext() {
            build(job, with: compressor)
            progress.signal()
        }
        progress.signal()
    }

    /// Builds `job`'s frame with `compressor` (used by this thread alone meanwhile) and marks
    /// it done.
    private func build(_ job: FrameJob, with compressor: LZ4Compressor?) {
        var frame: [UInt8] = []
        frame.reserveCapacity(FrameHeader.size + LZ4Codec.bound(job.payload.count) + FrameHeader.alignment)
        job.payload.withUnsafeBytes { payload in
            _ = FrameCodec.append(kind: .page, pageID: job.pageID, lsn: job.lsn, entityID: job.entityID,
                                  schemaVersion: job.schemaVersion, payload: payload, compress: job.compress,
                                  directoryLength: job.directoryLength, formatVersion: job.formatVersion, compressor: compressor, to: &frame)
        }
        job.frame = frame
        job.done.store(true, ordering: .releasing)
    }

    /// The oldest job no one took, taken (by a waiting transaction), or nil; the worker's
    /// state is left as it is.
    private func takeUnstarted() -> FrameJob? {
        inbox.withLock { inbox in
            guard inbox.next < inbox.jobs.count else { return nil }
            let job = inbox.jobs[inbox.next]
            inbox.jobs[inbox.next] = nil
            inbox.next += 1
            return job
        }
    }

    /// The next job for the worker, or nil (and the worker marked stopped) when none is left.
    private func takeNext() -> FrameJob? {
        inbox.withLock { inbox in
            guard inbox.next < inbox.jobs.count else {
                inbox.jobs.removeAll(keepingCapacity: true)
                inbox.next = 0
                inbox.running = false
                return nil
            }
            let job = inbox.jobs[inbox.next]
            inbox.jobs[inbox.next] = nil
            inbox.next += 1
            if inbox.next >= 4096 {
                // A worker that never runs dry: drop the cleared slots now and then.
                inbox.jobs.removeFirst(inbox.next)
                inbox.next = 0
            }
            return job
        }
    }
}
