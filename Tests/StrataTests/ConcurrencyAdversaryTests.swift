#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Testing
import StrataIO
@_spi(Engine) import Strata  // parallelScanCount only: did the fetches scan on several threads
import StrataTestSupport

// An outside user's adversarial tests of Strata under concurrent use, the way an app uses it:
// several threads and tasks, several contexts on one store, readers while writers commit, a
// read-only instance next to the writer, async APIs under cancellation, closing while others
// work. Each expectation is a statement of the documentation (README, Docs/Architecture.md
// "Store API" / "Concurrency", Docs/History.md "Observing", the public doc comments); the
// statement is quoted next to the expectation. No expectation is about timing. It found two
// defects, both fixed: a save racing another context's on a unique value of an entity with
// relationships threw instead of updating that record (upsert), and a cancelled history
// observer kept delivering the transactions it had already fetched.

// MARK: - Records

/// A bank account: transfers keep the sum of balances constant.
struct CAAccount: PersistentRecord, Equatable {
    var number: Int
    var balance: Int
}

/// One writer's counter: incremented once per transaction of that writer.
struct CACounter: PersistentRecord, Equatable {
    var writer: Int
    var value: Int
}

/// One entry per counter increment, committed with it: entries of a writer == its counter.
struct CAEntry: PersistentRecord, Equatable {
    var writer: Int
    var sequence: Int
    static let attributeOptions: [String: Attribute.Options] = ["writer": [.indexed]]
}

/// A record with a unique attribute and no relationship.
struct CAMember: PersistentRecord, Equatable {
    var email: String
    var writer: Int
    var round: Int
    static let attributeOptions: [String: Attribute.Options] = ["email": [.unique]]
}

/// A record with a unique attribute and a relationship (to-many, inverse `team`).
struct CATeam: PersistentRecord, Equatable {
    var name: String
    var writer: Int
    var players: [RecordID<CAPlayer>] = []
    static let attributeOptions: [String: Attribute.Options] = ["name": [.unique]]
    static let relationshipRules = ["players": RelationshipRule(inverse: "team")]
}

struct CAPlayer: PersistentRecord, Equatable {
    var name: String
    var team: RecordID<CATeam>?
    static let relationshipRules = ["team": RelationshipRule(inverse: "players")]
}

/// A document two contexts edit: whole-record replacement is what `update` promises.
struct CADocument: PersistentRecord, Equatable {
    var title: String
    var body: String
    var revision: Int
}

// MARK: - Helpers

/// A value shared between threads behind a lock (StrataIO's `Lock`, which ThreadSanitizer
/// builds swap for a mutex it sees).
final class CALocked<Value: Sendable>: Sendable {
    private let mutex: Lock<Value>
    init(_ value: Value) { mutex = Lock(value) }
    func with<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
    var value: Value { mutex.withLock { $0 } }
}

/// Runs `body(index)` for `count` indices, each on a Dispatch thread of its own (serial queues
/// on the overcommitting global pool), all at once; waits for all and returns what they threw.
func caOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [String] {
    let group = DispatchGroup()
    let errors = CALocked<[String]>([])
    for index in 0..<count {
        DispatchQueue(label: "ca.thread.\(index)").async(group: group) {
            do { try body(index) } catch { errors.with { $0.append("thread \(index): \(error)") } }
        }
    }
    group.wait()
    return errors.value
}

/// `caOnThreads` from async code, without blocking a thread of the cooperative pool.
func caOnThreadsAsync(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) async -> [String] {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: caOnThreads(count, body)) }
    }
}

/// A failed check on a thread of its own (thrown, reported by the test).
struct CAFailure: Error, CustomStringConvertible {
    let description: String
}

let caTypes: [any PersistentRecord.Type] = [CAAccount.self, CACounter.self, CAEntry.self, CAMember.self, CATeam.self, CAPlayer.self,
                                            CADocument.self]

func caOpen(_ folder: String, durability: Durability = .relaxed, readOnly: Bool = false) throws -> Store {
    var configuration = Store.Configuration()
    configuration.durability = durability
    configuration.isReadOnly = readOnly
    return try Store(at: folder, for: caTypes, configuration: configuration)
}

/// What one read sees of the bank-and-counters state.
struct CABankState: Sendable, Equatable {
    var accounts: Int
    var total: Int
    var counters: [Int]
    var entries: [Int]
}

@Suite struct ConcurrencyAdversaryTests {
    static let accountCount = 16
    static let startingBalance = 100
    static let writers = 3

    /// Seeds the bank: accounts and one counter per writer.
    static func seedBank(_ store: Store) throws -> (accounts: [RecordID<CAAccount>], counters: [RecordID<CACounter>]) {
        try store.write { transaction in
            let accounts = try (0..<accountCount).map { try transaction.insert(CAAccount(number: $0, balance: startingBalance)) }
            let counters = try (0..<writers).map { try transaction.insert(CACounter(writer: $0, value: 0)) }
            return (accounts, counters)
        }
    }

    /// One writer transaction: a transfer between two accounts and the writer's counter
    /// incremented with an entry for it — each half breaking an invariant until the other
    /// commits with it.
    static func transferAndCount(_ transaction: Store.WriteTransaction, writer: Int, accounts: [RecordID<CAAccount>],
                                 counter: RecordID<CACounter>, random: inout SeededRandom) throws -> Int {
        let from = accounts[Int(random.next() % UInt64(accounts.count))]
        let to = accounts[Int(random.next() % UInt64(accounts.count))]
        let amount = Int(random.next() % 40)
        if from != to, var a = try transaction.record(for: from), var b = try transaction.record(for: to) {
            a.balance -= amount
            try transaction.update(from, to: a)
            b.balance += amount
            try transaction.update(to, to: b)
        }
        guard var count = try transaction.record(for: counter) else { throw StrataError.recordNotFound("counter \(writer)") }
        count.value += 1
        try transaction.update(counter, to: count)
        try transaction.insert(CAEntry(writer: writer, sequence: count.value))
        return count.value
    }

    /// The state as one `Store.read` sees it, read four ways that must agree.
    static func readBank(_ reader: Store.ReadTransaction, counters: [RecordID<CACounter>]) throws -> (CABankState, [String]) {
        var problems: [String] = []
        let accounts = try reader.fetch(FetchDescriptor<CAAccount>())
        let total = accounts.reduce(0) { $0 + $1.balance }
        if try reader.fetchCount(FetchDescriptor<CAAccount>()) != accounts.count { problems.append("fetchCount ≠ fetch.count") }
        var values: [Int] = [], entries: [Int] = []
        for (writer, id) in counters.enumerated() {
            let value = try reader.record(for: id)?.value ?? -1
            values.append(value)
            let count = try reader.fetchCount(FetchDescriptor<CAEntry>(predicate: #Predicate { $0.writer == writer }))
            entries.append(count)
            let fetched = try reader.fetch(FetchDescriptor<CAEntry>(predicate: #Predicate { $0.writer == writer }))
            if fetched.count != count { problems.append("writer \(writer): fetch \(fetched.count) ≠ fetchCount \(count)") }
            if Set(fetched.map(\.sequence)) != Set(count == 0 ? [] : Array(1...count)) {
                problems.append("writer \(writer): sequences \(fetched.map(\.sequence).sorted()) not 1...\(count)")
            }
        }
        var enumerated = 0
        try reader.enumerate(FetchDescriptor<CAEntry>(), batchSize: 7) { _ in enumerated += 1 }
        if enumerated != entries.reduce(0, +) { problems.append("enumerate \(enumerated) ≠ \(entries.reduce(0, +))") }
        return (CABankState(accounts: accounts.count, total: total, counters: values, entries: entries), problems)
    }

    // MARK: 1. Readers while writers commit

    /// Writers on threads of their own commit transfers and counter increments while readers
    /// read through `Store.read` (sync and async), through single `Context` reads, and a
    /// read-only instance of the same folder reads too. Docs: "snapshots that never wait for
    /// the writer"; `Store.read`: "every read in `body` sees the same committed state, whatever
    /// other threads commit meanwhile"; `Context`: "each read takes a consistent snapshot, so a
    /// read never sees part of another context's save"; Architecture "Refresh": "a read sees the
    /// latest commit made before it began" (so counters never go back for one reader).
    @Test func readersSeeOnlyWholeCommitsWhileWritersCommit() async throws {
        let seed = SeededRandom.seed(default: 0xCA_0001)
        print("ConcurrencyAdversaryTests.readersSeeOnlyWholeCommitsWhileWritersCommit seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder, durability: .durable)
        let (accounts, counters) = try Self.seedBank(store)
        let follower = try caOpen(folder, readOnly: true)
        let total = Self.accountCount * Self.startingBalance
        let perWriter = 120
        let finished = CALocked(0)
        let acknowledged = CALocked([Int](repeating: 0, count: Self.writers))
        let problems = CALocked<[String]>([])

        // Async readers in tasks, using the async `Store.read`.
        let asyncReaders = Task {
            var last = [Int](repeating: 0, count: Self.writers)
            var reads = 0
            while finished.value < Self.writers || reads == 0 {
                let (state, found) = try await store.read { try Self.readBank($0, counters: counters) }
                reads += 1
                if !found.isEmpty || state.total != total || state.counters != state.entries || zip(state.counters, last).contains(where: { $0 < $1 }) {
                    problems.with { $0.append("async read \(reads): \(state) \(found) (last \(last))") }
                }
                last = state.counters
            }
            return reads
        }

        let errors = await caOnThreadsAsync(Self.writers + 3) { index in
            if index < Self.writers {
                defer { finished.with { $0 += 1 } }
                var random = SeededRandom(seed: seed &+ UInt64(index))
                for _ in 0..<perWriter {
                    let value = try store.write(author: "writer\(index)") { transaction in
                        try Self.transferAndCount(transaction, writer: index, accounts: accounts, counter: counters[index], random: &random)
                    }
                    acknowledged.with { $0[index] = value }
                }
                return
            }
            var last = [Int](repeating: 0, count: Self.writers)
            var reads = 0
            while finished.value < Self.writers || reads == 0 {
                reads += 1
                switch index - Self.writers {
                case 0:
                    // Synchronous Store.read on the writing instance.
                    let floor = acknowledged.value  // acknowledged before the read began: it must see them
                    let (state, found) = try store.read { try Self.readBank($0, counters: counters) }
                    if !found.isEmpty || state.total != total || state.counters != state.entries
                        || zip(state.counters, last).contains(where: { $0 < $1 }) || zip(state.counters, floor).contains(where: { $0 < $1 }) {
                        problems.with { $0.append("read \(reads): \(state) \(found) (last \(last), acknowledged \(floor))") }
                    }
                    last = state.counters
                case 1:
                    // Single context reads: each one a snapshot of its own.
                    let context = Context(store)
                    let balances = try context.fetch(FetchDescriptor<CAAccount>())
                    if balances.count != Self.accountCount || balances.reduce(0, { $0 + $1.balance }) != total {
                        problems.with { $0.append("context fetch \(reads): \(balances.count) accounts, total \(balances.reduce(0) { $0 + $1.balance })") }
                    }
                    for (writer, id) in counters.enumerated() {
                        let value = try context.record(for: id)?.value ?? -1
                        if value < last[writer] { problems.with { $0.append("context read \(reads): counter \(writer) went back \(last[writer]) → \(value)") } }
                        last[writer] = value
                    }
                default:
                    // A read-only instance of the same folder (Configuration.isReadOnly: "the store
                    // opens while another process (or instance) writes it, and every read sees that
                    // writer's latest commit").
                    let floor = acknowledged.value
                    let (state, found) = try follower.read { try Self.readBank($0, counters: counters) }
                    if !found.isEmpty || state.total != total || state.counters != state.entries
                        || zip(state.counters, last).contains(where: { $0 < $1 }) || zip(state.counters, floor).contains(where: { $0 < $1 }) {
                        problems.with { $0.append("read-only read \(reads): \(state) \(found) (last \(last), acknowledged \(floor))") }
                    }
                    last = state.counters
                }
            }
        }
        let asyncReads = try await asyncReaders.value
        #expect(errors.isEmpty, "seed \(seed): \(errors)")
        #expect(problems.value.isEmpty, "seed \(seed): \(problems.value.prefix(5))")
        #expect(asyncReads > 0)
        #expect(acknowledged.value == [Int](repeating: perWriter, count: Self.writers))
        // After the writers returned, the read-only instance sees their last commits.
        let (followed, _) = try await follower.read { try Self.readBank($0, counters: counters) }
        #expect(followed.counters == [Int](repeating: perWriter, count: Self.writers))
        try follower.close()
        try store.close()

        // Every acknowledged commit is there after reopening, and the store verifies.
        let reopened = try caOpen(folder)
        let (state, found) = try await reopened.read { try Self.readBank($0, counters: counters) }
        #expect(found.isEmpty)
        #expect(state == CABankState(accounts: Self.accountCount, total: total, counters: [Int](repeating: perWriter, count: Self.writers),
                                      entries: [Int](repeating: perWriter, count: Self.writers)))
        let report = try await reopened.verify()
        #expect(report.isValid, "\(report)")
        try reopened.close()
    }

    // MARK: 2. Contexts racing

    /// Two contexts update the same record and save in turn: `update` "Replaces the values of
    /// an existing record", and nothing documents a conflict check — so the later save wins,
    /// whole (no field of the earlier one survives), and neither save throws.
    @Test func twoContextsUpdatingOneRecordLastSaveWinsWhole() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        let setup = Context(store)
        let doc = try setup.insert(CADocument(title: "t0", body: "b0", revision: 0))
        let other = try setup.insert(CADocument(title: "other", body: "", revision: 0))
        try setup.save()

        let one = Context(store, author: "one"), two = Context(store, author: "two")
        try one.update(doc, to: CADocument(title: "one's title", body: "b0", revision: 1))
        try two.update(doc, to: CADocument(title: "t0", body: "two's body", revision: 1))
        try two.update(other, to: CADocument(title: "other", body: "by two", revision: 1))
        #expect(try one.record(for: doc)?.title == "one's title")  // each context reads its own change
        #expect(try two.record(for: doc)?.body == "two's body")
        try one.save()
        #expect(try two.record(for: doc)?.body == "two's body", "unsaved changes win over the latest snapshot")
        try two.save()
        #expect(try Context(store).record(for: doc) == CADocument(title: "t0", body: "two's body", revision: 1))
        #expect(try Context(store).record(for: other)?.body == "by two")

        // Threads: each with its own context rewriting the record with its own values. The
        // record ends as one save wrote it whole, the one the journal lists last.
        let errors = caOnThreads(4) { index in
            for round in 0..<15 {
                let context = Context(store, author: "thread\(index)")
                try context.update(doc, to: CADocument(title: "thread\(index)", body: "round\(round)", revision: index * 100 + round))
                try context.save()
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        let final = try #require(try Context(store).record(for: doc))
        let last = try #require(try store.fetchHistory(HistoryDescriptor(after: .start, entities: [CADocument.self])).last)
        #expect(final.title == last.author, "the last save's author wrote the record")
        #expect(final.revision == Int(final.title.dropFirst("thread".count))! * 100 + Int(final.body.dropFirst("round".count))!,
                "one save's values, whole")
        try store.close()
    }

    /// A record one context deletes while another updates it: `save()` throws
    /// `.recordNotFound` ("a record updated here was deleted by another context"), "On error
    /// nothing is saved and the changes stay in the context". A record deleted twice: "deleting
    /// a record that does not exist does nothing".
    @Test func aSaveUpdatingARecordAnotherContextDeletedThrowsAndStoresNothing() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        let setup = Context(store)
        let victim = try setup.insert(CADocument(title: "victim", body: "", revision: 0))
        let bystander = try setup.insert(CADocument(title: "bystander", body: "", revision: 0))
        try setup.save()

        let deleter = Context(store), updater = Context(store)
        try updater.update(victim, to: CADocument(title: "victim", body: "edited", revision: 1))
        try updater.update(bystander, to: CADocument(title: "bystander", body: "edited", revision: 1))
        let inserted = try updater.insert(CADocument(title: "new", body: "", revision: 0))
        try deleter.delete(victim)
        try deleter.save()
        #expect {
            try updater.save()
        } throws: { error in
            if case StrataError.recordNotFound = error { return true }
            return false
        }
        #expect(updater.hasChanges)
        let reader = Context(store)
        #expect(try reader.record(for: victim) == nil)
        #expect(try reader.record(for: bystander)?.body == "", "nothing of the failed save is stored")
        #expect(try reader.record(for: inserted) == nil)
        #expect(try reader.fetchCount(FetchDescriptor<CADocument>()) == 1)

        // Both delete the same record: the second save does nothing for it and succeeds.
        let a = Context(store), b = Context(store)
        try a.delete(bystander)
        try b.delete(bystander)
        let fresh = try b.insert(CADocument(title: "fresh", body: "", revision: 0))
        try a.save()
        try b.save()
        #expect(try Context(store).fetch(FetchDescriptor<CADocument>()).map(\.id) == [fresh])
        try store.close()
    }

    /// Threads, each with contexts inserting records whose unique value comes from a small pool
    /// (and `Store.write` inserts of the same values meanwhile): Architecture invariant 23
    /// "contexts racing cannot create duplicates"; `Context.insert`: "If another context saves a
    /// record with the value before this context saves, `save()` updates that record instead".
    @Test func racingContextsAndWritesKeepOneRecordPerUniqueValue() throws {
        let seed = SeededRandom.seed(default: 0xCA_0002)
        print("ConcurrencyAdversaryTests.racingContextsAndWritesKeepOneRecordPerUniqueValue seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        let pool = 6
        let errors = caOnThreads(4) { index in
            var random = SeededRandom(seed: seed &+ UInt64(index))
            for round in 0..<60 {
                let email = "m\(random.next() % UInt64(pool))@x"
                if index == 3 && round % 2 == 0 {
                    try store.write { try $0.insert(CAMember(email: email, writer: index, round: round)) }
                    continue
                }
                let context = Context(store)
                try context.insert(CAMember(email: email, writer: index, round: round))
                try context.insert(CAMember(email: "m\(random.next() % UInt64(pool))@x", writer: index, round: round))
                try context.save()
            }
        }
        #expect(errors.isEmpty, "seed \(seed): \(errors.prefix(3))")
        let members = try Context(store).fetch(FetchDescriptor<CAMember>())
        #expect(members.count == Set(members.map(\.email)).count, "seed \(seed): duplicates \(members.map(\.email).sorted())")
        #expect(members.count <= pool)
        let report = try store.verify()
        #expect(report.isValid, "\(report)")
        try store.close()
    }

    /// The same race for an entity that has a unique attribute and a relationship. Duplicates
    /// must not appear (invariant 23); and `Context.save()` promises that "an insert whose unique
    /// value another context saved meanwhile updates that record instead (upsert)".
    @Test func racingContextsOnAUniqueEntityWithRelationshipsUpsert() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        let player = try store.write { try $0.insert(CAPlayer(name: "p", team: nil)) }
        let one = Context(store), two = Context(store)
        let first = try one.insert(CATeam(name: "red", writer: 1))
        let given = try two.insert(CATeam(name: "red", writer: 2, players: [player]))
        try one.save()
        var saveError: (any Error)?
        do { try two.save() } catch { saveError = error }
        let teams = try Context(store).fetch(FetchDescriptor<CATeam>())
        #expect(teams.count == 1, "no duplicate")
        #expect(saveError == nil, "save threw \(String(describing: saveError))")
        #expect(teams.map(\.writer) == [2], "the later save updated the record")
        // The inverse follows the record the insert became.
        #expect(teams.map(\.id) == [first])
        #expect(try Context(store).record(for: player)?.team == first)
        // A save that also refers to the inserted record cannot become an update (the
        // reference would name an id that never exists): the duplicate is refused.
        let three = Context(store)
        let other = try three.insert(CATeam(name: "blue", writer: 3))
        try three.insert(CAPlayer(name: "q", team: other))
        try one.insert(CATeam(name: "blue", writer: 1))
        try one.save()
        #expect(throws: StrataError.self) { try three.save() }
        #expect(try store.verify().isValid)
        try store.close()
        // The id the redirected insert was given is never handed out again, reopened too.
        let reopened = try caOpen(folder)
        let later = try reopened.write { try $0.insert(CATeam(name: "green", writer: 0)) }
        #expect(later.rawValue > given.rawValue, "\(later) after \(given)")
        try reopened.close()
    }

    /// Ids handed out to contexts on several threads, to `Store.write` bulk inserts and to
    /// abandoned writes never collide, every committed insert is there, and after reopening no
    /// id of a record ever saved is handed out again (Architecture "Store API": "the id of a
    /// record ever saved is never handed out again").
    @Test func idsFromConcurrentContextsAndWritesNeverCollide() throws {
        let seed = SeededRandom.seed(default: 0xCA_0003)
        print("ConcurrencyAdversaryTests.idsFromConcurrentContextsAndWritesNeverCollide seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        struct Abandon: Error {}
        let saved = CALocked<[UInt64: String]>([:])
        let collisions = CALocked<[String]>([])
        @Sendable func record(_ ids: [UInt64], _ label: String) {
            saved.with { table in
                for id in ids {
                    if let previous = table[id] { collisions.with { $0.append("id \(id): \(previous) and \(label)") } }
                    table[id] = label
                }
            }
        }
        let errors = caOnThreads(4) { index in
            var random = SeededRandom(seed: seed &+ UInt64(index))
            for round in 0..<80 {
                let label = "t\(index)r\(round)"
                switch random.next() % 4 {
                case 0:
                    let context = Context(store)
                    let ids = try (0..<Int(random.next() % 5) + 1).map { _ in try context.insert(CAEntry(writer: index, sequence: round)).rawValue }
                    try context.save()
                    record(ids, label)
                case 1:
                    let context = Context(store)
                    _ = try context.insert(CAEntry(writer: index, sequence: -1))
                    context.rollback()  // allocated, never saved
                case 2:
                    let count = Int(random.next() % 40) + 1
                    let ids = try store.write { transaction in
                        try (0..<count).map { _ in try transaction.insert(CAEntry(writer: index, sequence: round)).rawValue }
                    }
                    record(ids, label)
                default:
                    _ = try? store.write { transaction in
                        for _ in 0..<Int(random.next() % 10) + 1 { try transaction.insert(CAEntry(writer: index, sequence: -2)) }
                        throw Abandon()
                    }
                }
            }
        }
        #expect(errors.isEmpty, "seed \(seed): \(errors.prefix(3))")
        #expect(collisions.value.isEmpty, "seed \(seed): \(collisions.value.prefix(5))")
        let stored = try Context(store).fetch(FetchDescriptor<CAEntry>())
        #expect(Set(stored.map(\.id.rawValue)) == Set(saved.value.keys), "seed \(seed): exactly the committed inserts")
        #expect(!stored.contains { $0.sequence < 0 }, "nothing of a rolled-back context or an abandoned write")
        // Delete them all, reopen: new ids are none of the saved ones.
        try store.write { transaction in for entry in stored { try transaction.delete(entry.id) } }
        try store.close()
        let reopened = try caOpen(folder)
        let context = Context(reopened)
        let fresh = try (0..<5).map { _ in try context.insert(CAEntry(writer: 9, sequence: 0)).rawValue }
        try context.save()
        let bulk = try reopened.write { transaction in try (0..<5).map { _ in try transaction.insert(CAEntry(writer: 9, sequence: 1)).rawValue } }
        #expect(Set(fresh + bulk).isDisjoint(with: saved.value.keys), "seed \(seed): an id of a saved record was handed out again")
        try reopened.close()
    }

    // MARK: 3. Context across threads, one at a time

    /// "Not thread-safe: use a context from one thread or task at a time": a context handed from
    /// thread to thread (never used by two at once) keeps its unsaved changes and saves them.
    @Test func aContextHandedBetweenThreadsOneAtATimeWorks() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        nonisolated(unsafe) let context = Context(store)
        let ids = CALocked<[RecordID<CAEntry>]>([])
        for step in 0..<6 {
            let errors = caOnThreads(1) { _ in  // one thread at a time, a new one each step
                let id = try context.insert(CAEntry(writer: step, sequence: step))
                ids.with { $0.append(id) }
                if step % 2 == 1 { try context.save() }
                let count = try context.fetchCount(FetchDescriptor<CAEntry>())
                if count != step + 1 { throw CAFailure(description: "step \(step): fetchCount \(count)") }
            }
            #expect(errors.isEmpty, "\(errors)")
        }
        #expect(!context.hasChanges)
        #expect(try Context(store).fetch(FetchDescriptor<CAEntry>()).map(\.id) == ids.value)
        try store.close()
    }

    // MARK: 4. Async APIs, cancellation, observers

    /// Async writes and saves in tasks cancelled at once: "A started transaction is not
    /// cancelled with its task; it commits or fails as a whole" and `save() async`: "on error
    /// nothing is saved and the changes stay in the context". So every write that returned is
    /// stored, none that threw is, and nothing is half stored.
    @Test func cancelledAsyncWritesAndSavesCommitWholeOrNotAtAll() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder, durability: .durable)
        let tasks = (0..<24).map { index in
            Task { () -> (Int, Bool) in
                if index % 2 == 0 {
                    do {
                        try await store.write(author: "w\(index)") { transaction in
                            for sequence in 0..<5 { try transaction.insert(CAEntry(writer: index, sequence: sequence)) }
                        }
                        return (index, true)
                    } catch {
                        return (index, false)
                    }
                } else {
                    let context = Context(store, author: "c\(index)")
                    for sequence in 0..<5 { try context.insert(CAEntry(writer: index, sequence: sequence)) }
                    do {
                        try await context.save()
                        #expect(!context.hasChanges)
                        return (index, true)
                    } catch {
                        #expect(context.hasChanges, "a failed save keeps its changes")
                        return (index, false)
                    }
                }
            }
        }
        for task in tasks { task.cancel() }
        var committed = Set<Int>()
        for task in tasks {
            let (index, succeeded) = try await task.value
            if succeeded { committed.insert(index) }
        }
        let entries = try Context(store).fetch(FetchDescriptor<CAEntry>())
        var perWriter: [Int: Int] = [:]
        for entry in entries { perWriter[entry.writer, default: 0] += 1 }
        #expect(Set(perWriter.keys) == committed, "stored exactly the writes that returned")
        #expect(perWriter.values.allSatisfy { $0 == 5 }, "whole transactions: \(perWriter)")
        let history = try await store.fetchHistory(HistoryDescriptor(after: .start))
        #expect(history.count == committed.count)
        try store.close()
    }

    /// A history observer and a results observer while writers on several threads commit:
    /// Docs/History.md "first what the journal holds after the token, then each new transaction
    /// as it commits" — every commit once, in token order — and live results that end equal to a
    /// fetch once the commits stop.
    @Test func observersSeeEveryConcurrentCommitInOrder() async throws {
        let seed = SeededRandom.seed(default: 0xCA_0004)
        print("ConcurrencyAdversaryTests.observersSeeEveryConcurrentCommitInOrder seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        let (accounts, counters) = try Self.seedBank(store)
        let start = try store.currentHistoryToken()
        let perWriter = 80
        let total = Self.writers * perWriter

        let history = Task {
            var tokens: [UInt64] = []
            var sequences: [String: [Int]] = [:]
            for try await transaction in store.observeHistory(after: start) {
                tokens.append(transaction.token.rawValue)
                if let author = transaction.author {
                    let entries = transaction.changes.filter { $0.entityName == "CAEntry" && $0.kind == .insert }
                    sequences[author, default: []].append(entries.count)
                }
                if tokens.count == total + 1 { break }  // the writers' commits and the sentinel
            }
            return (tokens, sequences)
        }
        let descriptor = FetchDescriptor<CAAccount>(sortBy: [RecordSort(\.balance), RecordSort(\.number)])
        let results = Task {
            var last: [Identified<CAAccount>] = []
            var elements = 0
            for try await live in store.observeResults(descriptor) {
                elements += 1
                last = live.records
                if live.records.contains(where: { $0.number == -1 }) { break }  // the sentinel
            }
            return (last, elements)
        }
        let errors = await caOnThreadsAsync(Self.writers) { index in
                var random = SeededRandom(seed: seed &+ UInt64(index))
                for _ in 0..<perWriter {
                    _ = try store.write(author: "writer\(index)") { transaction in
                        try Self.transferAndCount(transaction, writer: index, accounts: accounts, counter: counters[index], random: &random)
                    }
                }
        }
        #expect(errors.isEmpty, "seed \(seed): \(errors)")
        try await store.write(author: "sentinel") { try $0.insert(CAAccount(number: -1, balance: 0)) }
        let (tokens, sequences) = try await history.value
        #expect(tokens == Array((start.rawValue + 1)...(start.rawValue + UInt64(total) + 1)), "seed \(seed): every token once, in order")
        #expect((0..<Self.writers).allSatisfy { sequences["writer\($0)"]?.count == perWriter })
        let (last, elements) = try await results.value
        #expect(elements >= 2)
        #expect(last == (try Context(store).fetch(descriptor)), "seed \(seed): live results equal a refetch")
        try store.close()
    }

    /// `HistoryObserver.AsyncIterator.next()`: "nil once the task is cancelled"; Docs/History.md:
    /// "The sequence ends (returns nil) when its task is cancelled". With a backlog fetched but
    /// not delivered yet, a cancelled task's next call should return nil.
    @Test func aCancelledHistoryObserverEndsEvenWithABacklog() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        for index in 0..<5 { try await store.write { try $0.insert(CAEntry(writer: 0, sequence: index)) } }
        let delivered = await Task {
            var iterator = store.observeHistory(after: .start).makeAsyncIterator()
            var delivered: [UInt64] = []
            if let first = try? await iterator.next() { delivered.append(first.token.rawValue) }
            withUnsafeCurrentTask { $0?.cancel() }
            while let next = try? await iterator.next() { delivered.append(next.token.rawValue) }
            return delivered
        }.value
        // It once returned the transactions it had fetched (up to 256) before looking.
        #expect(delivered == [1], "after cancellation next() returned \(delivered.dropFirst())")
        // The results observer checks first: nil at once.
        let afterCancel = await Task {
            var iterator = store.observeResults(FetchDescriptor<CAEntry>()).makeAsyncIterator()
            withUnsafeCurrentTask { $0?.cancel() }
            return try? await iterator.next()
        }.value
        #expect(afterCancel == nil)
        try store.close()
    }

    /// Concurrent `Store.open` of one folder (missing at first, then existing): one instance
    /// writes, the others are refused with `.locked` ("`.locked` when another process or
    /// instance writes the store") — never a damaged store or another error.
    @Test func concurrentOpensOfOneFolderLetOneWriterIn() async throws {
        let base = try temporaryDirectory()
        defer { removeDirectory(base) }
        let schema = try Schema(types: caTypes)
        for round in 0..<3 {
            let folder = base + "/store\(round)"  // created by the opens in round 0 style; existing after
            if round == 2 { try caOpen(folder).close() }
            let outcomes = await withTaskGroup(of: Result<Store, any Error>.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        do { return .success(try await Store.open(at: folder, schema: schema)) } catch { return .failure(error) }
                    }
                }
                var outcomes: [Result<Store, any Error>] = []
                for await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            let opened = outcomes.compactMap { try? $0.get() }
            let failures = outcomes.compactMap { outcome -> (any Error)? in
                if case .failure(let error) = outcome { return error }
                return nil
            }
            #expect(opened.count == 1, "round \(round): \(failures)")
            for failure in failures {
                guard case StrataError.locked = failure else {
                    Issue.record("round \(round): an open failed with \(failure), not .locked")
                    continue
                }
            }
            for store in opened {
                try await store.write { try $0.insert(CAEntry(writer: round, sequence: 0)) }
                try store.close()
            }
            let check = try caOpen(folder)
            #expect(try await check.verify().isValid)
            try check.close()
        }
    }

    // MARK: 5. Closing while others work

    /// `close()` while threads write, save and read: the state machine "OPEN ──close()──►
    /// CLOSED", a write transaction's BEGIN "check not poisoned/closed", typed errors for every
    /// failure. So each operation either completes or throws `StrataError.closed`; every write
    /// that returned is in the store when it is opened again, which verifies; closing twice at
    /// once is harmless.
    @Test func closingWhileThreadsWorkEndsThemWithClosedAndLosesNoReturnedCommit() throws {
        let seed = SeededRandom.seed(default: 0xCA_0005)
        print("ConcurrencyAdversaryTests.closingWhileThreadsWorkEndsThemWithClosedAndLosesNoReturnedCommit seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder, durability: .durable)
        let (accounts, counters) = try Self.seedBank(store)
        let acknowledged = CALocked([Int](repeating: 0, count: Self.writers))
        let others = CALocked<[String]>([])
        let closedSeen = CALocked(0)
        let started = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        @Sendable func classify(_ error: any Error, _ what: String) {
            if case StrataError.closed = error { closedSeen.with { $0 += 1 } } else { others.with { $0.append("\(what): \(error)") } }
        }
        let errors = caOnThreads(Self.writers + 4) { index in
            if index == Self.writers + 3 {
                for _ in 0..<Self.writers { started.wait() }  // once every writer committed once
                go.signal()
                try store.close()
                return
            }
            if index == Self.writers + 2 {
                go.wait()
                try store.close()  // a second close at the same moment: harmless
                return
            }
            var random = SeededRandom(seed: seed &+ UInt64(index))
            var signalled = index >= Self.writers
            for step in 0..<10_000 {
                do {
                    if index < Self.writers {
                        if step % 3 == 2 {
                            let context = Context(store)
                            try context.insert(CADocument(title: "writer\(index)", body: "", revision: step))
                            try context.save()
                        } else {
                            let value = try store.write(author: "writer\(index)") { transaction in
                                try Self.transferAndCount(transaction, writer: index, accounts: accounts, counter: counters[index], random: &random)
                            }
                            acknowledged.with { $0[index] = value }
                        }
                        if !signalled { signalled = true; started.signal() }
                    } else {
                        let (state, found) = try store.read { try Self.readBank($0, counters: counters) }
                        if !found.isEmpty || state.counters != state.entries { others.with { $0.append("read: \(state) \(found)") } }
                    }
                } catch {
                    classify(error, "thread \(index) step \(step)")
                    if !signalled { signalled = true; started.signal() }
                    return
                }
            }
        }
        #expect(errors.isEmpty, "seed \(seed): \(errors)")
        #expect(others.value.isEmpty, "seed \(seed): errors other than .closed: \(others.value.prefix(5))")
        #expect(closedSeen.value == Self.writers + 2, "every writer and reader ended with .closed")
        // After close: a typed error for every call, sync or async.
        #expect(throws: StrataError.closed) { try store.write { try $0.insert(CAEntry(writer: 0, sequence: 0)) } }
        #expect(throws: StrataError.closed) { try Context(store).fetch(FetchDescriptor<CAEntry>()) }
        #expect(throws: StrataError.closed) { try store.read { try $0.fetchCount(FetchDescriptor<CAEntry>()) } }
        let context = Context(store)
        try context.insert(CAEntry(writer: 0, sequence: 0))
        #expect(throws: StrataError.closed) { try context.save() }
        #expect(context.hasChanges)

        let reopened = try caOpen(folder)
        let counted = try reopened.read { reader in try counters.map { try reader.record(for: $0)?.value ?? -1 } }
        let floor = acknowledged.value
        #expect(zip(counted, floor).allSatisfy { $0 >= $1 }, "seed \(seed): acknowledged \(floor), stored \(counted)")
        let (state, found) = try reopened.read { try Self.readBank($0, counters: counters) }
        #expect(found.isEmpty && state.counters == state.entries && state.total == Self.accountCount * Self.startingBalance)
        let report = try reopened.verify()
        #expect(report.isValid, "\(report)")
        try reopened.close()
    }

    /// `close()` while async writes are suspended waiting: "Store.write … waiting for another
    /// writer … run on a thread of its own": each returns or throws `.closed`, and observers
    /// end with `.closed` ("Observers waiting for a commit wake up, read, and end with
    /// `StrataError.closed`").
    @Test func closingWhileAsyncWritersWaitGivesClosedOrACommit() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        try await store.write { try $0.insert(CAEntry(writer: -1, sequence: 0)) }
        let observer = Task {
            var count = 0
            for try await _ in store.observeHistory(after: .start) { count += 1 }
            return count
        }
        let writes = (0..<12).map { index in
            Task { () -> Bool? in
                do {
                    try await store.write { transaction in
                        for sequence in 0..<20 { try transaction.insert(CAEntry(writer: index, sequence: sequence)) }
                    }
                    return true
                } catch StrataError.closed {
                    return false
                } catch {
                    Issue.record("write \(index): \(error)")
                    return nil
                }
            }
        }
        try await store.close()
        var returned = Set<Int>()
        for (index, task) in writes.enumerated() where await task.value == true { returned.insert(index) }
        await #expect(throws: StrataError.closed) { _ = try await observer.value }
        let reopened = try caOpen(folder)
        let entries = try Context(reopened).fetch(FetchDescriptor<CAEntry>())
        var perWriter: [Int: Int] = [:]
        for entry in entries where entry.writer >= 0 { perWriter[entry.writer, default: 0] += 1 }
        #expect(Set(perWriter.keys) == returned)
        #expect(perWriter.values.allSatisfy { $0 == 20 })
        try reopened.close()
    }

    // MARK: 6. Enumeration while others commit

    /// `Context.enumerate` while another context and a thread commit deletes, updates and
    /// inserts: "each record is visited at most once, in identifier order; identifiers at or
    /// above the hierarchy's counter when the enumeration began (records inserted meanwhile) are
    /// not visited"; records nobody touched are all visited.
    @Test func enumerationWhileOthersCommitVisitsEachRecordOnceInOrder() throws {
        let seed = SeededRandom.seed(default: 0xCA_0006)
        print("ConcurrencyAdversaryTests.enumerationWhileOthersCommitVisitsEachRecordOnceInOrder seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try caOpen(folder)
        let initial = try store.write { transaction in try (0..<600).map { try transaction.insert(CAEntry(writer: 0, sequence: $0)) } }
        let untouchable = Set(initial.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
        let touchable = initial.enumerated().filter { $0.offset % 3 != 0 }.map(\.element)
        let enumerationStarted = CALocked(false)
        let stop = CALocked(false)
        let insertedAfterStart = CALocked<Set<RecordID<CAEntry>>>([])
        let visitedIDs = CALocked<[RecordID<CAEntry>]>([])
        let errors = caOnThreads(2) { index in
            if index == 1 {
                var random = SeededRandom(seed: seed)
                var pool = touchable
                while !stop.value {
                    let began = enumerationStarted.value
                    let inserted: [RecordID<CAEntry>] = try store.write { transaction in
                        for _ in 0..<3 where !pool.isEmpty {
                            let id = pool.remove(at: Int(random.next() % UInt64(pool.count)))
                            if random.next() % 2 == 0 { try transaction.delete(id) } else {
                                try transaction.update(id, to: CAEntry(writer: 1, sequence: -1))
                            }
                        }
                        return try (0..<2).map { _ in try transaction.insert(CAEntry(writer: 2, sequence: 0)) }
                    }
                    if began { insertedAfterStart.with { $0.formUnion(inserted) } }
                }
                return
            }
            defer { stop.with { $0 = true } }
            let context = Context(store)
            let other = Context(store)
            try context.enumerate(FetchDescriptor<CAEntry>(), batchSize: 7) { entry in
                enumerationStarted.with { $0 = true }
                let count = visitedIDs.with { $0.append(entry.id); return $0.count }
                // Another context on this thread commits in the middle of the enumeration.
                if count % 25 == 0 {
                    let id = try other.insert(CAEntry(writer: 3, sequence: count))
                    try other.save()
                    insertedAfterStart.with { $0.insert(id) }
                }
            }
        }
        #expect(errors.isEmpty, "seed \(seed): \(errors)")
        let visited = visitedIDs.value
        #expect(visited == visited.sorted() && Set(visited).count == visited.count, "seed \(seed): at most once, in id order")
        #expect(Set(visited).isDisjoint(with: insertedAfterStart.value), "seed \(seed): a record inserted after the start was visited")
        #expect(untouchable.isSubset(of: Set(visited)), "seed \(seed): \(untouchable.subtracting(visited).count) untouched records not visited")
        try store.close()
    }

    // MARK: 7. Parallel scans, checkpoints and compaction while writers commit

    /// A tree past `Context.parallelScanMinimum` (20,000 records), so filtered fetches scan it on
    /// several threads (`Configuration.scanThreads`), while writers flip the sign of pairs of
    /// records (the number of negative ones stays constant) and another thread checkpoints and
    /// compacts. Docs: invariant 25 "a parallel scan is the sequential scan"; `compact()`:
    /// "Readers keep reading meanwhile; writers wait"; `Store.read`: one committed state. In
    /// every read the filtered fetch, its count and a filtered enumeration agree, and the
    /// number of negatives is the constant. Afterwards the store verifies and reopens the same.
    @Test func parallelScansCheckpointsAndCompactionWhileWritersCommit() async throws {
        let seed = SeededRandom.seed(default: 0xCA_0007)
        print("ConcurrencyAdversaryTests.parallelScansCheckpointsAndCompactionWhileWritersCommit seed \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var configuration = Store.Configuration()
        configuration.durability = .relaxed
        configuration.storage.automaticCompaction = false
        configuration.storage.segmentSize = 1 << 20  // many segments for compaction to empty
        configuration.scanThreads = 4
        let store = try Store(at: folder, for: caTypes, configuration: configuration)
        let size = 24_000, negatives = 6_000
        let ids = try await store.write { transaction in
            try (0..<size).map { try transaction.insert(CAEntry(writer: $0 % 7, sequence: $0 < negatives ? -($0 + 1) : $0 + 1)) }
        }
        let finished = CALocked(0)
        let problems = CALocked<[String]>([])
        let readsDone = CALocked(0)
        let writerCount = 2
        let errors = await caOnThreadsAsync(writerCount + 3) { index in
            if index < writerCount {
                defer { finished.with { $0 += 1 } }
                var random = SeededRandom(seed: seed &+ UInt64(index))
                for _ in 0..<40 {
                    try store.write { transaction in
                        // Flip one negative to positive and one positive to negative, a few times.
                        for _ in 0..<Int(random.next() % 20) + 1 {
                            let a = ids[Int(random.next() % UInt64(size))], b = ids[Int(random.next() % UInt64(size))]
                            guard var x = try transaction.record(for: a), var y = try transaction.record(for: b),
                                  (x.sequence < 0) != (y.sequence < 0) else { continue }
                            x.sequence = -x.sequence
                            y.sequence = -y.sequence
                            try transaction.update(a, to: x)
                            try transaction.update(b, to: y)
                        }
                    }
                }
                return
            }
            if index == writerCount {
                var rounds = 0
                while finished.value < writerCount || rounds == 0 {
                    rounds += 1
                    try store.checkpoint()
                    try store.compact()
                }
                return
            }
            var reads = 0
            while finished.value < writerCount || reads == 0 {
                reads += 1
                let problem: String? = try store.read { reader in
                    let predicate = #Predicate<CAEntry> { $0.sequence < 0 }
                    let fetched = try reader.fetch(FetchDescriptor(predicate: predicate))
                    let counted = try reader.fetchCount(FetchDescriptor(predicate: predicate))
                    var enumerated = 0
                    try reader.enumerate(FetchDescriptor(predicate: predicate), batchSize: 999) { _ in enumerated += 1 }
                    let all = try reader.fetchCount(FetchDescriptor<CAEntry>())
                    if fetched.count == negatives && counted == negatives && enumerated == negatives && all == size
                        && fetched.allSatisfy({ $0.sequence < 0 }) && fetched.map(\.id) == fetched.map(\.id).sorted() {
                        return nil
                    }
                    return "fetch \(fetched.count), fetchCount \(counted), enumerate \(enumerated), all \(all)"
                }
                // A context's single fetch: one snapshot too.
                let single = try Context(store).fetch(FetchDescriptor<CAEntry>(predicate: #Predicate { $0.sequence < 0 })).count
                if let problem { problems.with { $0.append("read \(reads): \(problem)") } }
                if single != negatives { problems.with { $0.append("context fetch \(reads): \(single)") } }
            }
            readsDone.with { $0 += reads }
        }
        #expect(errors.isEmpty, "seed \(seed): \(errors)")
        #expect(problems.value.isEmpty, "seed \(seed): \(problems.value.prefix(5))")
        #expect(readsDone.value > 0)
        #expect(store.parallelScanCount > 0, "fetches scanned on several threads (scanThreads = 4)")
        let before = try Context(store).fetch(FetchDescriptor<CAEntry>())
        let report = try await store.verify()
        #expect(report.isValid, "\(report)")
        try store.close()
        let reopened = try caOpen(folder)
        #expect(try Context(reopened).fetch(FetchDescriptor<CAEntry>()) == before)
        #expect(try await reopened.verify().isValid)
        try reopened.close()
    }
}
