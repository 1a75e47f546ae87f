import Testing
import StrataIO
import StrataTestSupport
import StrataPageLog

@Test func probeWorkloadCost() throws {
    let fs = MemoryFileSystem()
    var w = CrashWorkload(seed: 1, transactions: 220)
    let clock = ContinuousClock()
    let t = clock.measure { w.run(on: fs) }
    print("PROBE run: \(t), syncs \(fs.counters.syncs), ops \(fs.counters.operations), states \(w.states.count), error \(String(describing: w.error))")
}
