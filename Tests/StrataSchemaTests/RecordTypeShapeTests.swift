#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema

/// Record types of every shape: classes, subclasses, custom names, and conformances a record cannot use.
@Suite struct RecordTypeShapeTests {
    final class Note: PersistentRecord, Equatable {
        var title: String
        var body: String?
        var pinned: Bool

        init(title: String, body: String?, pinned: Bool) {
            self.title = title
            self.body = body
            self.pinned = pinned
        }

        static func == (a: Note, b: Note) -> Bool { a.title == b.title && a.body == b.body && a.pinned == b.pinned }
    }

    /// A class hierarchy: the subclass encodes its superclass through superEncoder(), into the same record.
    class Animal: Codable {
        var name: String
        init(name: String) { self.name = name }
    }

    final class Dog: Animal, PersistentRecord {
        var goodBoy: Bool
        enum CodingKeys: String, CodingKey { case goodBoy }

        init(name: String, goodBoy: Bool) {
            self.goodBoy = goodBoy
            super.init(name: name)
        }

        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            goodBoy = try container.decode(Bool.self, forKey: .goodBoy)
            try super.init(from: container.superDecoder())
        }

        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(goodBoy, forKey: .goodBoy)
            try super.encode(to: container.superEncoder())
        }
    }

    @Test func classBasedRecordsRoundTrip() throws {
        #expect(try Note.entity() == Entity("Note", attributes: [.string("title"), .string("body", isOptional: true), .bool("pinned")]))
        let note = Note(title: "Groceries", body: nil, pinned: true)
        #expect(try RecordDecoder().decode(Note.self, from: try RecordEncoder().encode(note)) == note)
    }

    @Test func subclassesShareTheRecordWithTheirSuperclass() throws {
        #expect(try Dog.entity() == Entity("Dog", attributes: [.bool("goodBoy"), .string("name")]))
        let values = try RecordEncoder().encode(Dog(name: "Rex", goodBoy: true))
        #expect(values == ["goodBoy": .bool(true), "name": .string("Rex")])
        let dog = try RecordDecoder().decode(Dog.self, from: values)
        #expect(dog.name == "Rex" && dog.goodBoy)
    }

    struct Renamed: PersistentRecord {
        var value: Int
        static var entityName: String { "Measurement" }
        static var originalEntityName: String? { "Reading" }
    }

    @Test func entityNamesCanBeCustomized() throws {
        let entity = try Renamed.entity()
        #expect(entity.name == "Measurement" && entity.originalName == "Reading")
    }

    struct Typo: PersistentRecord {
        var title: String
        static let attributeOptions: [String: Attribute.Options] = ["titel": [.unique]]
    }

    @Test func customizationsMustNameRealAttributes() {
        #expect(throws: RecordCodingError.unknownAttribute(type: "Typo", attribute: "titel")) { try Typo.entity() }
    }

    enum Mood: String, Codable { case happy, sad }  // not CaseIterable: no placeholder can be made
    struct Diary: PersistentRecord {
        var mood: Mood
        var optionalMood: Mood?  // optionals need no placeholder
    }

    struct Mixed: PersistentRecord {
        var optionalMood: Mood?
    }

    @Test func placeholdersThatCannotBeMadeAreReported() throws {
        guard case .cannotDeriveEntity(let type, let reason)? = Self.error({ try Diary.entity() }) else {
            Issue.record("expected cannotDeriveEntity")
            return
        }
        #expect(type == "Diary" && reason.contains("mood"))
        #expect(try Mixed.entity().attributes == [.codable("optionalMood", typeName: "Mood", isOptional: true)])
    }

    struct List: PersistentRecord {
        var items: [Int]
        init(items: [Int]) { self.items = items }
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            items = try container.decode([Int].self)
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(items)
        }
    }

    struct Nested: PersistentRecord {
        var inner: Int
        enum CodingKeys: String, CodingKey { case outer }
        enum InnerKeys: String, CodingKey { case inner }
        init(inner: Int) { self.inner = inner }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            inner = try container.nestedContainer(keyedBy: InnerKeys.self, forKey: .outer).decode(Int.self, forKey: .inner)
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            var nested = container.nestedContainer(keyedBy: InnerKeys.self, forKey: .outer)
            try nested.encode(inner, forKey: .inner)
        }
    }

    @Test func recordsMustBeOneKeyedContainer() {
        for error in [Self.error { try List.entity() }, Self.error { try RecordEncoder().encode(List(items: [1])) },
                      Self.error { try RecordDecoder().decode(List.self, from: [:]) }] {
            guard case .unsupportedStructure(let type, let reason)? = error else { Issue.record("\(String(describing: error))"); continue }
            #expect(type == "List" && reason.contains("unkeyed"))
        }
        for error in [Self.error { try Nested.entity() }, Self.error { try RecordEncoder().encode(Nested(inner: 1)) },
                      Self.error { try RecordDecoder().decode(Nested.self, from: ["outer": .int(1)]) }] {
            guard case .unsupportedStructure(let type, let reason)? = error else { Issue.record("\(String(describing: error))"); continue }
            #expect(type == "Nested" && reason.contains("outer"))
        }
    }

    struct Validating: PersistentRecord {
        var age: Int
        struct Negative: Error {}
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            age = try container.decode(Int.self, forKey: .age)
            guard age >= 0 else { throw Negative() }
        }
    }

    @Test func errorsOfTheRecordsOwnAreWrapped() {
        guard case .recordCodingFailed(let type, _)? = Self.error({ try RecordDecoder().decode(Validating.self, from: ["age": .int(-1)]) }) else {
            Issue.record("expected recordCodingFailed")
            return
        }
        #expect(type == "Validating")
        #expect((try? Validating.entity()) == Entity("Validating", attributes: [.int("age")]))
    }

    /// The RecordCodingError `body` throws; nil when it succeeds or throws anything else.
    static func error<T>(_ body: () throws -> T) -> RecordCodingError? {
        do { _ = try body(); return nil } catch { return error as? RecordCodingError }
    }
}
