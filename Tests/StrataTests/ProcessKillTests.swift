#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// One record of `ProcessKillTests`' workload: the `index`-th insert of commit `commit`.
struct KillEntry: PersistentRecord, Equatable {
    var commit: Int
    var index: Int
    var payload: String
}

/// `ProcessKillTests`' migration: version 2's split of the full name (`SplitPlan.split`) as a
/// pure transform on every core, in batches of 256; then version 3 adds `initials` with a
/// default, which a `didMigrate` closure fills the way SwiftData's articles write it
/// (`enumerate`, `update`, `save`).
enum KillV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeDefaults: [String: Value] { ["initials": ""] }
        var lastName: String
        var firstName: String
        var age: Int
        var initials: String
    }
}

enum KillPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [PeopleV1.self, PeopleSplitNames.self, KillV3.self] }
    static var stages: [MigrationStage] {
        [
            .custom(fromVersion: PeopleV1.self, toVersion: PeopleSplitNames.self, transforms: [
                .mapConcurrently(PeopleV1.Person.self, to: PeopleSplitNames.Person.self) { SplitPlan.split($0) },
            ], batchSize: 256),
            .custom(fromVersion: PeopleSplitNames.self, toVersion: KillV3.self, willMigrate: nil, didMigrate: { context in
                try context.enumerate(FetchDescriptor<KillV3.Person>(), batchSize: 200) { match in
                    var person = match.record
                    person.initials += initials(person)  // not idempotent: run twice, it shows
                    try context.update(match.id, to: person)
                }
                try context.save()
            }),
        ]
    }

    static func initials(_ person: KillV3.Person) -> String {
        String(person.lastName.prefix(1)) + String(person.firstName.prefix(1))
    }

    /// What the migration makes of version 1's `people`.
    static func expected(_ people: [PeopleV1.Person]) -> [KillV3.Person] {
        people.map { old in
            let split = SplitPlan.split(old)
            var person = KillV3.Person(lastName: split.lastName, firstName: split.firstName, age: split.age, initials: "")
            person.initials = initials(person)
            return person
        }
    }
}

/// Real crashes of a writing process: a child process of this test binary commits durable
/// `Store.write` transactions through the POSIX file system — small segments, so segments
/// roll; checkpoints and compactions; the zeros written ahead of the log after each durable
/// commit (Architecture.md, invariant 35) — and is killed with SIGKILL at a random moment,
/// ten times on the same store (more until one leaves zeros after the log). Each time the
/// store reopens (recovery) in this process and holds exactly the commits up to one at or
/// after the last the child saw returned, journal included, and `verify()` finds nothing; the
/// next child resumes on the recovered store.
/// The power-loss tests (`CrashTests`, `PreallocationTests`, `HistoryCrashTests`) cut the
/// in-memory file system at every sync point; this one runs the real one.
@Suite(.serialized) struct ProcessKillTests {
    struct Key: Hashable, CustomStringConvertible {
        let commit: Int
        let index: Int
        var description: String { "\(commit).\(index)" }
    }

    /// What commit `commit` does, decided by `seed` and `commit` alone (the child and the
    /// checking parent compute the same).
    struct Plan {
        var deletes: [Key] = []
        var updates: [(Key, String)] = []
        var inserts: [String] = []
    }

    static let rounds = 10
    static let childFilter = "ProcessKillTests/childCommitsUntilKilled"
    static let storeVariable = "STRATA_KILL_STORE"

    static var configuration: Store.Configuration {
        var configuration = Store.Configuration()
        configuration.storage.segmentSize = 128 << 10  // rolls every few commits
        configuration.storage.checkpointInterval = 512 << 10
        return configuration
    }

    /// How many inserts commit `commit` makes: mostly a few, every tenth or so a few hundred
    /// (a commit of several frames, often across a segment roll).
    static func insertCount(_ commit: Int, seed: UInt64) -> Int {
        var random = SeededRandom(seed: seed &+ UInt64(commit) &* 0x9E37_79B9_7F4A_7C15)
        return random.next() % 10 == 0 ? 300 + Int(random.next() % 400) : 1 + Int(random.next() % 30)
    }

    static func plan(_ commit: Int, seed: UInt64) -> Plan {
        var random = SeededRandom(seed: seed ^ UInt64(commit) &* 0xC2B2_AE3D_27D4_EB4F)
        func payload(_ tag: String) -> String {
            // Sometimes larger than a leaf (an overflowed record), mostly small.
            let length = random.next() % 40 == 0 ? 6_000 + Int(random.next() % 4_000) : Int(random.next() % 200)
            return tag + String(repeating: "abcdefghij", count: length / 10 + 1).prefix(length)
        }
        var plan = Plan()
        if commit > 5 {
            plan.deletes = (0..<insertCount(commit - 5, seed: seed)).filter { $0 % 4 == 2 }.map { Key(commit: commit - 5, index: $0) }
        }
        if commit > 3 {
            plan.updates = (0..<insertCount(commit - 3, seed: seed)).filter { $0 % 3 == 1 }
                .map { (Key(commit: commit - 3, index: $0), payload("u\(commit)-")) }
        }
        plan.inserts = (0..<insertCount(commit, seed: seed)).map { payload("i\(commit).\($0)-") }
        return plan
    }

    /// The records after commits 1...last.
    static func model(through last: Int, seed: UInt64) -> [Key: String] {
        var model: [Key: String] = [:]
        guard last > 0 else { return model }
        for commit in 1...last {
            let plan = plan(commit, seed: seed)
            for key in plan.deletes { model[key] = nil }
            for (key, payload) in plan.updates { model[key] = payload }
            for (index, payload) in plan.inserts.enumerated() { model[Key(commit: commit, index: index)] = payload }
        }
        return model
    }

    /// The number in the child's acknowledgement file: the last commit whose `write`
    /// returned (0 when none or no file).
    static func acknowledged(_ path: String) -> Int {
        let file = open(path, O_RDONLY)
        guard file >= 0 else { return 0 }
        defer { close(file) }
        var bytes = [UInt8](repeating: 0, count: 20)
        let count = pread(file, &bytes, bytes.count, 0)
        guard count == bytes.count else { return 0 }
        return Int(String(decoding: bytes.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)) ?? 0
    }

    /// The child: opens the store named by STRATA_KILL_STORE, finds the last commit it holds,
    /// and commits the next ones, each `write` durable, writing each returned commit's number
    /// to STRATA_KILL_ACKS (one `pwrite` of 20 bytes: the kernel keeps it when the process is
    /// killed); compacts now and then. It stops by itself only after 5,000 commits.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[storeVariable] != nil))
    func childCommitsUntilKilled() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let folder = environment[Self.storeVariable], let acks = environment["STRATA_KILL_ACKS"],
              let seed = environment["STRATA_KILL_SEED"].flatMap(UInt64.init) else {
            Issue.record("the child's environment is incomplete")
            return
        }
        let store = try Store(at: folder, for: [KillEntry.self], configuration: Self.configuration)
        var ids: [Key: RecordID<KillEntry>] = [:]
        var last = 0
        for entry in try store.read({ try $0.fetch(FetchDescriptor<KillEntry>()) }) {
            ids[Key(commit: entry.record.commit, index: entry.record.index)] = entry.id
            if entry.record.index == 0 { last = max(last, entry.record.commit) }
        }
        let file = open(acks, O_WRONLY | O_CREAT, 0o644)
        #expect(file >= 0)
        defer { close(file) }
        for commit in (last + 1)...(last + 5_000) {
            let plan = Self.plan(commit, seed: seed)
            try store.write { transaction in
                for key in plan.deletes {
                    guard let id = ids[key] else { throw StrataError.recordNotFound("KillEntry \(key), to delete") }
                    #expect(try transaction.delete(id))
                }
                for (key, payload) in plan.updates {
                    guard let id = ids[key] else { throw StrataError.recordNotFound("KillEntry \(key), to update") }
                    try transaction.update(id, to: KillEntry(commit: key.commit, index: key.index, payload: payload))
                }
                for (index, payload) in plan.inserts.enumerated() {
                    ids[Key(commit: commit, index: index)] = try transaction.insert(KillEntry(commit: commit, index: index, payload: payload))
                }
            }
            for key in plan.deletes { ids[key] = nil }
            if commit % 23 == 0 { try store.compact() }
            #expect(Self.acknowledge(commit, in: file))
        }
        try store.close()
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment[storeVariable] == nil
                   && ProcessInfo.processInfo.environment[migrationVariable] == nil))
    func aKilledWriterLosesNoReturnedCommit() throws {
        let seed = SeededRandom.seed(default: 0x5167_4B11)
        print("ProcessKillTests seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let acks = folder + "-acks"
        defer { unlink(acks) }
        var recovered = 0
        var zeroTails = 0
        var pastAcknowledged = 0
        var round = 0
        // Ten kills, and up to ten more until one left zeros after the log (most do).
        while round < Self.rounds || (zeroTails == 0 && round < 2 * Self.rounds) {
            defer { round += 1 }
            unlink(acks)
            let pid = try spawnChildTest(Self.childFilter, environment: [
                Self.storeVariable: folder, "STRATA_KILL_ACKS": acks, "STRATA_KILL_SEED": "\(seed)",
            ])
            // Wait for a few commits past the recovered ones, then kill at a random moment of
            // the next (often inside its write, its sync or the zeros after it).
            let target = recovered + 3 + Int(random.next() % 25)
            let deadline = ContinuousClock.now + .seconds(120)
            var exited: Int32?
            while Self.acknowledged(acks) < target && ContinuousClock.now < deadline {
                exited = childExitStatus(pid)
                if exited != nil { break }
                usleep(500)
            }
            if exited == nil { usleep(UInt32(random.next() % 4_000)) }
            let killed = exited == nil && killChild(pid)
            try #require(killed, "round \(round): the writer ended by itself (status \(exited ?? -1)) before it was killed")
            let acknowledged = Self.acknowledged(acks)
            #expect(acknowledged >= target, "round \(round): the writer returned only \(acknowledged) commits in 120 s")
            if Self.lastSegmentEndsInZeros(folder) { zeroTails += 1 }

            let store = try Store(at: folder, for: [KillEntry.self], configuration: Self.configuration)
            var found: [Key: String] = [:]
            var last = 0
            for entry in try store.read({ try $0.fetch(FetchDescriptor<KillEntry>()) }) {
                let key = Key(commit: entry.record.commit, index: entry.record.index)
                #expect(found[key] == nil, "round \(round): record \(key) twice")
                found[key] = entry.record.payload
                if key.index == 0 { last = max(last, key.commit) }
            }
            #expect(last >= acknowledged, "round \(round): commit \(acknowledged) returned, the store holds up to \(last)")
            let expected = Self.model(through: last, seed: seed)
            let differing = Set(found.keys).symmetricDifference(expected.keys).union(found.keys.filter { found[$0] != expected[$0] })
                .sorted { ($0.commit, $0.index) < ($1.commit, $1.index) }
            #expect(differing.isEmpty, "round \(round): the store is not commits 1...\(last): \(differing.prefix(5)) differ")
            let report = try store.verify()
            #expect(report.problems.isEmpty, "round \(round): \(report)")
            // The journal holds one transaction per commit, no gap, none after the data's last.
            let tokens = try store.fetchHistory().map(\.token.rawValue)
            #expect(tokens == Array((0..<UInt64(last)).map { $0 + 1 }), "round \(round): journal tokens \(tokens.suffix(3)), commits 1...\(last)")
            try store.close()
            if last > acknowledged { pastAcknowledged += 1 }
            recovered = last
        }
        print("ProcessKillTests: \(round) kills, \(recovered) commits kept, \(zeroTails) with zeros after the log, "
              + "\(pastAcknowledged) after a commit the writer had not yet acknowledged")
        // Recovery met zeros written ahead as the log's tail at least once.
        #expect(zeroTails > 0, "no kill left zeros after the log")
    }

    static let migrationChildFilter = "ProcessKillTests/childMigrates"
    static let migrationVariable = "STRATA_KILL_MIGRATE"
    static let migratedPeople = 6_000

    /// The closure's changes flushed every 500 (a flushed, flagged stage is undone and run
    /// again from the start after a crash: invariant 26).
    static var migrationConfiguration: Store.Configuration {
        var configuration = Store.Configuration()
        configuration.migrationFlushChanges = 500
        return configuration
    }

    /// Writes `value` to the acknowledgement file `file` (one `pwrite` of 20 bytes).
    static func acknowledge(_ value: Int, in file: Int32) -> Bool {
        var text = Array(String(value).utf8)
        text += [UInt8](repeating: UInt8(ascii: " "), count: 20 - text.count)
        return pwrite(file, text, text.count, 0) == text.count
    }

    /// The child of `aKilledMigrationResumesToTheSameRecords`: opens the store named by
    /// STRATA_KILL_MIGRATE with `KillPlan`, writing its progress to STRATA_KILL_ACKS as it
    /// goes (stage × 1,000,000 + records done, reported after each durable batch), then closes it.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[migrationVariable] != nil))
    func childMigrates() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let folder = environment[Self.migrationVariable], let acks = environment["STRATA_KILL_ACKS"] else {
            Issue.record("the child's environment is incomplete")
            return
        }
        let file = open(acks, O_WRONLY | O_CREAT, 0o644)
        #expect(file >= 0)
        defer { close(file) }
        var configuration = Self.migrationConfiguration
        configuration.migrationProgress = { progress in
            _ = Self.acknowledge(progress.stageIndex * 1_000_000 + Int(progress.recordsDone), in: file)
        }
        let store = try Store(at: folder, schema: KillV3.self, migrationPlan: KillPlan.self, configuration: configuration)
        try store.close()
    }

    /// Real crashes of a migrating launch: a child process opens a version 1 store of 6,000
    /// people with `KillPlan` (a concurrent transform in batches of 256, then a `didMigrate`
    /// closure that enumerates, updates and saves) and is killed with SIGKILL once its
    /// progress passes a point that moves further each time, until a child finishes; then this
    /// process opens the store with the plan. Every person is migrated exactly once, with the
    /// values an uninterrupted migration gives, and `verify()` finds nothing.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[storeVariable] == nil
                   && ProcessInfo.processInfo.environment[migrationVariable] == nil))
    func aKilledMigrationResumesToTheSameRecords() throws {
        let seed = SeededRandom.seed(default: 0x4D16_4B11)
        print("ProcessKillTests migration seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let acks = folder + "-acks"
        defer { unlink(acks) }
        try MigrationTests.createV1(at: folder, count: Self.migratedPeople)
        var kills = 0
        var finished = false
        var points: [Int] = []
        for round in 0..<8 where !finished {
            unlink(acks)
            let pid = try spawnChildTest(Self.migrationChildFilter, environment: [Self.migrationVariable: folder, "STRATA_KILL_ACKS": acks])
            // Early rounds: a point in the first stage's batches (its progress, reported after
            // each durable batch). Later rounds: once the closure's stage began (it reports at
            // its end only), a random moment up to 40 ms × the round into it.
            let inClosure = round >= 5
            let point = inClosure ? 1_000_000 : (round + 1) * Self.migratedPeople / 6 + Int(random.next() % 200)
            let deadline = ContinuousClock.now + .seconds(120)
            var exited: Int32?
            while Self.acknowledged(acks) < point && ContinuousClock.now < deadline {
                exited = childExitStatus(pid)
                if exited != nil { break }
                usleep(200)
            }
            if exited == nil { usleep(UInt32(random.next() % (inClosure ? UInt64(40_000 * (round - 4)) : 1_000))) }
            if exited == nil && killChild(pid) {
                kills += 1
                points.append(Self.acknowledged(acks))
            } else {
                let status = exited ?? waitForChild(pid)
                #expect(status == 0, "round \(round): the migrating child failed (status \(status))")
                finished = true
            }
        }
        print("ProcessKillTests: migration killed \(kills) times, at progress \(points)")
        #expect(kills >= 3, "the migration finished before it was killed three times")

        let store = try Store(at: folder, schema: KillV3.self, migrationPlan: KillPlan.self, configuration: Self.migrationConfiguration)
        let people = try store.read { try $0.fetch(FetchDescriptor<KillV3.Person>()) }.map(\.record)
        let expected = KillPlan.expected(MigrationTests.v1People(Self.migratedPeople))
        #expect(people.count == expected.count)
        let differing = zip(people.sorted { $0.age < $1.age }, expected).filter { $0 != $1 }
        #expect(differing.isEmpty, "\(differing.count) people differ from an uninterrupted migration's, as \(differing.prefix(2))")
        let report = try store.verify()
        #expect(report.problems.isEmpty, "\(report)")
        try store.close()
    }

    /// Whether the store's newest segment file ends in a page of zeros (written ahead by a
    /// durable commit, not yet overwritten).
    static func lastSegmentEndsInZeros(_ folder: String) -> Bool {
        guard let name = directoryEntries(folder).filter({ $0.hasSuffix(".seg") }).max() else { return false }
        let path = folder + "/" + name
        let size = fileSize(path)
        guard size >= 4_096 else { return false }
        let file = open(path, O_RDONLY)
        guard file >= 0 else { return false }
        defer { close(file) }
        var bytes = [UInt8](repeating: 1, count: 4_096)
        guard pread(file, &bytes, bytes.count, off_t(size - 4_096)) == bytes.count else { return false }
        return bytes.allSatisfy { $0 == 0 }
    }
}
