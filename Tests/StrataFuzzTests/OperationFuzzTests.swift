#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
@_spi(Engine) import Strata
import StrataTestSupport

/// Operation fuzzing (issue 6, item 4): seeded random sequences of inserts, updates, deletes,
/// `delete(where:)`, fetches (predicates, sorting, limit and offset), saves, rollbacks,
/// `Store.write` transactions, history reads, `deleteHistory`, consumers, a journal size
/// limit, checkpoints, compactions, reopens (with `verify()`) and migrations along the
/// five-version chain of FuzzSchemas.swift — all in the same sequences — checked against
/// `FuzzState` after every step.
@Suite struct OperationFuzzTests {
    #if DEBUG
    static let steps = 150
    #else
    static let steps = 1_000
    #endif

    @Test func randomOperationsMatchTheModel() throws {
        var (_, random) = FuzzConfiguration.generator(for: "operations")
        let sequences = 6 * FuzzConfiguration.multiplier
        var counts: [String: Int] = [:]
        var operations = 0
        for sequence in 0..<sequences {
            let sequenceSeed = random.next()
            var sequenceRandom = SeededRandom(seed: sequenceSeed)
            var configuration = Store.Configuration()
            configuration.durability = sequenceRandom.next() % 4 == 0 ? .durable : .relaxed
            configuration.storage.segmentSize = (16 << 10) << Int(sequenceRandom.next() % 3)
            configuration.storage.checkpointInterval = (32 << 10) << Int(sequenceRandom.next() % 3)
            configuration.storage.compression = sequenceRandom.next() % 2 == 0
            configuration.storage.memoryMappedReads = sequenceRandom.next() % 2 == 0
            configuration.storage.automaticCompaction = false  // compaction is one of the operations
            if sequence % 2 == 1 { configuration.history.maximumBytes = 4_000 + Int(sequenceRandom.next() % 8_000) }
            let folder = try temporaryDirectory()
            defer { removeDirectory(folder) }
            let fuzzer = OperationFuzzer(fileSystem: POSIXFileSystem(memoryMapping: configuration.storage.memoryMappedReads), path: folder,
                                         configuration: configuration, random: sequenceRandom,
                                         name: "sequence \(sequence) seed \(FuzzConfiguration.seed)")
            try fuzzer.open()
            // Four migrations at random steps, one or two versions at a time, up to the last.
            var migrationSteps = Set<Int>()
            while migrationSteps.count < 4 { migrationSteps.insert(Int(fuzzer.random.next() % UInt64(Self.steps))) }
            for step in 0..<Self.steps {
                if migrationSteps.contains(step) && fuzzer.state.version < FuzzVersions.latest {
                    let target = min(FuzzVersions.latest, fuzzer.state.version + (fuzzer.random.next() % 4 == 0 ? 2 : 1))
                    try fuzzer.migrate(to: target)
                } else {
                    try fuzzer.randomStep()
                }
                operations += 1
            }
            try fuzzer.reopen()
            try fuzzer.close()
            for (key, value) in fuzzer.counts { counts[key, default: 0] += value }
            counts["finalRecords", default: 0] += fuzzer.state.saved.count
            counts["journaled", default: 0] += Int(fuzzer.state.lastToken)
        }
        FuzzConfiguration.report("operations", [
            "sequences": sequences, "operations": operations, "inserts": counts["insert"] ?? 0, "updates": counts["update"] ?? 0,
            "deletes": (counts["delete"] ?? 0) + (counts["deleteWhere"] ?? 0), "fetches": counts["fetch"] ?? 0,
            "saves": counts["save"] ?? 0, "writes": counts["write"] ?? 0, "rollbacks": counts["rollback"] ?? 0,
            "migrations": counts["migration"] ?? 0, "migration_steps": counts["migrationSteps"] ?? 0,
            "checkpoints": counts["checkpoint"] ?? 0, "compactions": counts["compact"] ?? 0, "reopens": counts["reopen"] ?? 0,
            "verifies": counts["verify"] ?? 0, "history_checks": counts["historyCheck"] ?? 0,
            "delete_history": counts["deleteHistory"] ?? 0, "cursors": counts["setHistoryCursor"] ?? 0,
            "journaled": counts["journaled"] ?? 0, "final_records": counts["finalRecords"] ?? 0,
        ])
        #expect(counts["migrationSteps"] == 4 * sequences, "every sequence reaches the last version")
        #expect((counts["compact"] ?? 0) > 0 && (counts["reopen"] ?? 0) > 0 && (counts["deleteHistory"] ?? 0) > 0)
    }
}
