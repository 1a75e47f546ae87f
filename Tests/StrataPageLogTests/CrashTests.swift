import Synchronization
import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Power loss at every sync point of a seeded workload, with unsynced writes dropped, kept,
/// or torn. After each crash the reopened store must equal exactly the state after some
/// commit k, with k at least the last commit reported durable; and it must accept new
/// writes that survive the next reopen.
@Suite struct CrashTests {
    static let transactions = 220

    /// Three workloads by default; STRATA_TEST_SEED runs just that one.
    static let seeds: [UInt64] = getenv("STRATA_TEST_SEED") != nil
        ? [SeededRandom.seed(default: 0)] : [0x5EED_0001, 0x5EED_0003, 0x5EED_0005]

    @Test(arguments: seeds)
    func crashAtEverySyncPoint(seed: UInt64) throws {
        print("crashAtEverySyncPoint seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        // A clean run counts the sync points.
        let reference = MemoryFileSystem()
        var clean = CrashWorkload(seed: seed, transactions: Self.transactions)
        clean.checksInvariants = true
        clean.run(on: reference)
        #expect(clean.error == nil)
        #expect(clean.invariantProblems.isEmpty, "\(clean.invariantProblems.prefix(5))")
        #expect(clean.states.count > 150, "the workload should commit most of its transactions")
        let syncPoints = reference.counters.syncs
        var tested = 0
        var outcomes: [Int: Int] = [:]
        // Debug builds are ~100x slower: they test every 8th sync point; `make test` (release) tests all.
        #if DEBUG
        let stride = 8
        #else
        let stride = 1
        #endif
        let points = Array(Swift.stride(from: 0, through: syncPoints, by: stride))
        for point in points {
            for mode in MemoryFileSystem.CrashMode.allCases {
                var random = SeededRandom(seed: seed &+ UInt64(point * 3) &+ UInt64(mode.hashValue & 3))
                let (fs, workload) = MemoryFileSystem.runUntilPowerCut(atSync: point, mode: mode, using: &random) { fs in
                    var workload = CrashWorkload(seed: seed, transactions: Self.transactions)
                    workload.run(on: fs)
                    return workload
                }
                let context = "sync point \(point) of \(syncPoints), mode \(mode), seed \(seed)"
                let log: PageLog
                do {
                    log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
                } catch {
                    Issue.record("reopen failed at \(context): \(error)")
                    continue
                }
                let recovered = try contents(of: log)
                guard let k = workload.accepts(recovered) else {
                    Issue.record("recovered state is not a committed state at or after commit \(workload.lastDurable) (\(context))")
                    continue
                }
                outcomes[k - workload.lastDurable, default: 0] += 1
                let problems = log.checkInvariants()
                #expect(problems.isEmpty, "after recovery (\(context)): \(problems.prefix(3))")
                // The recovered store takes new writes, and they survive a reopen.
                let id = try log.write { txn in
                    let id = try txn.allocatePageID()
                    try txn.write(id, bytes: [0xAB, UInt8(point & 0xFF)])
                    return id
                }
                var expected = recovered
                expected[id] = [0xAB, UInt8(point & 0xFF)]
                fs.simulateCrash(mode: .dropAll, using: &random)
                let again = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
                #expect(try contents(of: again) == expected, "after recovery and one more durable commit (\(context))")
                tested += 1
            }
        }
        print("crashAtEverySyncPoint: \(tested) crash points tested (\(points.count) of \(syncPoints + 1) sync points × 3 modes); commits beyond the last durable one that survived: \(outcomes.sorted { $0.key < $1.key })")
        #expect(tested == 3 * points.count)
    }

    /// EIO and ENOSPC at every mutating file system call: the call throws, the instance
    /// refuses every later write, and reopening after a power loss yields a committed state
    /// that includes every commit reported durable.
    @Test(arguments: [IOError.Kind.ioError, .noSpace])
    func injectedErrorsPoisonTheInstance(kind: IOError.Kind) throws {
        let seed = SeededRandom.seed(default: 0x5EED_0002)
        print("injectedErrors(\(kind)) seed \(seed)")
        let transactions = 90
        let reference = MemoryFileSystem()
        // Calls on the space reserve's file are the reserve's own (invariant 33): a failure
        // there leaves the store without (or with less) reserve, never fails the store. So are
        // the zeros written ahead of the log (invariant 35, `allocate` on a segment).
        let bestEffortOperations = Lock<Set<Int>>([])
        let zerosAhead = Atomic<Int>(0)
        reference.setFaultInjector { operation in
            if operation.path.hasPrefix(storePath + "/reserve") { bestEffortOperations.withLock { _ = $0.insert(operation.index) } }
            if operation.kind == .allocate && operation.path.hasSuffix(".seg") {
                bestEffortOperations.withLock { _ = $0.insert(operation.index) }
                zerosAhead.add(1, ordering: .relaxed)
            }
            return nil
        }
        var clean = CrashWorkload(seed: seed, transactions: transactions)
        clean.run(on: reference)
        #expect(clean.error == nil)
        #expect(!bestEffortOperations.withLock { $0.isEmpty }, "the workload makes a reserve")
        #expect(zerosAhead.load(ordering: .relaxed) > 0, "the workload's durable commits write zeros ahead")
        let operations = reference.counters.operations
        var tested = 0
        #if DEBUG
        let stride = 8
        #else
        let stride = 1
        #endif
        for point in Swift.stride(from: 0, to: operations, by: stride) {
            let fs = MemoryFileSystem()
            fs.setFaultInjector { $0.index == point ? .fail(kind) : nil }
            var workload = CrashWorkload(seed: seed, transactions: transactions)
            workload.run(on: fs)
            fs.setFaultInjector(nil)
            let context = "operation \(point) of \(operations), \(kind), seed \(seed)"
            if bestEffortOperations.withLock({ $0.contains(point) }) {
                #expect(workload.error == nil, "a failure of the reserve's file or of zeros ahead failed the store at \(context): \(String(describing: workload.error))")
                var random = SeededRandom(seed: seed &+ UInt64(point))
                fs.simulateCrash(mode: .dropAll, using: &random)
                let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
                #expect(workload.accepts(try contents(of: reopened)) != nil, "recovered state is not committed (\(context))")
                tested += 1
                continue
            }
            guard let error = workload.error as? PageLogError else {
                Issue.record("no PageLogError for an injected failure at \(context): \(String(describing: workload.error))")
                continue
            }
            guard case .io(let ioError) = error, ioError.kind == kind else {
                Issue.record("expected the injected \(kind), got \(error) at \(context)")
                continue
            }
            if let log = workload.log {
                // The instance refuses writes from now on.
                do {
                    try log.write { try $0.write(1, bytes: [1]) }
                    Issue.record("a write succeeded after an injected failure at \(context)")
                } catch PageLogError.poisoned {
                } catch {
                    Issue.record("expected .poisoned after the failure at \(context), got \(error)")
                }
            }
            var random = SeededRandom(seed: seed &+ UInt64(point))
            fs.simulateCrash(mode: point % 2 == 0 ? .dropAll : .tear, using: &random)
            let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
            let recovered = try contents(of: reopened)
            #expect(workload.accepts(recovered) != nil, "recovered state is not committed at or after the last durable commit (\(context))")
            tested += 1
        }
        print("injectedErrors(\(kind)): \(tested) failure points tested")
        #expect(tested == (operations + stride - 1) / stride)
    }
}
