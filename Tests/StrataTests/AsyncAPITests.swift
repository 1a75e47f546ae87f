#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// The async API: `Store.open`, `Store.write` and `Context.save()` do their blocking work off
/// the cooperative pool and behave exactly as their synchronous forms — also from the main
/// actor, where a context stays.
@Suite struct AsyncAPITests {
    @MainActor
    @Test func asyncOpenWriteAndSaveFromTheMainActor() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let schema = try Schema(types: [User.self])
        let store = try await Store.open(at: folder, schema: schema)
        let context = Context(store)  // main-actor state
        let ada = try context.insert(User(email: "ada@x", handle: "ada", age: 36))
        try await context.save()
        #expect(!context.hasChanges)
        #expect(try Context(store).record(for: ada) == User(email: "ada@x", handle: "ada", age: 36))

        // A save that fails keeps the changes and stores nothing.
        let bob = try context.insert(User(email: "bob@x", handle: "bob", age: 20))
        try await context.save()
        try context.update(bob, to: User(email: "bob@x", handle: "bobby", age: 21))
        let other = Context(store)
        try other.update(ada, to: User(email: "ada@x", handle: "bobby", age: 37))  // takes the handle first
        try await other.save()
        await #expect(throws: StrataError.self) { try await context.save() }
        #expect(context.hasChanges)
        #expect(try Context(store).record(for: bob)?.handle == "bob")

        // Store.write: the body's result comes back; its inserts are committed together.
        let ids = try await store.write { transaction in
            try (0..<10).map { try transaction.insert(User(email: "u\($0)@x", handle: nil, age: $0)) }
        }
        #expect(ids.count == 10)
        #expect(try Context(store).fetchCount(FetchDescriptor<User>()) == 12)
        try store.close()
    }
}
