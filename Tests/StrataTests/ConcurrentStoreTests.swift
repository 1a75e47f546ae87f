#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

struct Account: PersistentRecord, Equatable {
    var owner: String
    var balance: Int
}

/// Snapshot isolation through the public API, from concurrent tasks: transfers between
/// accounts commit atomically (`Store.write`, one transaction each), and every fetch — taken on
/// one snapshot — sees a state where the total is unchanged, never half a transfer.
@Suite struct ConcurrentStoreTests {
    @Test func readersNeverSeeHalfATransfer() async throws {
        let seed = SeededRandom.seed(default: 0xACC0_0417)
        print("ConcurrentStoreTests seed: \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        let store = try Store(at: folder, for: [Account.self], configuration: configuration)
        let ids = try await store.write { transaction in try (0..<20).map { try transaction.insert(Account(owner: "a\($0)", balance: 100)) } }
        let total = 20 * 100

        let snapshotsChecked = try await withThrowingTaskGroup(of: Int.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    var random = SeededRandom(seed: seed &+ UInt64(writer))
                    for _ in 0..<150 {
                        let from = ids[Int(random.next() % 20)], to = ids[Int(random.next() % 20)]
                        let amount = Int(random.next() % 30)
                        try await store.write { transaction in
                            guard from != to, var a = try transaction.record(for: from), var b = try transaction.record(for: to) else { return }
                            a.balance -= amount
                            try transaction.update(from, to: a)  // the total is off until the next update commits with it
                            b.balance += amount
                            try transaction.update(to, to: b)
                        }
                    }
                    return 0
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    var checked = 0
                    for _ in 0..<150 {
                        let accounts = try Context(store).fetch(FetchDescriptor<Account>())
                        #expect(accounts.count == 20)
                        #expect(accounts.reduce(0) { $0 + $1.balance } == total, "a fetch saw half a transfer (seed \(seed))")
                        checked += 1
                        await Task.yield()
                    }
                    return checked
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(snapshotsChecked == 300)
        let final = try Context(store).fetch(FetchDescriptor<Account>())
        #expect(final.reduce(0) { $0 + $1.balance } == total)
        #expect(final.contains { $0.balance != 100 }, "the transfers changed balances")
        try store.close()
    }
}
