#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataIO
import StrataPageLog
import StrataRecords
import StrataTestSupport
@testable import StrataToolCore
#if canImport(Glibc)
import Glibc
#endif

/// `strata export` and `strata import`: a store through the export format and back, exactly;
/// bad export files refused with the line at fault and nothing left behind.
@Suite struct ExportImportTests {
    struct Shelf: PersistentRecord, Equatable {
        var label: String
        var items: [RecordID<Item>] = []
        static let relationshipRules = ["items": RelationshipRule(inverse: "shelf")]
        static var attributeOptions: [String: Attribute.Options] { ["label": [.unique]] }
    }

    struct Box: Codable, Equatable {
        var width: Int
        var caption: String
    }

    struct Item: PersistentRecord, Equatable {
        var title: String
        var note: String?
        var weight: Double
        var made: Date
        var blob: Data
        var code: UUID
        var count: Int
        var box: Box?
        var shelf: RecordID<Shelf>?
        static let relationshipRules = ["shelf": RelationshipRule(inverse: "items")]
        static var attributeOptions: [String: Attribute.Options] { ["count": [.indexed]] }
    }

    /// A sub-entity of Item.
    struct Gadget: PersistentRecord, Equatable {
        var title: String
        var note: String?
        var weight: Double
        var made: Date
        var blob: Data
        var code: UUID
        var count: Int
        var box: Box?
        var shelf: RecordID<Shelf>?
        var volts: Int
        static var parentRecordType: (any PersistentRecord.Type)? { Item.self }
    }

    static var types: [any PersistentRecord.Type] { [Shelf.self, Item.self, Gadget.self] }

    static let texts = ["plain", "Grüße", "日本語のテキスト", "emoji 👩‍👩‍👧 🚀", "quote \" backslash \\ tab \t newline \n", "한국어", "\u{0001}control", ""]

    /// Shelves, items and gadgets with random values (seeded), some deleted so ids have gaps.
    static func fill(_ folder: String, seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        let store = try Store(at: folder, for: types)
        let context = Context(store, author: "fill")
        var shelves: [RecordID<Shelf>] = []
        for index in 0..<4 { shelves.append(try context.insert(Shelf(label: "shelf \(index) " + pick(texts)))) }
        var items: [RecordID<Item>] = []
        for index in 0..<120 {
            let weight = pick([0.0, -0.0, 1.5, .infinity, -.infinity, Double(bitPattern: random.next() >> 2), .leastNonzeroMagnitude, 1e300])
            let made = Date(timeIntervalSinceReferenceDate: Double(Int64(bitPattern: random.next()) % 4_000_000_000) / 7.0)
            let blob = Data(random.bytes(index % 17 == 0 ? 70_000 : Int(random.next() % 40)))
            let shelf = random.next() % 3 == 0 ? nil : pick(shelves)
            let note = random.next() % 2 == 0 ? nil : pick(texts) + " \(index)"
            let box = random.next() % 2 == 0 ? nil : Box(width: index, caption: pick(texts))
            if index % 5 == 0 {
                let id = try context.insert(Gadget(title: "gadget \(index) " + pick(texts), note: note, weight: weight, made: made, blob: blob,
                                                   code: UUID(), count: Int(Int64(bitPattern: random.next())), box: box, shelf: shelf,
                                                   volts: index))
                items.append(RecordID(rawValue: id.rawValue))
            } else {
                items.append(try context.insert(Item(title: "item \(index) " + pick(texts), note: note, weight: weight, made: made, blob: blob,
                                                     code: UUID(), count: index % 7, box: box, shelf: shelf)))
            }
            if index % 40 == 39 { try context.save() }
        }
        try context.save()
        // Deleted records leave gaps; the last one deleted leaves the next id above every id.
        for id in [items[3], items[50], items[119]] { try context.delete(id) }
        try context.save()
        try store.close()
    }

    static func export(_ folder: String) throws -> String {
        let run = ToolTests.strata("export", folder)
        #expect(run.status == .success, "\(run.errors)")
        return run.output
    }

    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    @Test func exportImportExportIsByteIdenticalAndTheAppReadsEveryValue() throws {
        let seed = SeededRandom.seed(default: 0x5EED_E4B0)
        print("ExportImportTests seed: \(seed) (STRATA_TEST_SEED)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let source = folder + "/source", copy = folder + "/copy", again = folder + "/again"
        try Self.fill(source, seed: seed)
        let first = try Self.export(source)
        try Self.write(first, to: folder + "/first.jsonl")
        let imported = ToolTests.strata("import", folder + "/first.jsonl", copy)
        #expect(imported.status == .success, "\(imported.errors)")
        #expect(imported.lines == ["imported 121 records into \(copy)"])  // 4 shelves, 117 items
        #expect(!FileManager.default.fileExists(atPath: copy + ".importing"))
        // Export → import → export: the same bytes.
        let second = try Self.export(copy)
        #expect(second == first)
        try Self.write(second, to: folder + "/second.jsonl")
        #expect(ToolTests.strata("import", folder + "/second.jsonl", again).status == .success)
        #expect(try Self.export(again) == first)
        // The copy verifies clean and dumps as the source does.
        #expect(ToolTests.strata("verify", copy).status == .success)
        #expect(ToolTests.strata("dump", copy).output == ToolTests.strata("dump", source).output)
        // The app reads every value of the copy as of the source: ids, relationships both ways.
        let original = try Store(at: source, for: Self.types)
        let restored = try Store(at: copy, for: Self.types)
        let originalContext = Context(original), restoredContext = Context(restored)
        let items = try originalContext.fetch(FetchDescriptor<Item>())
        #expect(items.count == 117)
        #expect(try restoredContext.fetch(FetchDescriptor<Item>()) == items)
        #expect(try restoredContext.fetch(FetchDescriptor<Gadget>()) == originalContext.fetch(FetchDescriptor<Gadget>()))
        let shelves = try originalContext.fetch(FetchDescriptor<Shelf>())
        #expect(shelves.contains { !$0.record.items.isEmpty })
        #expect(try restoredContext.fetch(FetchDescriptor<Shelf>()) == shelves)
        #expect(try restoredContext.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.count == 3 })).map(\.id)
            == originalContext.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.count == 3 })).map(\.id))
        // Each hierarchy hands out the next id the source would have.
        let next = try restoredContext.insert(Item(title: "new", note: nil, weight: 0, made: Date(timeIntervalSinceReferenceDate: 0),
                                                   blob: Data(), code: UUID(), count: 0, box: nil, shelf: nil))
        #expect(next.rawValue == 121)
        // The unique attribute's index is in the copy: inserting a shelf with a label taken
        // updates that shelf (an upsert).
        try restoredContext.insert(Shelf(label: shelves[0].record.label))
        try restoredContext.save()
        #expect(try restoredContext.fetch(FetchDescriptor<Shelf>()).map(\.id) == shelves.map(\.id))
        try original.close()
        try restored.close()
    }

    /// Nils saved under optional attributes with defaults (null fields, in the golden store
    /// `null-fields-r3`) export as null — or as the default under an attribute a later version
    /// made required — and the import stores them so: exporting the copy gives the same bytes.
    @Test func savedNilsUnderDefaultsSurviveExportAndImport() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let source = folder + "/source", copy = folder + "/copy"
        mkdir(source, 0o755)
        copyFiles(from: IndependentReaderTests.repository + "/Tests/StrataTests/Fixtures/null-fields-r3", to: source)
        let first = try Self.export(source)
        let notes = first.split(separator: "\n").filter { $0.hasPrefix("{\"entity\":\"Note\"") }
        #expect(notes == [
            #"{"entity":"Note","id":1,"values":{"title":"v1 a","rating":3,"label":"none"}}"#,
            #"{"entity":"Note","id":2,"values":{"title":"v1 b","rating":null,"label":"none"}}"#,
            #"{"entity":"Note","id":3,"values":{"title":"v2 nil nil","rating":null,"label":"none"}}"#,
            #"{"entity":"Note","id":4,"values":{"title":"v2 5 x","rating":5,"label":"x"}}"#,
            #"{"entity":"Note","id":5,"values":{"title":"v2 nil y","rating":null,"label":"y"}}"#,
            #"{"entity":"Note","id":6,"values":{"title":"v3 nil","rating":null,"label":"z"}}"#,
        ])
        try Self.write(first, to: folder + "/first.jsonl")
        #expect(ToolTests.strata("import", folder + "/first.jsonl", copy).status == .success)
        #expect(try Self.export(copy) == first)
        #expect(ToolTests.strata("verify", copy).status == .success)
    }

    /// An entity tree left empty — a sub-entity whose records were all deleted, its counter
    /// still at 1 (its records take ids from the hierarchy's root) — is an entity line of the
    /// export with no records, and the import keeps it: exporting the copy gives the same bytes.
    @Test func anEmptyEntityTreeSurvivesExportAndImport() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let source = folder + "/source", copy = folder + "/copy"
        do {
            let store = try Store(at: source, for: Self.types)
            let context = Context(store)
            _ = try context.insert(Item(title: "kept", note: nil, weight: 1, made: Date(timeIntervalSinceReferenceDate: 0),
                                        blob: Data(), code: UUID(), count: 1, box: nil, shelf: nil))
            let gadget = try context.insert(Gadget(title: "gone", note: nil, weight: 2, made: Date(timeIntervalSinceReferenceDate: 0),
                                                   blob: Data(), code: UUID(), count: 2, box: nil, shelf: nil, volts: 5))
            try context.save()
            try context.delete(gadget)
            try context.save()
            try store.close()
        }
        let first = try Self.export(source)
        #expect(first.split(separator: "\n").contains { $0.hasPrefix("{\"entityTree\":{\"entity\":\"Gadget\"") && $0.contains("\"records\":0") },
                "the emptied tree is an entity line: \(first)")
        try Self.write(first, to: folder + "/first.jsonl")
        #expect(ToolTests.strata("import", folder + "/first.jsonl", copy).status == .success)
        #expect(try Self.export(copy) == first)
    }

    struct Note: PersistentRecord, Equatable {
        var text: String
    }

    /// A store of 2,000 notes (a tree with an interior root), closed; `damage` then changes its
    /// pages through the page log, as a faulty writer would (the checksums stay right).
    static func damagedNotes(_ folder: String, _ damage: (RecordStore, UInt32) throws -> Void) throws {
        let store = try Store(at: folder, for: [Note.self])
        try store.write { transaction in for index in 0..<2_000 { _ = try transaction.insert(Note(text: "note \(index)")) } }
        try store.close()
        let records = RecordStore(log: try PageLog.open(directory: folder, fileSystem: POSIXFileSystem()))
        let entityID = try #require(try records.snapshot().root.entities.keys.first)
        try damage(records, entityID)
        try records.log.close()
    }

    /// A damaged tree whose checksums hold — a leaf's records outside the range its parent
    /// gives it, a store root counting a record too many — is refused by `export` and `dump`
    /// (status 3, the damage named), which used to write it out as if it were whole (the
    /// export then announcing more records than it held).
    @Test func exportAndDumpRefuseATreeThatBreaksItsRules() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        // The root interior node's child 1 starts two ids higher: its first two records lie
        // below its range (`kind, version, count:u16, reserved:u32`, then (first id, child) pairs).
        try Self.damagedNotes(folder + "/ranges") { records, entityID in
            let rootPageID = try #require(try records.snapshot().root.entities[entityID]?.tree.rootPageID)
            var root = try #require(try records.log.snapshot().read(rootPageID)).bytes
            try #require(root.first == 2 && (Int(root[2]) | Int(root[3]) << 8) >= 2)
            let first = (0..<8).reduce(UInt64(0)) { $0 | UInt64(root[24 + $1]) << (8 * UInt64($1)) }
            for byte in 0..<8 { root[24 + byte] = UInt8(truncatingIfNeeded: (first + 2) >> (8 * UInt64(byte))) }
            try records.log.write { try $0.write(rootPageID, bytes: root) }
        }
        // The store root counts one record more than the tree holds.
        try Self.damagedNotes(folder + "/count") { records, entityID in
            var root = try records.snapshot().root
            root.entities[entityID]?.tree.count += 1
            let bytes = root.encoded()
            try records.log.write { try $0.write(StoreRoot.pageID, bytes: bytes) }
        }
        for (store, damage) in [("ranges", "outside the range its parents give it"), ("count", "the tree holds 2000 records, the store root says 2001")] {
            for command in ["export", "dump"] {
                let run = ToolTests.strata(command, folder + "/" + store)
                #expect(run.status == .storeError, "\(command) \(store): \(run.errors)")
                #expect(run.errors.contains(damage), "\(command) \(store): \(run.errors)")
            }
            #expect(ToolTests.strata("verify", folder + "/" + store).status == .problemsFound)
        }
    }

    @Test func anExportCarriesEveryCatalogVersionAndItsIDs() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let source = folder + "/source"
        try ToolTests.fill(source)
        // A second, lightweight version: an optional attribute added to Volume.
        var schema = try Schema(version: Schema.Version(1, 1, 0), types: [ToolTests.Writer.self, ToolTests.Volume.self])
        let volume = try #require(schema.entities.firstIndex { $0.name == "Volume" })
        schema.entities[volume].attributes.append(.string("subtitle", isOptional: true))
        try Store(at: source, schema: schema).close()
        let export = try Self.export(source)
        let lines = export.split(separator: "\n").map(String.init)
        #expect(lines.first == #"{"format":"strata-export","version":1,"catalogVersions":2,"entities":2,"records":5}"#)
        #expect(lines[1].hasPrefix(#"{"catalog":{"nextVersionID":3,"#))
        #expect(lines[2].hasPrefix(#"{"schemaVersion":{"id":1,"version":"1.0.0","checksum":""#))
        #expect(lines[3].hasPrefix(#"{"schemaVersion":{"id":2,"version":"1.1.0","checksum":""#))
        #expect(lines[3].contains(#"{"id":10,"name":"subtitle","type":"string","optional":true,"default":null,"unique":false,"indexed":false}"#))
        #expect(lines[4] == #"{"entityTree":{"entity":"Writer","entityID":1,"records":2,"nextID":3}}"#)
        // Exact values: the date as its stored seconds since 2001, the double as it reads back.
        #expect(lines[5].contains(#""born":721692800.25,"#))
        #expect(lines[6].contains(#""rating":"-Infinity""#))
        #expect(lines[8] == #"{"entity":"Volume","id":1,"values":{"title":"Notes","subtitle":null,"writer":1}}"#)
        #expect(lines.last == #"{"end":{"records":5}}"#)
        try Self.write(export, to: folder + "/export.jsonl")
        #expect(ToolTests.strata("import", folder + "/export.jsonl", folder + "/copy").status == .success)
        #expect(ToolTests.strata("schema", "--json", folder + "/copy").output.replacing(folder + "/copy", with: "P")
            == ToolTests.strata("schema", "--json", source).output.replacing(source, with: "P"))
    }

    /// Imports `text` into a new folder: the run, and whether anything was left behind.
    static func importing(_ text: String) throws -> (run: ToolTests.Run, leftBehind: Bool) {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try write(text, to: folder + "/export.jsonl")
        let run = ToolTests.strata("import", folder + "/export.jsonl", folder + "/new")
        let leftBehind = FileManager.default.fileExists(atPath: folder + "/new") || FileManager.default.fileExists(atPath: folder + "/new.importing")
        return (run, leftBehind)
    }

    @Test func aBadExportIsRefusedWithItsLineAndLeavesNothing() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try ToolTests.fill(folder)
        let good = try Self.export(folder)
        var lines = good.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.removeLast().isEmpty)
        func joined(_ lines: [String]) -> String { lines.joined(separator: "\n") + "\n" }
        let header = lines[0]
        let cases: [(String, String)] = [
            (joined(Array(lines.dropLast())), "line 11: the file ends before its end line"),  // truncated at a line
            (joined(Array(lines.prefix(5))) + String(lines[5].prefix(30)), "line 6: the file ends inside this line (cut short?): not JSON"),
            (joined(Array(lines.prefix(2))), "line 3: the file ends before its schema catalog"),
            (joined([header.replacing(#""version":1"#, with: #""version":7"#)] + lines.dropFirst()),
             "line 1: export format version 7 is not supported (this tool reads version 1)"),
            (joined([#"{"hello":"world"}"#] + lines.dropFirst()), "line 1: not a strata export"),
            (joined(Array(lines.prefix(4)) + ["{not json"] + lines.dropFirst(5)), "line 5: not JSON"),
            (joined(Array(lines.prefix(4)) + [lines[4].replacing(#""name":"Ada""#, with: #""nom":"Ada""#)] + lines.dropFirst(5)),
             "line 5: Writer has no attribute or relationship nom"),
            (joined(Array(lines.prefix(4)) + [lines[4].replacing(#""rating":4.5"#, with: #""rating":"high""#)] + lines.dropFirst(5)),
             "line 5: rating: expected a number, found a string"),
            (joined(Array(lines.prefix(5)) + [lines[5].replacing(#""id":2"#, with: #""id":1"#)] + lines.dropFirst(6)),
             "line 6: a record with id 1 already exists"),
            (joined(Array(lines.prefix(5)) + [lines[5].replacing(#""name":"Grace \"Amazing\"\n""#, with: #""name":"Ada""#)] + lines.dropFirst(6)),
             "line 6: record 2 of Writer repeats record 1's value of unique attribute name"),
            (joined(Array(lines.prefix(2)) + [lines[2].replacing(#""name":"title""#, with: #""name":"heading""#)] + lines.dropFirst(3)),
             "line 3: version 1: the checksum"),
            (joined(lines + ["{}"]), "line 12: text after the end line"),
            (joined(Array(lines.prefix(3)) + [lines[3].replacing(#""nextID":3"#, with: #""nextID":2"#)] + lines.dropFirst(4)),
             "the hierarchy of entity 1 has record 2, but its nextID is only 2"),
            (joined(Array(lines.prefix(7)) + [lines[7].replacing(#""writer":1"#, with: #""writer":9"#)] + lines.dropFirst(8)),
             "does not verify"),
        ]
        for (text, message) in cases {
            let (run, leftBehind) = try Self.importing(text)
            #expect(run.status == .storeError, "\(message): \(run.errors)")
            #expect(run.errors.contains(message), "expected \(message), got \(run.errors)")
            #expect(!leftBehind, "\(message)")
        }
        #expect(try Self.importing(good).run.status == .success)
    }

    @Test func importNeverReplacesAnExistingPath() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try ToolTests.fill(folder + "/source")
        try Self.write(try Self.export(folder + "/source"), to: folder + "/export.jsonl")
        let onto = ToolTests.strata("import", folder + "/export.jsonl", folder + "/source")
        #expect(onto.status == .storeError)
        #expect(onto.errors.contains("\(folder)/source exists; import writes a new store only"))
        #expect(ToolTests.strata("dump", folder + "/source").lines.count == 5)
        let missing = ToolTests.strata("import", folder + "/nothing.jsonl", folder + "/new")
        #expect(missing.status == .storeError)
        #expect(missing.errors.contains("nothing.jsonl"))
        #expect(!FileManager.default.fileExists(atPath: folder + "/new"))
    }

    @Test func exportReadsAStoreTheAppHoldsOpen() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try ToolTests.fill(folder)
        let store = try Store(at: folder, for: [ToolTests.Writer.self, ToolTests.Volume.self])
        defer { try? store.close() }
        let context = Context(store)
        try context.insert(ToolTests.Volume(title: "Late", writer: nil))
        try context.save()
        let lines = try Self.export(folder).split(separator: "\n")
        #expect(lines.last == #"{"end":{"records":6}}"#)
    }

    // MARK: the JSON reader

    @Test func theJSONReaderReadsEscapesAndRefusesWhatIsNotJSON() throws {
        func parse(_ text: String) throws -> JSONValue { try JSONReader.parse(Array(text.utf8)[...]) }
        #expect(try parse(#""\ud83d\ude80 \u00e9\n\/""#) == .string("🚀 é\n/"))
        #expect(try parse(#" {"a" : [1, -2.5e3, true, null], "b": {}} "#)
            == .object([JSONMember(key: "a", value: .array([.number("1"), .number("-2.5e3"), .bool(true), .null]),
                                   text: Array(#"[1, -2.5e3, true, null]"#.utf8)[...]),
                        JSONMember(key: "b", value: .object([]), text: Array("{}".utf8)[...])]))
        for bad in ["", "01", "[1,]", #"{"a":1,}"#, #""\ud83d""#, #""abc"#, "tru", "[1] 2", "\"\u{01}\"", #""\x""#,
                    String(repeating: "[", count: 300) + String(repeating: "]", count: 300)] {
            #expect(throws: JSONReader.SyntaxError.self, "\(bad)") { try parse(bad) }
        }
        #expect(throws: JSONReader.SyntaxError.self) { try JSONReader.parse([0x22, 0xFF, 0x22][...]) }
    }

    // MARK: progress

    @Test func theProgressBarShowsTheFractionDone() {
        func line(_ label: String, _ done: UInt64, _ total: UInt64) -> String {
            ProgressBar.line(label: label, percent: ProgressBar.percent(done: done, total: total), done: done, total: total, unit: .count)
        }
        #expect(line("export", 250, 1000) == "export [#######.......................]  25%  250/1000")
        #expect(line("import", 7, 7) == "import [##############################] 100%  7/7")
        #expect(line("verify", 0, 0) == "verify [##############################] 100%  0/0")
    }

    @Test func verifyReportsProgressPageByPageUpToEveryPage() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try ToolTests.fill(folder)
        let store = try StoreInspection(at: folder)
        defer { store.close() }
        var seen: [Int] = []
        let report = store.verify { seen.append($0) }
        #expect(report.isValid)
        #expect(seen == Array(1...report.pages))
        #expect(report.pages == store.space.pages)
    }
}
