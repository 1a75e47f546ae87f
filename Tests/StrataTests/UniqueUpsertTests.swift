#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
@_spi(Engine) import Strata
import StrataTestSupport

/// A user with a unique email and a unique handle, and an indexed age.
struct User: PersistentRecord, Equatable {
    static var attributeOptions: [String: Attribute.Options] { ["email": [.unique], "handle": [.unique], "age": [.indexed]] }
    var email: String
    var handle: String?
    var age: Int
}

/// Unique attributes turn inserts into updates (upserts, as SwiftData does) through both
/// write paths; conflicts that no single update resolves are typed errors that store nothing.
@Suite struct UniqueUpsertTests {
    static func open(_ folder: String) throws -> Store { try Store(at: folder, for: [User.self]) }

    static func all(_ store: Store) throws -> [User] {
        try Context(store).fetch(FetchDescriptor<User>(sortBy: [RecordSort(\.email)])).map(\.record)
    }

    @Test func contextInsertOfAnExistingUniqueValueUpdatesThatRecord() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        let context = Context(store)
        let ada = try context.insert(User(email: "ada@x", handle: "ada", age: 36))
        try context.save()
        // A saved record is matched.
        let again = try context.insert(User(email: "ada@x", handle: "lovelace", age: 37))
        #expect(again == ada)
        // Two unsaved inserts of one value make one record.
        let first = try context.insert(User(email: "bob@x", handle: nil, age: 20))
        let second = try context.insert(User(email: "bob@x", handle: nil, age: 21))
        #expect(first == second)
        #expect(try context.fetchCount(FetchDescriptor<User>()) == 2)
        try context.save()
        #expect(try Self.all(store) == [User(email: "ada@x", handle: "lovelace", age: 37), User(email: "bob@x", handle: nil, age: 21)])
        #expect(try Context(store).record(for: ada) == User(email: "ada@x", handle: "lovelace", age: 37))
        // Null values are never compared: many records may lack a handle.
        try context.insert(User(email: "c@x", handle: nil, age: 1))
        try context.save()
        #expect(try Self.all(store).count == 3)
        try store.close()
    }

    @Test func conflictsThatNoSingleUpdateResolvesAreErrors() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        let context = Context(store)
        let ada = try context.insert(User(email: "ada@x", handle: "ada", age: 36))
        let bob = try context.insert(User(email: "bob@x", handle: "bob", age: 20))
        try context.save()
        // email matches Ada, handle matches Bob: which one to update? Neither; nothing changes.
        #expect(throws: StrataError.uniqueConstraintViolation(entity: "User", attribute: "handle", existing: "records \(ada.rawValue) and \(bob.rawValue)")) {
            try context.insert(User(email: "ada@x", handle: "bob", age: 1))
        }
        #expect(!context.hasChanges)
        // An update repeating another record's value.
        #expect(throws: StrataError.uniqueConstraintViolation(entity: "User", attribute: "email", existing: "record \(ada.rawValue)")) {
            try context.update(bob, to: User(email: "ada@x", handle: "bob", age: 20))
        }
        // Store.write: the same rules, checked in the transaction; a throwing body stores nothing.
        #expect(throws: StrataError.uniqueConstraintViolation(entity: "User", attribute: "email", existing: "record \(ada.rawValue)")) {
            try store.write { transaction in
                try transaction.insert(User(email: "new@x", handle: nil, age: 5))
                try transaction.update(bob, to: User(email: "ada@x", handle: "bob", age: 20))
            }
        }
        #expect(try Self.all(store).map(\.email) == ["ada@x", "bob@x"])
        // A freed value can be taken in the same save: deletes are written before inserts.
        try context.delete(ada)
        let newAda = try context.insert(User(email: "ada@x", handle: "ada2", age: 40))
        #expect(newAda != ada)
        try context.save()
        #expect(try Self.all(store) == [User(email: "ada@x", handle: "ada2", age: 40), User(email: "bob@x", handle: "bob", age: 20)])
        try store.close()
    }

    @Test func storeWriteInsertUpserts() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        let ids = try store.write { transaction in
            let a = try transaction.insert(User(email: "a@x", handle: "a", age: 1))
            let b = try transaction.insert(User(email: "a@x", handle: "a2", age: 2))  // same transaction
            return (a, b)
        }
        #expect(ids.0 == ids.1)
        let c = try store.write { try $0.insert(User(email: "a@x", handle: nil, age: 3)) }  // a later transaction
        #expect(c == ids.0)
        #expect(try Self.all(store) == [User(email: "a@x", handle: nil, age: 3)])
        try store.close()
    }

    /// Two contexts insert one unique value, neither seeing the other's: the second save
    /// updates the record the first saved instead of creating a duplicate.
    @Test func racingContextsCannotCreateDuplicates() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        let one = Context(store), two = Context(store)
        let first = try one.insert(User(email: "same@x", handle: "one", age: 1))
        let second = try two.insert(User(email: "same@x", handle: "two", age: 2))
        #expect(first != second)
        try one.save()
        try two.save()
        #expect(try Self.all(store) == [User(email: "same@x", handle: "two", age: 2)])
        #expect(try Context(store).record(for: first) == User(email: "same@x", handle: "two", age: 2))
        #expect(try Context(store).record(for: second) == nil)
        // An update racing a save of the same value is refused at save, storing nothing.
        let three = Context(store), four = Context(store)
        let other = try three.insert(User(email: "other@x", handle: nil, age: 5))
        try three.save()
        try four.update(other, to: User(email: "taken@x", handle: nil, age: 5))
        let taken = try three.insert(User(email: "taken@x", handle: nil, age: 9))
        try three.save()
        #expect(throws: StrataError.uniqueConstraintViolation(entity: "User", attribute: "email", existing: "record \(taken.rawValue)")) {
            try four.save()
        }
        #expect(four.hasChanges)
        #expect(try Self.all(store).map(\.email) == ["other@x", "same@x", "taken@x"])
        try store.close()
    }

    /// Seeded random inserts through a context, with few distinct emails: the store never holds
    /// two records with one email, and each email's record has the last values inserted for it.
    @Test func randomInsertsKeepOneRecordPerUniqueValue() throws {
        let seed = SeededRandom.seed(default: 0x0E5E)
        print("UniqueUpsertTests.randomInsertsKeepOneRecordPerUniqueValue seed \(seed)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        var model: [String: User] = [:]
        let context = Context(store)
        for round in 0..<40 {
            for _ in 0..<Int.random(in: 1...30, using: &random) {
                let user = User(email: "u\(Int.random(in: 0..<25, using: &random))", handle: nil, age: Int.random(in: 0..<100, using: &random))
                if Bool.random(using: &random) {
                    try context.insert(user)
                } else {
                    _ = try store.write { try $0.insert(user) }
                    // A context's unsaved insert of the same email still wins at its save.
                    let email = user.email
                    if let pending = try context.fetch(FetchDescriptor<User>(predicate: #Predicate { $0.email == email }))
                        .first(where: { $0.record != user }) {
                        model[user.email] = pending.record
                        continue
                    }
                }
                model[user.email] = user
            }
            try context.save()
            #expect(try Self.all(store) == model.values.sorted { $0.email < $1.email }, "round \(round), seed \(seed)")
        }
        try store.close()
    }

    /// The package API the fetch planner uses: candidate ids by index for equality and ranges.
    @Test func fetchesThroughTheIndexAPI() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Self.open(folder)
        let context = Context(store)
        var ids: [Int: RecordID<User>] = [:]
        for index in 0..<300 { ids[index] = try context.insert(User(email: "e\(index)", handle: nil, age: index % 50)) }
        try context.save()
        let matches = try store.indexedRecords(User.self, attribute: "age", range: IndexRange(lower: .int(10), upper: .int(12), upperInclusive: false))
        let expected = (0..<300).filter { (10..<12).contains($0 % 50) }
        #expect(matches.map(\.record.age) == expected.map { $0 % 50 }.sorted())
        #expect(Set(matches.map(\.id)) == Set(expected.compactMap { ids[$0] }))
        #expect(try store.indexedRecords(User.self, attribute: "email", range: .equal(to: .string("e42"))).map(\.id) == [ids[42]])
        #expect(throws: StrataError.self) { try store.indexedRecords(User.self, attribute: "handle2", range: .all) }
        try store.close()
    }

    /// The golden stores: version 1 (no indexes) gets its indexes built when opened with a
    /// schema that declares them; version 2 (with indexes) opens and its indexes answer.
    @Test(arguments: ["records-v1", "records-v2"])
    func goldenRecordStoresOpen(name: String) throws {
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        let source = RecordFixtureTests.fixtures + "/" + name
        try copyFolder(source, to: directory)
        let store = try Store(at: directory, for: [RecordFixtureTests.IndexedMember.self, RecordFixtureTests.Label.self])
        let members = try Context(store).fetch(FetchDescriptor<RecordFixtureTests.IndexedMember>())
        #expect(members.count == 150)
        for member in members {
            let index = Int(member.id.rawValue)
            let expected = RecordFixtureTests.member(index)
            #expect(member.record == RecordFixtureTests.IndexedMember(name: expected.name, age: expected.age, email: expected.email))
        }
        let age5 = try store.indexedRecords(RecordFixtureTests.IndexedMember.self, attribute: "age", range: .equal(to: .int(5)))
        #expect(age5.map(\.id.rawValue) == (1...150).filter { $0 % 37 == 5 }.map(UInt64.init))
        let upsert = Context(store)
        let id = try upsert.insert(RecordFixtureTests.IndexedMember(name: "again", age: 1, email: "m2@example.org"))
        #expect(id.rawValue == 2)
        try store.close()
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Copies the files directly in `source` into the folder `target`.
func copyFolder(_ source: String, to target: String) throws {
    struct CopyError: Error { let path: String }
    guard let directory = opendir(source) else { throw CopyError(path: source) }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
        let name = withUnsafePointer(to: entry.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) } }
        guard name != ".", name != ".." else { continue }
        guard let input = fopen(source + "/" + name, "rb") else { throw CopyError(path: source + "/" + name) }
        defer { fclose(input) }
        guard let output = fopen(target + "/" + name, "wb") else { throw CopyError(path: target + "/" + name) }
        defer { fclose(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = fread(&buffer, 1, buffer.count, input)
            if count == 0 { break }
            guard fwrite(buffer, 1, count, output) == count else { throw CopyError(path: target + "/" + name) }
        }
    }
}
