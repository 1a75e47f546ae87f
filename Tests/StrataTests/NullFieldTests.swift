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

// An optional attribute with a default (SwiftData's `var rating: Int? = 3`): records written
// before the attribute existed read the default, and a nil saved afterwards reads back nil —
// stored as a null field (Docs/FileFormat.md, "Null fields"). Every path that reads a value
// must agree: typed reads, the pre-filter, indexes and index-only counts, the journal, the
// export, migrations.

/// Version 1: notes with a title only.
enum NullV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Note.self] }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        var title: String
    }
}

/// Version 2 (lightweight): `rating: Int? = 3`, indexed, and `label: String? = "none"`.
enum NullV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Note.self] }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        var title: String
        var rating: Int?
        var label: String?
        static var attributeDefaults: [String: Value] { ["rating": .int(3), "label": .string("none")] }
        static var attributeOptions: [String: Attribute.Options] { ["rating": [.indexed]] }
    }
}

/// Version 3 (lightweight): `label` required, with the same default.
enum NullV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Note.self] }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        var title: String
        var rating: Int?
        var label: String
        static var attributeDefaults: [String: Value] { ["rating": .int(3), "label": .string("none")] }
        static var attributeOptions: [String: Attribute.Options] { ["rating": [.indexed]] }
    }
}

/// Version 3 with the indexed `rating` required instead: not lightweight.
enum NullV3RatingRequired: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Note.self] }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        var title: String
        var rating: Int
        var label: String?
        static var attributeDefaults: [String: Value] { ["rating": .int(3), "label": .string("none")] }
        static var attributeOptions: [String: Attribute.Options] { ["rating": [.indexed]] }
    }
}

/// Version 2.5 (lightweight from 2): `rating` keeps being optional and indexed but loses its
/// default — nils saved under version 2 stay null fields.
enum NullV25: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 5, 0)
    static var models: [any PersistentRecord.Type] { [Note.self] }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        var title: String
        var rating: Int?
        var label: String?
        static var attributeDefaults: [String: Value] { ["label": .string("none")] }
        static var attributeOptions: [String: Attribute.Options] { ["rating": [.indexed]] }
    }
}

enum NullPlanThroughNoDefault: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NullV2.self, NullV25.self, NullV3RatingRequired.self] }
    static var stages: [MigrationStage] {
        [.lightweight(fromVersion: NullV2.self, toVersion: NullV25.self),
         .lightweight(fromVersion: NullV25.self, toVersion: NullV3RatingRequired.self)]
    }
}

enum NullPlanTo2: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NullV1.self, NullV2.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: NullV1.self, toVersion: NullV2.self)] }
}

enum NullPlanTo3: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NullV1.self, NullV2.self, NullV3.self] }
    static var stages: [MigrationStage] {
        NullPlanTo2.stages + [.lightweight(fromVersion: NullV2.self, toVersion: NullV3.self)]
    }
}

enum NullPlanRatingRequiredLightweight: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NullV2.self, NullV3RatingRequired.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: NullV2.self, toVersion: NullV3RatingRequired.self)] }
}

enum NullPlanRatingRequired: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NullV2.self, NullV3RatingRequired.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: NullV2.self, toVersion: NullV3RatingRequired.self, transforms: [
            .map(NullV2.Note.self, to: NullV3RatingRequired.Note.self) { NullV3RatingRequired.Note(title: $0.title, rating: $0.rating ?? 3, label: $0.label) },
        ])]
    }
}

@Suite struct NullFieldTests {
    typealias Note = NullV2.Note

    /// Every record of `Note`, by id.
    static func all(_ context: Context) throws -> [UInt64: Note] {
        Dictionary(uniqueKeysWithValues: try context.fetch(FetchDescriptor<Note>()).map { ($0.id.rawValue, $0.record) })
    }

    /// Fetches and counts with `predicate` must select exactly what Swift's evaluation of it
    /// selects over every record (`expected` ids, ascending).
    static func expectSelects(_ context: Context, _ label: String, _ predicate: Predicate<Note>, _ expected: [UInt64]) throws {
        let all = try context.fetch(FetchDescriptor<Note>())
        let swift = try all.filter { try predicate.evaluate($0.record) }.map(\.id.rawValue).sorted()
        let fetched = try context.fetch(FetchDescriptor(predicate: predicate)).map(\.id.rawValue).sorted()
        let counted = try context.fetchCount(FetchDescriptor(predicate: predicate))
        #expect(swift == expected, "\(label): Swift selects \(swift)")
        #expect(fetched == expected, "\(label): fetch \(fetched), expected \(expected)")
        #expect(counted == expected.count, "\(label): fetchCount \(counted), expected \(expected.count)")
    }

    @Test func aNilSavedUnderADefaultReadsBackNil() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var store = try Store(at: folder, schema: NullV2.self)
        var context = Context(store)
        let a = try context.insert(Note(title: "a", rating: nil, label: nil))
        let b = try context.insert(Note(title: "b", rating: 5, label: "x"))
        let c = try context.insert(Note(title: "c", rating: nil, label: "y"))
        let d = try context.insert(Note(title: "d", rating: 3, label: "none"))
        #expect(try context.record(for: a) == Note(title: "a", rating: nil, label: nil), "unsaved")
        try context.save()
        // The bulk path of `Store.write` too.
        var e: RecordID<Note>?
        try store.write { e = try $0.insert(Note(title: "e", rating: nil, label: nil)) }
        let ids = [a, b, c, d, try #require(e)].map(\.rawValue)
        try store.close()
        store = try Store(at: folder, schema: NullV2.self)
        context = Context(store)
        #expect(try Self.all(context) == [
            ids[0]: Note(title: "a", rating: nil, label: nil), ids[1]: Note(title: "b", rating: 5, label: "x"),
            ids[2]: Note(title: "c", rating: nil, label: "y"), ids[3]: Note(title: "d", rating: 3, label: "none"),
            ids[4]: Note(title: "e", rating: nil, label: nil),
        ])
        // `rating` is indexed (index path, index-only count), `label` is not (pre-filter).
        try Self.expectSelects(context, "rating == nil", #Predicate { $0.rating == nil }, [ids[0], ids[2], ids[4]])
        try Self.expectSelects(context, "rating == 3", #Predicate { $0.rating == 3 }, [ids[3]])
        try Self.expectSelects(context, "rating != nil", #Predicate { $0.rating != nil }, [ids[1], ids[3]])
        try Self.expectSelects(context, "label == nil", #Predicate { $0.label == nil }, [ids[0], ids[4]])
        try Self.expectSelects(context, "label == none", #Predicate { $0.label == "none" }, [ids[3]])
        // Updates both ways.
        try context.update(b, to: Note(title: "b", rating: nil, label: nil))
        try context.update(c, to: Note(title: "c", rating: 4, label: "y"))
        try context.save()
        try store.close()
        store = try Store(at: folder, schema: NullV2.self)
        context = Context(store)
        #expect(try context.record(for: b) == Note(title: "b", rating: nil, label: nil))
        #expect(try context.record(for: c) == Note(title: "c", rating: 4, label: "y"))
        try Self.expectSelects(context, "rating == nil after updates", #Predicate { $0.rating == nil }, [ids[0], ids[1], ids[4]])
        try Self.expectSelects(context, "label == nil after updates", #Predicate { $0.label == nil }, [ids[0], ids[1], ids[4]])
        #expect(try store.verify().isValid)
        try store.close()
    }

    /// Seeded random inserts, updates and deletes of nil, the default and other values, through
    /// a context and `Store.write`, with reopens: every record and every nil/default query
    /// (index and pre-filter) equals a model of what was saved.
    @Test func randomChangesKeepEveryNilAndDefault() throws {
        let seed = SeededRandom.seed(default: 0x4E11)
        print("NullFieldTests.randomChangesKeepEveryNilAndDefault seed: \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        func note(_ index: Int) -> Note {
            Note(title: "n\(index)", rating: pick([nil, 3, 0, -1, 5]), label: pick([nil, "none", "", "x", "None"]))
        }
        var model: [UInt64: Note] = [:]
        var store = try Store(at: folder, schema: NullV2.self)
        for round in 0..<12 {
            if random.next() % 2 == 0 {
                let context = Context(store)
                for index in 0..<Int(random.next() % 40) {
                    let ids = model.keys.sorted()
                    switch random.next() % 4 {
                    case 0 where !ids.isEmpty:
                        let id = pick(ids)
                        try context.delete(RecordID<Note>(rawValue: id))
                        model[id] = nil
                    case 1 where !ids.isEmpty:
                        let id = pick(ids), changed = note(round * 100 + index)
                        try context.update(RecordID(rawValue: id), to: changed)
                        model[id] = changed
                    default:
                        let inserted = note(round * 100 + index)
                        model[try context.insert(inserted).rawValue] = inserted
                    }
                }
                try context.save()
            } else {
                try store.write { transaction in
                    for index in 0..<Int(random.next() % 40) {
                        let ids = model.keys.sorted()
                        if !ids.isEmpty && random.next() % 3 == 0 {
                            let id = pick(ids), changed = note(round * 100 + 50 + index)
                            try transaction.update(RecordID(rawValue: id), to: changed)
                            model[id] = changed
                        } else {
                            let inserted = note(round * 100 + 50 + index)
                            model[try transaction.insert(inserted).rawValue] = inserted
                        }
                    }
                }
            }
            if random.next() % 3 == 0 {
                try store.close()
                store = try Store(at: folder, schema: NullV2.self)
            }
            let context = Context(store)
            #expect(try Self.all(context) == model, "round \(round), seed \(seed)")
            func ids(_ keep: (Note) -> Bool) -> [UInt64] { model.filter { keep($0.value) }.keys.sorted() }
            try Self.expectSelects(context, "rating == nil, round \(round)", #Predicate { $0.rating == nil }, ids { $0.rating == nil })
            try Self.expectSelects(context, "rating == 3, round \(round)", #Predicate { $0.rating == 3 }, ids { $0.rating == 3 })
            try Self.expectSelects(context, "rating > 0, round \(round)", #Predicate { ($0.rating ?? 0) > 0 }, ids { ($0.rating ?? 0) > 0 })
            try Self.expectSelects(context, "label == nil, round \(round)", #Predicate { $0.label == nil }, ids { $0.label == nil })
            try Self.expectSelects(context, "label == none, round \(round)", #Predicate { $0.label == "none" }, ids { $0.label == "none" })
        }
        #expect(try store.verify().isValid)
        try store.close()
    }

    /// Records from before the attribute existed take the default; a nil saved since, on an
    /// old record or a new one, stays nil; the index built at the upgrade keys both right.
    @Test func recordsFromBeforeTheAttributeTakeTheDefault() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let v1 = try Store(at: folder, schema: NullV1.self)
        let old = try (0..<4).map { index in try v1.write { try $0.insert(NullV1.Note(title: "old \(index)")) } }
        try v1.close()
        var store = try Store(at: folder, schema: NullV2.self, migrationPlan: NullPlanTo2.self)
        var context = Context(store)
        let o = old.map(\.rawValue)
        let defaulted = Note(title: "", rating: 3, label: "none")
        for id in o { #expect(try context.record(for: RecordID<Note>(rawValue: id)).map { $0.rating == 3 && $0.label == "none" } == true) }
        try Self.expectSelects(context, "rating == 3 at the upgrade", #Predicate { $0.rating == 3 }, o)
        try context.update(RecordID(rawValue: o[0]), to: Note(title: "old 0", rating: nil, label: nil))
        try context.update(RecordID(rawValue: o[1]), to: Note(title: "renamed", rating: defaulted.rating, label: defaulted.label))
        let fresh = try context.insert(Note(title: "new", rating: nil, label: "set"))
        try context.save()
        try store.close()
        store = try Store(at: folder, schema: NullV2.self, migrationPlan: NullPlanTo2.self)
        context = Context(store)
        #expect(try context.record(for: RecordID<Note>(rawValue: o[0])) == Note(title: "old 0", rating: nil, label: nil))
        #expect(try context.record(for: RecordID<Note>(rawValue: o[1])) == Note(title: "renamed", rating: 3, label: "none"))
        #expect(try context.record(for: RecordID<Note>(rawValue: o[2])) == Note(title: "old 2", rating: 3, label: "none"))
        #expect(try context.record(for: fresh) == Note(title: "new", rating: nil, label: "set"))
        try Self.expectSelects(context, "rating == nil", #Predicate { $0.rating == nil }, [o[0], fresh.rawValue])
        try Self.expectSelects(context, "rating == 3", #Predicate { $0.rating == 3 }, [o[1], o[2], o[3]])
        try Self.expectSelects(context, "label == none", #Predicate { $0.label == "none" }, [o[1], o[2], o[3]])
        #expect(try store.verify().isValid)
        try store.close()
    }

    /// A later version makes the attribute required (lightweight, it has a default): a nil
    /// saved before reads as the default, in records and in predicates.
    @Test func aNilReadsTheDefaultOnceTheAttributeIsRequired() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let v2 = try Store(at: folder, schema: NullV2.self, migrationPlan: NullPlanTo2.self)
        let saved = try v2.write { [try $0.insert(Note(title: "nil", rating: nil, label: nil)), try $0.insert(Note(title: "set", rating: 1, label: "x"))] }
        try v2.close()
        let store = try Store(at: folder, schema: NullV3.self, migrationPlan: NullPlanTo3.self)
        let context = Context(store)
        let notes = try context.fetch(FetchDescriptor<NullV3.Note>()).map(\.record)
        #expect(notes == [NullV3.Note(title: "nil", rating: nil, label: "none"), NullV3.Note(title: "set", rating: 1, label: "x")])
        let byLabel = try context.fetch(FetchDescriptor<NullV3.Note>(predicate: #Predicate { $0.label == "none" })).map(\.id.rawValue)
        #expect(byLabel == [saved[0].rawValue])
        #expect(try context.fetchCount(FetchDescriptor<NullV3.Note>(predicate: #Predicate { $0.label == "x" })) == 1)
        #expect(try store.verify().isValid)
        try store.close()
    }

    /// Making an indexed optional attribute with a default required would leave its index
    /// keying saved nils as nil while they read as the default: not lightweight. The error
    /// names the fix; the custom stage it names works.
    @Test func makingAnIndexedNullableAttributeRequiredNeedsACustomStage() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let v2 = try Store(at: folder, schema: NullV2.self)
        let ids = try v2.write { [try $0.insert(Note(title: "nil", rating: nil, label: nil)), try $0.insert(Note(title: "five", rating: 5, label: nil))] }
        try v2.close()
        #expect(throws: (any Error).self) { try NullPlanRatingRequiredLightweight.validate() }
        var message = ""
        do { _ = try Store(at: folder, schema: NullV3RatingRequired.self, migrationPlan: NullPlanRatingRequiredLightweight.self) } catch {
            message = "\(error)"
        }
        #expect(message.contains("keep nil in its index"), "\(message)")
        #expect(message.contains("old.rating ?? <default>"), "\(message)")
        // Nothing changed.
        let again = try Store(at: folder, schema: NullV2.self)
        #expect(try Context(again).record(for: ids[0]) == Note(title: "nil", rating: nil, label: nil))
        try again.close()
        let store = try Store(at: folder, schema: NullV3RatingRequired.self, migrationPlan: NullPlanRatingRequired.self)
        let context = Context(store)
        let threes = try context.fetch(FetchDescriptor<NullV3RatingRequired.Note>(predicate: #Predicate { $0.rating == 3 }))
        #expect(threes.map(\.id.rawValue) == [ids[0].rawValue])
        #expect(try context.fetchCount(FetchDescriptor<NullV3RatingRequired.Note>(predicate: #Predicate { $0.rating == 5 })) == 1)
        #expect(try store.verify().isValid)
        try store.close()
    }

    /// The same through a version between that removes the default: the nils saved while it
    /// had one are still null fields, so making the indexed attribute required then is not
    /// lightweight either — the check looks at every earlier version, not only the previous.
    @Test func aNilSavedUnderAnEarlierDefaultStillNeedsACustomStage() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let v2 = try Store(at: folder, schema: NullV2.self)
        let id = try v2.write { try $0.insert(Note(title: "nil", rating: nil, label: nil)) }
        try v2.close()
        var message = ""
        do { try NullPlanThroughNoDefault.validate() } catch { message = "\(error)" }
        #expect(message.contains("keep nil in its index"), "\(message)")
        var opened = ""
        do { _ = try Store(at: folder, schema: NullV3RatingRequired.self, migrationPlan: NullPlanThroughNoDefault.self) } catch {
            opened = "\(error)"
        }
        #expect(opened.contains("keep nil in its index"), "\(opened)")
        // Nothing changed; the version between alone is lightweight and keeps the nil.
        let between = try Store(at: folder, schema: NullV25.self, migrationPlan: AutoPlan<NullV2, NullV25>.self)
        #expect(try Context(between).record(for: RecordID<NullV25.Note>(rawValue: id.rawValue))?.rating == nil)
        #expect(try between.verify().isValid)
        try between.close()
    }

    /// The journal tells a nil saved from the default: old and new values of each update.
    @Test func theJournalRecordsNilAndTheDefault() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let v1 = try Store(at: folder, schema: NullV1.self)
        let old = try v1.write { try $0.insert(NullV1.Note(title: "old")) }
        try v1.close()
        let store = try Store(at: folder, schema: NullV2.self, migrationPlan: NullPlanTo2.self)
        let id = RecordID<Note>(rawValue: old.rawValue)
        let start = try #require(try store.fetchHistory().last).token
        try store.write { try $0.update(id, to: Note(title: "old", rating: nil, label: "none")) }  // 3 → nil
        try store.write { try $0.update(id, to: Note(title: "old", rating: 7, label: "none")) }    // nil → 7
        try store.write { try $0.update(id, to: Note(title: "old", rating: 7, label: nil)) }      // "none" → nil
        let updates = try store.fetchHistory(HistoryDescriptor(after: start)).flatMap(\.changes).map { change in
            change.updatedAttributes.map { "\($0.name): \($0.oldValue) → \($0.newValue)" }
        }
        #expect(updates == [["rating: \(Value.int(3)) → \(Value.null)"], ["rating: \(Value.null) → \(Value.int(7))"],
                            ["label: \(Value.string("none")) → \(Value.null)"]], "\(updates)")
        try store.close()
    }

    /// Writes the golden store `Tests/StrataTests/Fixtures/null-fields-r3` when
    /// STRATA_WRITE_NULLS_FIXTURE names an empty folder: records from version 1 (absent
    /// attributes), records of version 2 holding null fields, and version 3, which made
    /// `label` required — so the store holds null fields under an optional attribute
    /// (`rating`, indexed) and under a required one (`label`), and a journal of them.
    @Test func writeFixtureWhenAsked() throws {
        guard let target = getenv("STRATA_WRITE_NULLS_FIXTURE").map({ String(cString: $0) }) else { return }
        let v1 = try Store(at: target, schema: NullV1.self)
        try v1.write { for title in ["v1 a", "v1 b"] { _ = try $0.insert(NullV1.Note(title: title)) } }
        try v1.close()
        let v2 = try Store(at: target, schema: NullV2.self, migrationPlan: NullPlanTo2.self)
        let context = Context(v2, author: "v2")
        try context.insert(Note(title: "v2 nil nil", rating: nil, label: nil))
        try context.insert(Note(title: "v2 5 x", rating: 5, label: "x"))
        try context.insert(Note(title: "v2 nil y", rating: nil, label: "y"))
        try context.update(RecordID(rawValue: 2), to: Note(title: "v1 b", rating: nil, label: nil))
        try context.save()
        try v2.close()
        let v3 = try Store(at: target, schema: NullV3.self, migrationPlan: NullPlanTo3.self)
        try v3.write(author: "v3") { _ = try $0.insert(NullV3.Note(title: "v3 nil", rating: nil, label: "z")) }
        try v3.close()
    }

    /// The golden store reads back as written, through every path.
    @Test func theGoldenStoreReadsBack() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let fixture = String(#filePath.prefix(upTo: #filePath.lastIndex(of: "/")!)) + "/Fixtures/null-fields-r3"
        copyFiles(from: fixture, to: folder)
        let store = try Store(at: folder, schema: NullV3.self, migrationPlan: NullPlanTo3.self)
        let context = Context(store)
        let notes = try context.fetch(FetchDescriptor<NullV3.Note>()).map { "\($0.id.rawValue) \($0.record.title) \(String(describing: $0.record.rating)) \($0.record.label)" }
        #expect(notes == ["1 v1 a Optional(3) none", "2 v1 b nil none", "3 v2 nil nil nil none", "4 v2 5 x Optional(5) x",
                          "5 v2 nil y nil y", "6 v3 nil nil z"])
        let nils = try context.fetch(FetchDescriptor<NullV3.Note>(predicate: #Predicate { $0.rating == nil })).map(\.id.rawValue)
        #expect(nils == [2, 3, 5, 6])
        #expect(try context.fetchCount(FetchDescriptor<NullV3.Note>(predicate: #Predicate { $0.rating == 3 })) == 1)
        #expect(try context.fetchCount(FetchDescriptor<NullV3.Note>(predicate: #Predicate { $0.label == "none" })) == 3)
        let updated = try store.fetchHistory().flatMap(\.changes).flatMap(\.updatedAttributes).map { "\($0.name) \($0.oldValue) \($0.newValue)" }
        #expect(updated.contains("rating \(Value.int(3)) \(Value.null)"), "\(updated)")
        #expect(try store.verify().isValid)
        try store.close()
    }
}

/// A plan of two schemas and one lightweight stage.
enum AutoPlan<From: VersionedSchema, To: VersionedSchema>: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [From.self, To.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: From.self, toVersion: To.self)] }
}
