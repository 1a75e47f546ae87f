#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

// Making an attribute codable, end to end on a store: old plain values read as the codable
// type's single-value encoding; a value that does not decode is a typed error when that record
// is read; new writes store the codable form; a store opened read-only by the older app refuses.

/// The first version: plain attributes.
enum TaskV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Task.self] }
    struct Task: PersistentRecord, Equatable {
        static var entityName: String { "Task" }
        var title: String
        var status: String
        var degrees: Int?
    }
}

/// The second version: `status` is an enum with String raw values, `degrees` a wrapper of one Int.
enum TaskV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Task.self] }
    enum Status: String, Codable, Hashable, CaseIterable { case active, archived }
    struct Celsius: Codable, Hashable {
        var value: Int
        init(value: Int) { self.value = value }
        init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int.self) }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }
    struct Task: PersistentRecord, Equatable {
        static var entityName: String { "Task" }
        var title: String
        var status: Status
        var degrees: Celsius?
    }
}

@Suite struct LightweightCodableTests {
    /// A store written with V1: tasks 1 (active, 21), 2 (archived, nil), 3 ("bogus", -4).
    static func withV1Store(_ body: (String) throws -> Void) throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, schema: TaskV1.self)
        let context = Context(store)
        try context.insert(TaskV1.Task(title: "one", status: "active", degrees: 21))
        try context.insert(TaskV1.Task(title: "two", status: "archived", degrees: nil))
        try context.insert(TaskV1.Task(title: "three", status: "bogus", degrees: -4))
        try context.save()
        try store.close()
        try body(folder)
    }

    @Test func plainValuesReadAsTheCodableTypeAndABadOneIsATypedError() throws {
        try Self.withV1Store { folder in
            let store = try Store(at: folder, schema: TaskV2.self)
            let context = Context(store)
            #expect(try context.record(for: RecordID<TaskV2.Task>(rawValue: 1))
                    == TaskV2.Task(title: "one", status: .active, degrees: TaskV2.Celsius(value: 21)))
            #expect(try context.record(for: RecordID<TaskV2.Task>(rawValue: 2))
                    == TaskV2.Task(title: "two", status: .archived, degrees: nil))
            // "bogus" is no Status: an error naming the attribute, never a trap or a made-up value.
            do {
                _ = try context.record(for: RecordID<TaskV2.Task>(rawValue: 3))
                Issue.record("reading a Task with status \"bogus\" succeeded")
            } catch {
                #expect("\(error)".contains("attribute status"), "\(error)")
                #expect("\(error)".contains("bogus"), "\(error)")
            }
            // New and updated records store the codable form and read back.
            try context.update(RecordID<TaskV2.Task>(rawValue: 3), to: TaskV2.Task(title: "three", status: .archived, degrees: TaskV2.Celsius(value: -4)))
            let added = try context.insert(TaskV2.Task(title: "four", status: .active, degrees: TaskV2.Celsius(value: 7)))
            try context.save()
            try store.close()

            let reopened = try Store(at: folder, schema: TaskV2.self)
            let fresh = Context(reopened)
            let all = try fresh.fetch(FetchDescriptor<TaskV2.Task>())
            #expect(all.map(\.record.status) == [.active, .archived, .archived, .active])
            #expect(all.map { $0.record.degrees?.value } == [21, nil, -4, 7])
            #expect(try fresh.fetchCount(FetchDescriptor<TaskV2.Task>(predicate: #Predicate { $0.title == "four" })) == 1)
            #expect(all.last?.id == added)
            try reopened.close()

            // The older app cannot read the JSON values: read-only access through V1 is refused.
            var readOnly = Store.Configuration()
            readOnly.isReadOnly = true
            #expect(throws: StrataError.storeIsNewer(stored: TaskV2.versionIdentifier, current: TaskV1.versionIdentifier)) {
                try Store(at: folder, schema: TaskV1.self, migrationPlan: nil, configuration: readOnly)
            }
        }
    }
}
