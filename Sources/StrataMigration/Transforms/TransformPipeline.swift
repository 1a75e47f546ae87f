import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import StrataIO
import StrataRecords
import StrataSchema

/// Runs a pure transform's work — decode the old record, transform, encode the new one — for
/// a streaming stage's batch on worker threads while the migration's thread reads the old
/// records and writes the new ones (`RecordTransform.mapConcurrently`; Docs/Migrations.md,
/// "Pure transforms on every core").
///
/// The migration's thread copies the batch's old records, in identifier order, into *chunks*
/// of `chunkSize` records and submits each full one. A worker (or the migration's thread, when
/// work piles up or it has nothing else to do) transforms a whole chunk, keeping each record's
/// outcome — its new bytes, dropped, or the error thrown — in the chunk. The migration's
/// thread delivers outcomes strictly in submission order, exactly as the sequential loop would
/// have met them — consecutive records of a chunk that were all written in one call (their new
/// bytes are back to back: one bulk insert), each dropped or failed one on its own: so
/// inserts, quarantined records and the error that fails the stage are the same, in the same
/// order, and every I/O call stays on the migration's thread. Chunks of one batch are all
/// delivered before it commits.
///
/// Thread-safety (`@unchecked Sendable`): the queue is a `Lock`. A chunk is filled by the
/// migration's thread before it is submitted, transformed by the one thread that took it from
/// the queue, and read back by the migration's thread after the queue marked it done (its
/// `isDone`, read and written under the lock) — each hand-over passes through the mutex,
/// which orders the accesses. The other stored properties
/// are immutable or used by the migration's thread only. Workers run on Dispatch serial queues
/// of their own (which always get a thread) from `init` to `shutDown()`, and wait on a
/// semaphore between chunks.
package final class TransformPipeline: @unchecked Sendable {
    /// Consecutive old records of a batch and, once transformed, their outcomes. Handed from
    /// thread to thread through the queue only (see the type's thread-safety note).
    final class Chunk: @unchecked Sendable {
        /// The records' identifiers, and their old bytes back to back (`inputEnds[i]` ends record i).
        // Used by one thread at a time (and no access overlaps another): no dynamic
        // exclusivity checks.
        @exclusivity(unchecked) var ids: [UInt64] = []
        @exclusivity(unchecked) var input: [UInt8] = []
        @exclusivity(unchecked) var inputEnds: [Int] = []
        /// Each record's outcome; the new bytes of those written, back to back (`outputEnds[i]`
        /// ends record i's, an empty range for the others).
        @exclusivity(unchecked) var outcomes: [Outcome] = []
        @exclusivity(unchecked) var output: [UInt8] = []
        @exclusivity(unchecked) var outputEnds: [Int] = []

        enum Outcome {
            case written
            case dropped
            case failed(any Error)
        }

        /// Whether its outcomes are all in: set, under the queue's lock, by whoever transformed it.
        var isDone = false

        var count: Int { ids.count }

        func clear() {
            ids.removeAll(keepingCapacity: true)
            input.removeAll(keepingCapacity: true)
            inputEnds.removeAll(keepingCapacity: true)
        }
    }

    private struct Queue {
        /// The chunks submitted and not yet delivered, in submission order; `chunks[front...]`
        /// were handed to no one (chunks are taken in order). A few at most: the migration's
        /// thread transforms chunks itself when `backlogHelped` wait, and recycles each chunk
        /// it delivered — so the pipeline's memory does not grow with the batch size.
        var chunks: [Chunk] = []
        var front = 0
        /// Set by `shutDown()`: workers leave.
        var stopping = false
    }

    /// Records per chunk: large enough that handing a chunk over (a lock, a semaphore) is
    /// noise next to transforming it, small enough that a batch ends with little left to wait for.
    static let chunkSize = 256

    /// Worker threads for a machine with `cores` processors: every core but the migration's
    /// thread's, at most three (the migration's thread must also read and write every record).
    package static func workerCount(cores: Int) -> Int {
        let forced = forcedWorkerCount.load(ordering: .relaxed)
        return forced >= 0 ? forced : max(0, min(cores - 1, 3))
    }

    /// Tests: the number of workers every pipeline gets from now on, whatever the cores (-1:
    /// as the cores say). Results do not depend on it.
    static let forcedWorkerCount = Atomic<Int>(-1)

    private let queue = Lock(Queue())
    /// One signal per submitted chunk and per worker at shutdown; a worker that wakes to
    /// nothing waits again.
    private let available = DispatchSemaphore(value: 0)
    /// Signalled after each chunk a worker finished; the migration's thread re-checks.
    private let progress = DispatchSemaphore(value: 0)
    /// Signalled by each worker as it leaves.
    private let exited = DispatchSemaphore(value: 0)
    private let apply: @Sendable (UnsafeRawBufferPointer, TransformEnvironment) throws -> UnsafeRawBufferPointer?
    /// The migration's thread's environment.
    private let environment: TransformEnvironment
    private let workers: Int
    private var isShutDown = false

    // The migration's thread's own state.
    /// The chunk being filled.
    @exclusivity(unchecked) private var filling: Chunk
    /// Chunks delivered and free for the next ones.
    @exclusivity(unchecked) private var spare: [Chunk] = []
    /// While it reads a batch, the migration's thread transforms a chunk itself when this many
    /// wait for a worker.
    static let backlogHelped = 2

    /// A pipeline running `apply` on `workers` threads, each with an environment `environment`
    /// makes (called once per thread, and once for the migration's thread).
    init(workers: Int, apply: @escaping @Sendable (UnsafeRawBufferPointer, TransformEnvironment) throws -> UnsafeRawBufferPointer?,
         environment: () -> TransformEnvironment) {
        self.apply = apply
        self.workers = workers
        self.environment = environment()
        filling = Chunk()
        for index in 0..<workers {
            let box = EnvironmentBox(environment())
            DispatchQueue(label: "strata.migration.transform-\(index)").async { [self] in work(box.environment) }
        }
    }

    /// The environment of one worker, handed to its thread once.
    private final class EnvironmentBox: @unchecked Sendable {
        let environment: TransformEnvironment
        init(_ environment: TransformEnvironment) { self.environment = environment }
    }

    /// Stops the workers and waits until they left: after the last batch, or when one failed
    /// (a worker finishes the chunk it holds first; nothing it does touches the store). Must be
    /// called: the workers hold the pipeline.
    func shutDown() {
        guard !isShutDown else { return }
        isShutDown = true
        queue.withLock { $0.stopping = true }
        for _ in 0..<workers { available.signal() }
        for _ in 0..<workers { exited.wait() }
    }

    /// Starts a batch (the previous one was delivered whole, or failed and the stage with it).
    func begin() {
        queue.withLock { queue in
            queue.chunks.removeAll(keepingCapacity: true)
            queue.front = 0
        }
        filling.clear()
    }

    /// Adds the batch's next old records (copied); the outcomes of records whose chunk is done
    /// go, in order, to `deliverWritten` (runs of written records) and `deliver` (the others).
    func add(_ run: RecordRun, deliverWritten: DeliverWritten, deliver: Deliver) throws {
        var done = 0
        while done < run.count {
            let chunk = filling
            let part = run.slice(done..<min(run.count, done + Self.chunkSize - chunk.count))
            let base = chunk.input.count
            chunk.input.append(contentsOf: part.allBytes.assumingMemoryBound(to: UInt8.self))
            for index in 0..<part.count {
                chunk.ids.append(part.id(index))
                chunk.inputEnds.append(base + part.end(index))
            }
            done += part.count
            if chunk.count == Self.chunkSize {
                submit()
                try drain(waiting: false, deliverWritten, deliver)
            }
        }
    }

    /// Delivers every outcome of the batch, transforming what no worker took yet.
    func finish(deliverWritten: DeliverWritten, deliver: Deliver) throws {
        if filling.count > 0 { submit() }
        try drain(waiting: true, deliverWritten, deliver)
    }

    /// What the migration's thread does with one record's outcome: its identifier, its old
    /// bytes, and its new bytes (nil: dropped) or the error the transform threw. The pipeline
    /// delivers dropped and failed records this way; written ones go to `DeliverWritten`.
    typealias Deliver = (UInt64, UnsafeRawBufferPointer, Result<UnsafeRawBufferPointer?, any Error>) throws -> Void

    /// What the migration's thread does with consecutive records of a chunk that were all
    /// written (`RecordTreeWriter.insert(ids:bytes:start:ends:)` takes this shape): their
    /// identifiers, and their new bytes back to back in `bytes` — `ends[i]` ends record i's,
    /// record 0's start at `start`.
    typealias DeliverWritten = (_ ids: UnsafeBufferPointer<UInt64>, _ bytes: UnsafeRawBufferPointer, _ start: Int,
                                _ ends: UnsafeBufferPointer<Int>) throws -> Void

    private func submit() {
        let chunk = filling
        filling = spare.popLast() ?? Chunk()
        filling.clear()
        chunk.isDone = false  // no other thread holds it: delivered, or new
        queue.withLock { $0.chunks.append(chunk) }
        available.signal()
    }

    /// Delivers the chunks at the head that are done. Not `waiting` (the batch is still being
    /// read): also transforms the oldest chunk no worker took when `backlogHelped` wait, so
    /// the workers never fall far behind. `waiting` (the batch was read): transforms every
    /// chunk no worker took and waits for the others, until all are delivered.
    private func drain(waiting: Bool, _ deliverWritten: DeliverWritten, _ deliver: Deliver) throws {
        enum Step { case deliver(Chunk), run(Chunk), wait, stop }
        while true {
            let step = queue.withLock { queue -> Step in
                if let first = queue.chunks.first, first.isDone {
                    // Taken (it is done), so `front` is past it.
                    queue.chunks.removeFirst()
                    queue.front -= 1
                    return .deliver(first)
                }
                if queue.front < queue.chunks.count && (waiting || queue.chunks.count - queue.front >= Self.backlogHelped) {
                    queue.front += 1
                    return .run(queue.chunks[queue.front - 1])
                }
                return waiting && !queue.chunks.isEmpty ? .wait : .stop
            }
            switch step {
            case .deliver(let chunk):
                try deliverOutcomes(of: chunk, deliverWritten, deliver)
                spare.append(chunk)
            case .run(let chunk):
                transform(chunk, environment)
                queue.withLock { _ in chunk.isDone = true }
            case .wait:
                progress.wait()
            case .stop:
                return
            }
        }
    }

    /// Delivers a chunk's outcomes in order: each run of consecutive written records at once,
    /// every other record on its own.
    private func deliverOutcomes(of chunk: Chunk, _ deliverWritten: DeliverWritten, _ deliver: Deliver) throws {
        try chunk.input.withUnsafeBytes { input in
            try chunk.output.withUnsafeBytes { output in
                try chunk.ids.withUnsafeBufferPointer { ids in
                    try chunk.outputEnds.withUnsafeBufferPointer { outputEnds in
                        var index = 0
                        while index < chunk.count {
                            var end = index
                            while end < chunk.count, case .written = chunk.outcomes[end] { end += 1 }
                            if end > index {
                                try deliverWritten(UnsafeBufferPointer(rebasing: ids[index..<end]), output,
                                                   index == 0 ? 0 : outputEnds[index - 1],
                                                   UnsafeBufferPointer(rebasing: outputEnds[index..<end]))
                                index = end
                                continue
                            }
                            let inputStart = index == 0 ? 0 : chunk.inputEnds[index - 1]
                            let old = UnsafeRawBufferPointer(rebasing: input[inputStart..<chunk.inputEnds[index]])
                            // Not written (those went above): dropped, or failed.
                            if case .failed(let error) = chunk.outcomes[index] {
                                try deliver(ids[index], old, .failure(error))
                            } else {
                                try deliver(ids[index], old, .success(nil))
                            }
                            index += 1
                        }
                    }
                }
            }
        }
    }

    /// Transforms every record of `chunk` with `environment` (on whichever thread took it).
    private func transform(_ chunk: Chunk, _ environment: TransformEnvironment) {
        chunk.outcomes.removeAll(keepingCapacity: true)
        chunk.output.removeAll(keepingCapacity: true)
        chunk.outputEnds.removeAll(keepingCapacity: true)
        chunk.input.withUnsafeBytes { input in
            var start = 0
            for index in 0..<chunk.count {
                let old = UnsafeRawBufferPointer(rebasing: input[start..<chunk.inputEnds[index]])
                do {
                    if let new = try apply(old, environment) {
                        chunk.output.append(contentsOf: new.assumingMemoryBound(to: UInt8.self))
                        chunk.outcomes.append(.written)
                    } else {
                        chunk.outcomes.append(.dropped)
                    }
                } catch {
                    chunk.outcomes.append(.failed(error))
                }
                chunk.outputEnds.append(chunk.output.count)
                start = chunk.inputEnds[index]
            }
        }
    }

    /// A worker's loop: take the oldest chunk nobody took, transform it, mark it done; leave
    /// at shutdown.
    private func work(_ environment: TransformEnvironment) {
        while true {
            available.wait()
            let next = queue.withLock { queue -> Chunk?? in
                if queue.stopping { return .some(nil) }
                guard queue.front < queue.chunks.count else { return nil }
                queue.front += 1
                return queue.chunks[queue.front - 1]
            }
            guard let next else { continue }  // the migration's thread took it
            guard let chunk = next else { break }
            transform(chunk, environment)
            queue.withLock { _ in chunk.isDone = true }
            progress.signal()
        }
        exited.signal()
    }
}
