#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport
@testable import StrataToolCore
#if canImport(Glibc)
import Glibc
#endif

/// The `strata` tool's commands, run in-process on stores written through the public API:
/// what each prints, and its exit status.
@Suite struct ToolTests {
    struct Writer: PersistentRecord, Equatable {
        var name: String
        var born: Date
        var portrait: Data?
        var rating: Double
        var key: UUID
        var tags: [String]
        var books: [RecordID<Volume>] = []
        static let relationshipRules = ["books": RelationshipRule(inverse: "writer", deleteRule: .cascade)]
        static var attributeOptions: [String: Attribute.Options] { ["name": [.unique], "rating": [.indexed]] }
    }

    struct Volume: PersistentRecord, Equatable {
        var title: String
        var writer: RecordID<Writer>?
        static let relationshipRules = ["writer": RelationshipRule(inverse: "books")]
    }

    /// What a command printed and returned.
    struct Run {
        var status: ToolExitStatus
        var output: String
        var errors: String
        var lines: [String] { output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    }

    static func strata(_ arguments: String...) -> Run { strata(arguments) }

    static func strata(_ arguments: [String]) -> Run {
        final class Captured: @unchecked Sendable {
            var output: [UInt8] = []
            var errors = ""
        }
        let captured = Captured()
        let output = ToolOutput(output: { captured.output += $0 }, error: { captured.errors += $0 })
        let status = StrataTool.run(arguments, output: output)
        return Run(status: status, output: String(decoding: captured.output, as: UTF8.self), errors: captured.errors)
    }

    static let born = Date(timeIntervalSince1970: 1_700_000_000.25)  // 2023-11-14T22:13:20.250000Z
    static let key = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!

    /// Two writers, three volumes (two by Ada, one by nobody), in two saves.
    static func fill(_ folder: String) throws {
        let store = try Store(at: folder, for: [Writer.self, Volume.self])
        let context = Context(store, author: "fill")
        let ada = try context.insert(Writer(name: "Ada", born: born, portrait: Data([1, 2, 3]), rating: 4.5, key: key, tags: ["math", "poetry"]))
        try context.insert(Writer(name: "Grace \"Amazing\"\n", born: Date(timeIntervalSince1970: -0.5), portrait: nil, rating: -.infinity,
                                  key: key, tags: []))
        try context.insert(Volume(title: "Notes", writer: ada))
        try context.insert(Volume(title: "Sketches", writer: ada))
        try context.save()
        try context.insert(Volume(title: "Anonymous", writer: nil))
        try context.save()
        try store.close()
    }

    // MARK: dump

    @Test func dumpWritesEveryRecordWithItsValuesAsJSONLines() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let run = Self.strata("dump", folder)
        #expect(run.status == .success, "\(run.errors)")
        #expect(run.errors.isEmpty)
        #expect(run.lines == [
            #"{"entity":"Writer","id":1,"values":{"name":"Ada","born":"2023-11-14T22:13:20.250000Z","portrait":"AQID","rating":4.5,"#
                + #""key":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","tags":["math","poetry"],"books":[1,2]}}"#,
            #"{"entity":"Writer","id":2,"values":{"name":"Grace \"Amazing\"\n","born":"1969-12-31T23:59:59.500000Z","portrait":null,"#
                + #""rating":"-Infinity","key":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","tags":[],"books":[]}}"#,
            #"{"entity":"Volume","id":1,"values":{"title":"Notes","writer":1}}"#,
            #"{"entity":"Volume","id":2,"values":{"title":"Sketches","writer":1}}"#,
            #"{"entity":"Volume","id":3,"values":{"title":"Anonymous","writer":null}}"#,
        ])
    }

    @Test func dumpFiltersByEntityAndLimitsEachEntity() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let volumes = Self.strata("dump", "--entity", "Volume", folder)
        #expect(volumes.status == .success)
        #expect(volumes.lines.map { $0.prefix(31) } == [#"{"entity":"Volume","id":1,"valu"#, #"{"entity":"Volume","id":2,"valu"#,
                                                          #"{"entity":"Volume","id":3,"valu"#])
        let limited = Self.strata("dump", folder, "--limit=1")
        #expect(limited.status == .success)
        #expect(limited.lines.map { $0.prefix(27) } == [#"{"entity":"Writer","id":1,""#, #"{"entity":"Volume","id":1,""#])
        #expect(Self.strata("dump", "--limit", "0", folder).output.isEmpty)
        let unknown = Self.strata("dump", "--entity", "Nobody", folder)
        #expect(unknown.status == .usage)
        #expect(unknown.errors.contains("the store has no entity Nobody; its entities: Volume, Writer"))
        #expect(unknown.output.isEmpty)
    }

    @Test func dumpReadsAStoreTheAppHoldsOpen() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let store = try Store(at: folder, for: [Writer.self, Volume.self])
        let context = Context(store)
        try context.insert(Volume(title: "Late", writer: nil))
        try context.save()
        let run = Self.strata("dump", "--entity", "Volume", folder)
        #expect(run.status == .success)
        #expect(run.lines.last == #"{"entity":"Volume","id":4,"values":{"title":"Late","writer":null}}"#)
        try store.close()
    }

    @Test func readingCommandsSeeWholeCommitsWhileTheAppWrites() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [Writer.self, Volume.self])
        try await store.write { transaction in
            for index in 0..<10 { try transaction.insert(Volume(title: "first \(index)", writer: nil)) }
        }
        // The app commits ten volumes at a time while the tool reads: every dump holds whole
        // commits, and every verify finds the store sound.
        let writer = Task.detached {
            for round in 0..<40 {
                try await store.write { transaction in
                    for index in 0..<10 { try transaction.insert(Volume(title: "round \(round) \(index)", writer: nil)) }
                }
            }
        }
        var counts: [Int] = []
        for _ in 0..<8 {
            let dump = Self.strata("dump", "--entity", "Volume", folder)
            #expect(dump.status == .success, "\(dump.errors)")
            counts.append(dump.lines.count)
            let verify = Self.strata("verify", folder)
            #expect(verify.status == .success, "\(verify.output)\(verify.errors)")
        }
        try await writer.value
        #expect(counts.allSatisfy { $0 % 10 == 0 && $0 >= 10 && $0 <= 410 }, "\(counts)")
        #expect(counts == counts.sorted())
        #expect(Self.strata("dump", folder).lines.count == 410)
        try store.close()
    }

    // MARK: verify

    @Test func verifyOfASoundStoreExitsZero() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let run = Self.strata("verify", folder)
        #expect(run.status == .success, "\(run.output)")
        let library = try Self.libraryVerification(folder)
        #expect(run.lines == [
            "store: \(folder)",
            "checked: \(plural(library.pages, "page")), 5 records, 4 index entries, \(plural(library.historyParts, "history part"))",
            "sound: no problem found",
        ])
        let json = try JSONDecoder().decode(VerifyJSON.self, from: Data(Self.strata("verify", "--json", folder).output.utf8))
        #expect(json.sound && json.problems.isEmpty && json.records == 5 && json.indexEntries == 4)
    }

    struct VerifyJSON: Decodable {
        struct Problem: Decodable, Equatable {
            var file: String
            var offset: UInt64?
            var what: String
        }

        var sound: Bool
        var records: Int
        var indexEntries: Int
        var problems: [Problem]
    }

    static func libraryVerification(_ folder: String) throws -> VerificationReport {
        let store = try Store(at: folder, for: [Writer.self, Volume.self], configuration: { var c = Store.Configuration(); c.isReadOnly = true; return c }())
        defer { try? store.close() }
        return try store.verify()
    }

    @Test func verifyOfADamagedStoreExitsOneAndNamesEachProblem() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        // Enough records that most of the segment is live record pages.
        let store = try Store(at: folder, for: [Writer.self, Volume.self])
        try store.write { transaction in
            for index in 0..<2_000 { try transaction.insert(Volume(title: "volume \(index) " + String(repeating: "x", count: index % 90), writer: nil)) }
        }
        try store.close()
        let segment = try #require(Self.names(in: folder).filter { $0.hasSuffix(".seg") }.sorted().first)
        flipByte(inFileAt: folder + "/" + segment, at: Int(Double(Self.size(of: folder + "/" + segment)) * 0.4))
        let library = try Self.libraryVerification(folder)
        try #require(!library.problems.isEmpty, "the damaged byte should be in a live page")
        let run = Self.strata("verify", folder)
        #expect(run.status == .problemsFound)
        #expect(Array(run.lines.dropFirst(2)) == ["\(plural(library.problems.count, "problem")):"] + library.problems.map { "  \($0)" })
        #expect(run.output.contains(segment))
        let json = try JSONDecoder().decode(VerifyJSON.self, from: Data(Self.strata("verify", "--json", folder).output.utf8))
        #expect(!json.sound)
        #expect(json.problems == library.problems.map { VerifyJSON.Problem(file: $0.file, offset: $0.offset, what: $0.what) })
    }

    // MARK: compact, checkpoint

    @Test func maintenanceOfAStoreTheAppHoldsIsLockedAndChangesNothing() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let store = try Store(at: folder, for: [Writer.self, Volume.self])
        let before = Self.files(in: folder)
        for command in ["compact", "checkpoint"] {
            let run = Self.strata(command, folder)
            #expect(run.status == .locked)
            #expect(run.status.rawValue == 4)
            #expect(run.errors.hasPrefix("strata \(command): locked: the store at \(folder) is open for writing by another process"))
            #expect(run.output.isEmpty)
        }
        #expect(Self.files(in: folder) == before)
        // Reading is never in the app's way.
        #expect(Self.strata("info", folder).status == .success)
        try store.close()
        let compacted = Self.strata("compact", folder)
        #expect(compacted.status == .success, "\(compacted.errors)")
        #expect(compacted.output.hasPrefix("compacted \(folder): log "))
        let checkpointed = Self.strata("checkpoint", folder)
        #expect(checkpointed.status == .success)
        #expect(checkpointed.output == "checkpointed \(folder)\n")
        #expect(Self.strata("verify", folder).status == .success)
        #expect(Self.strata("dump", folder).lines.count == 5)
    }

    @Test func compactReclaimsDeadSpace() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var configuration = Store.Configuration()
        configuration.storage.segmentSize = 64 << 10
        configuration.storage.automaticCompaction = false
        let store = try Store(at: folder, for: [Writer.self, Volume.self], configuration: configuration)
        for round in 0..<6 {
            let ids = try store.write { transaction in
                try (0..<300).map { try transaction.insert(Volume(title: "r\(round) \($0) " + String(repeating: "y", count: 100), writer: nil)) }
            }
            if round < 5 { try store.write { transaction in for id in ids { try transaction.delete(id) } } }
        }
        try store.close()
        let info = try Self.info(folder)
        #expect(info.deadBytes > info.liveBytes)
        let run = Self.strata("compact", folder)
        #expect(run.status == .success, "\(run.errors)")
        let after = try Self.info(folder)
        #expect(after.logBytes < info.logBytes)
        // "after" is the log as compaction left it, before closing checkpointed.
        let prefix = "compacted \(folder): log \(info.logBytes) bytes before, "
        #expect(run.output.hasPrefix(prefix) && run.output.hasSuffix(" bytes after\n"))
        let reported = UInt64(run.output.dropFirst(prefix.count).prefix { $0.isNumber })
        #expect(reported.map { $0 < info.logBytes } == true, "\(run.output)")
        #expect(Self.strata("dump", "--entity", "Volume", folder).lines.count == 300)
    }

    /// A copy of a golden store of Tests/StrataTests/Fixtures in a new temporary folder.
    static func fixture(_ name: String) throws -> String {
        let source = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(2).joined(separator: "/")
            + "/StrataTests/Fixtures/" + name
        let folder = try temporaryDirectory()
        copyFiles(from: source, to: folder)
        try #require(!names(in: folder).isEmpty, "fixture \(name) at \(source)")
        return folder
    }

    @Test func maintenanceRefusesAStoreWithAMigrationInProgress() throws {
        // The golden store of a migration killed after a closure flushed changes.
        let folder = try Self.fixture("flushed-v6")
        defer { removeDirectory(folder) }
        let before = Self.files(in: folder)
        for command in ["compact", "checkpoint"] {
            let run = Self.strata(command, folder)
            #expect(run.status == .storeError)
            #expect(run.errors == "strata \(command): a migration from schema version 1.0.0 is in progress; "
                + "open the store with the app that migrates it to finish it first\n")
        }
        #expect(Self.files(in: folder).filter { $0.key != "LOCK" && $0.key != "reserve" } == before)
        let info = Self.strata("info", folder)
        #expect(info.lines.contains("migration: in progress: step 0, phase switched, from catalog version 1 (1.0.0); "
            + "a closure had flushed changes: the app undoes the migration and runs it again"))
        #expect(info.lines.contains("deferred compression: pending for Person"))
    }

    @Test func verifyOfAStoreThatDoesNotOpenReportsWhyAndExitsOne() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        // Both superblock slots zeroed: no checkpoint to start from.
        guard let file = fopen(folder + "/superblock", "r+b") else { Issue.record("no superblock"); return }
        let zeros = [UInt8](repeating: 0, count: Int(Self.size(of: folder + "/superblock")))
        fwrite(zeros, 1, zeros.count, file)
        fclose(file)
        let run = Self.strata("verify", folder)
        #expect(run.status == .problemsFound)
        #expect(run.lines.count == 4)
        #expect(run.lines.prefix(3) == ["store: \(folder)", "checked: nothing, the store does not open", "1 problem:"])
        #expect(run.lines.last?.hasPrefix("  \(folder)/superblock at ") == true, "\(run.lines)")
        #expect(Self.strata("info", folder).status == .storeError)
    }

    // MARK: info

    struct InfoJSON: Decodable {
        struct File: Decodable { var name: String; var bytes: UInt64 }
        struct Entity: Decodable, Equatable {
            struct Index: Decodable, Equatable { var attribute: String; var unique: Bool; var entries: UInt64 }
            var id: UInt32
            var name: String
            var records: UInt64
            var nextID: UInt64
            var indexes: [Index]
        }
        struct Version: Decodable { var id: UInt32; var version: String; var checksum: String }
        struct History: Decodable { var oldestToken: UInt64; var newestToken: UInt64; var consumers: [String: UInt64] }
        var formatVersion: Int
        var files: [File]
        var logBytes: UInt64
        var liveBytes: UInt64
        var deadBytes: UInt64
        var schemaVersions: [Version]
        var entities: [Entity]
        var history: History?
        var migration: String?
        var deferredCompression: [String]
    }

    static func info(_ folder: String) throws -> InfoJSON {
        let run = strata("info", "--json", folder)
        try #require(run.status == .success, "\(run.errors)")
        return try JSONDecoder().decode(InfoJSON.self, from: Data(run.output.utf8))
    }

    @Test func infoDescribesFilesSchemaEntitiesIndexesAndHistory() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let stored = try #require(try Store.storedSchema(at: folder))
        let info = try Self.info(folder)
        #expect(info.schemaVersions.map(\.version) == ["1.0.0"])
        #expect(info.schemaVersions.map(\.checksum) == ["\(stored.checksum)"])
        #expect(info.entities == [
            InfoJSON.Entity(id: 1, name: "Writer", records: 2, nextID: 3,
                            indexes: [.init(attribute: "name", unique: true, entries: 2), .init(attribute: "rating", unique: false, entries: 2)]),
            InfoJSON.Entity(id: 2, name: "Volume", records: 3, nextID: 4, indexes: []),
        ])
        // Every file of the folder, with its size.
        #expect(info.files.map(\.name) == Self.names(in: folder).sorted())
        for file in info.files { #expect(file.bytes == Self.size(of: folder + "/" + file.name), "\(file.name)") }
        #expect(info.deadBytes == info.logBytes - info.liveBytes)
        #expect(info.history?.oldestToken == 1)
        #expect(info.history?.newestToken == 2)  // two saves
        #expect(info.migration == nil && info.deferredCompression.isEmpty)

        let text = Self.strata("info", folder)
        #expect(text.status == .success)
        let lines = text.lines
        #expect(lines.first == "store: \(folder)")
        #expect(lines.contains("format version: \(info.formatVersion)"))
        #expect(lines.contains("  1: 1.0.0 checksum \(stored.checksum) (newest)"))
        #expect(lines.contains("  Writer (id 1): 2 records, next id 3"))
        #expect(lines.contains("    unique index on name: 2 entries"))
        #expect(lines.contains("    index on rating: 2 entries"))
        #expect(lines.contains("  Volume (id 2): 3 records, next id 4"))
        #expect(lines.contains { $0.hasPrefix("history: tokens 1 to 2, ") })
        #expect(lines.suffix(3) == ["migration: none", "deferred compression: none pending", "quarantine: 0 records"])
    }

    @Test func infoReportsADamagedCatalogInItsPlaceAndTheRestStill() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        // Each byte of the segment damaged in turn: info reads what it can or fails as a store
        // error, never otherwise; where the damage is in the catalog's page, the catalog's line
        // says so and the entities are still listed (by id: their names are in the catalog).
        let segment = folder + "/" + (try #require(Self.names(in: folder).first { $0.hasSuffix(".seg") }))
        var catalogDamaged = 0
        for position in stride(from: 0, to: Int(Self.size(of: segment)), by: 3) {
            flipByte(inFileAt: segment, at: position)
            defer { flipByte(inFileAt: segment, at: position) }
            let run = Self.strata("info", folder)
            #expect(run.status == .success || run.status == .storeError, "byte \(position): \(run.errors)")
            if run.status == .success, let line = run.lines.first(where: { $0.hasPrefix("schema versions: ") }), line.contains("unreadable: ") {
                catalogDamaged += 1
                #expect(run.lines.contains("  #1 (id 1): 2 records, next id 3"))
                #expect(run.lines.contains("  #2 (id 2): 3 records, next id 4"))
            }
        }
        #expect(catalogDamaged > 0)
    }

    // MARK: schema

    struct PersonV1: PersistentRecord {
        static var entityName: String { "Person" }
        var name: String
        var age: Int
    }

    struct PersonV2: PersistentRecord {
        static var entityName: String { "Person" }
        var name: String
        var age: Int
        var nickname: String?
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed]] }
    }

    @Test func schemaListsEveryVersionAndDiffsTwo() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Store(at: folder, for: [PersonV1.self], version: Schema.Version(1, 0, 0)).close()
        try Store(at: folder, for: [PersonV2.self], version: Schema.Version(1, 1, 0)).close()
        let v1 = try Schema(version: Schema.Version(1, 0, 0), types: [PersonV1.self]).checksum
        let v2 = try Schema(version: Schema.Version(1, 1, 0), types: [PersonV2.self]).checksum
        let run = Self.strata("schema", folder)
        #expect(run.status == .success, "\(run.errors)")
        #expect(run.lines == [
            "store: \(folder)",
            "catalog: 2 versions",
            "version 1: 1.0.0, checksum \(v1)",
            "  entity Person (id 1)",
            "    attribute name (id 1): string",
            "    attribute age (id 2): int",
            "version 2: 1.1.0, checksum \(v2)",
            "  entity Person (id 1)",
            "    attribute name (id 1): string",
            "    attribute age (id 2): int, indexed",
            "    attribute nickname (id 3): string, optional",
        ])
        let diff = Self.strata("schema", "--diff", "1", "1.1.0", folder)
        #expect(diff.status == .success)
        #expect(diff.lines == [
            "from version 1 (1.0.0) to version 2 (1.1.0): 2 differences",
            "  Person.age became indexed [lightweight]",
            "  Person.nickname added (optional) [lightweight]",
        ])
        let missing = Self.strata("schema", "--diff", "1", "7", folder)
        #expect(missing.status == .usage)
        #expect(missing.errors.contains("the catalog has no version 7; it has 1 (1.0.0), 2 (1.1.0)"))
    }

    @Test func schemaShowsRelationshipsDefaultsAndOptionsAsJSON() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let run = Self.strata("schema", folder)
        #expect(run.lines.contains("    attribute name (id 1): string, unique"))
        #expect(run.lines.contains("    attribute portrait (id 3): data, optional"))
        #expect(run.lines.contains("    attribute tags (id 6): codable(Array<String>)"))
        #expect(run.lines.contains("    relationship books (id 7): to-many Volume, inverse writer, delete rule cascade, optional"))
        #expect(run.lines.contains("    relationship writer (id 9): to-one Writer, inverse books, delete rule nullify, optional"))
        struct SchemaJSON: Decodable {
            struct Version: Decodable { var id: Int; var entities: [Entity] }
            struct Entity: Decodable { var name: String; var attributes: [Attribute]; var relationships: [Relationship] }
            struct Attribute: Decodable { var name: String; var type: String; var optional: Bool; var unique: Bool; var indexed: Bool }
            struct Relationship: Decodable { var name: String; var cardinality: String; var destination: String; var inverse: String? }
            var versions: [Version]
        }
        let json = try JSONDecoder().decode(SchemaJSON.self, from: Data(Self.strata("schema", "--json", folder).output.utf8))
        let writer = try #require(json.versions.first?.entities.first)
        #expect(writer.name == "Writer")
        #expect(writer.attributes.map(\.name) == ["name", "born", "portrait", "rating", "key", "tags"])
        #expect(writer.attributes.map(\.unique) == [true, false, false, false, false, false])
        #expect(writer.attributes.map(\.indexed) == [false, false, false, true, false, false])
        #expect(writer.relationships.map(\.destination) == ["Volume"])
        #expect(json.versions.first?.entities.last?.relationships.first?.cardinality == "to-one")
    }

    // MARK: usage and errors

    @Test func usageErrorsExitTwoAndSayWhatIsWrong() {
        let none = Self.strata()
        #expect(none.status == .usage && none.errors.contains("usage: strata COMMAND"))
        let unknown = Self.strata("frobnicate", "/tmp")
        #expect(unknown.status == .usage && unknown.errors.hasPrefix("strata: unknown command frobnicate"))
        let missing = Self.strata("dump")
        #expect(missing.status == .usage)
        #expect(missing.errors.hasPrefix("strata dump: missing PATH\nusage: strata dump [--entity NAME] [--limit N] PATH\nSee 'strata dump --help'."))
        let extra = Self.strata("info", "a", "b")
        #expect(extra.status == .usage && extra.errors.hasPrefix("strata info: unexpected argument b"))
        let option = Self.strata("info", "--verbose", "a")
        #expect(option.status == .usage && option.errors.hasPrefix("strata info: unknown option --verbose"))
        let count = Self.strata("dump", "--limit", "many", "a")
        #expect(count.status == .usage && count.errors.hasPrefix("strata dump: --limit must be a whole number, not many"))
        let flagValue = Self.strata("verify", "--json=yes", "a")
        #expect(flagValue.status == .usage && flagValue.errors.hasPrefix("strata verify: --json takes no value"))
    }

    @Test func helpIsPrintedForTheToolAndEachCommand() {
        let overview = Self.strata("--help")
        #expect(overview.status == .success)
        for command in ["info", "verify", "schema", "dump", "history", "export", "import", "compact", "checkpoint"] {
            #expect(overview.output.contains("\n  \(command) "), "\(command)")
            let help = Self.strata(command, "--help")
            #expect(help.status == .success)
            #expect(help.output.hasPrefix("usage: strata \(command) "))
            #expect(help.output.contains("exit status"))
            #expect(Self.strata("help", command).output == help.output)
        }
        #expect(overview.output.contains("4  locked"))
    }

    @Test func aMissingStoreIsAStoreErrorAndNothingIsCreated() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let path = folder + "/absent"
        for command in ["info", "verify", "schema", "dump", "history", "export", "compact", "checkpoint"] {
            let run = Self.strata(command, path)
            #expect(run.status == .storeError, "\(command)")
            #expect(run.errors == "strata \(command): there is no store at \(path)\n", "\(command)")
        }
        #expect(Self.names(in: folder).isEmpty)
    }

    // MARK: value formats

    @Test func datesAreISO8601InUTCWithMicroseconds() {
        #expect(RecordJSON.iso8601(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000000Z")
        #expect(RecordJSON.iso8601(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59.000000Z")
        #expect(RecordJSON.iso8601(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00.000000Z")
        #expect(RecordJSON.iso8601(Date(timeIntervalSince1970: 4_107_542_399.5)) == "2100-02-28T23:59:59.500000Z")
        #expect(RecordJSON.iso8601(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00.000000Z")
        #expect(RecordJSON.iso8601(Date(timeIntervalSince1970: 253_402_300_799)) == "9999-12-31T23:59:59.000000Z")
        #expect(RecordJSON.iso8601(Date(timeIntervalSince1970: 253_402_300_800)) == nil)
        #expect(RecordJSON.iso8601(Date(timeIntervalSinceReferenceDate: .nan)) == nil)
        #expect(RecordJSON.value(.date(Date(timeIntervalSinceReferenceDate: .infinity))).compact == #""date(inf s since 2001)""#)
    }

    @Test func valuesJSONHasNoLineBreakAndEscapesControlCharacters() {
        #expect(RecordJSON.value(.string("a\u{01}\t\"\\é")).compact == #""a\u0001\t\"\\é""#)
        #expect(RecordJSON.value(.double(.nan)).compact == #""NaN""#)
        #expect(RecordJSON.value(.double(0.1)).compact == "0.1")
        #expect(RecordJSON.value(.int(.min)).compact == "-9223372036854775808")
        #expect(RecordJSON.value(.codable(Array("{\n\"a\": [1,\r\n2]}".utf8))).compact == "{ \"a\": [1, 2]}")
        #expect(RecordJSON.value(.codable([0x7B, 0xFF])).compact == #"{"invalidJSON":"e/8="}"#)
        #expect(RecordJSON.value(.codable(Array("\"text\"".utf8))).compact == #""text""#)
        #expect(RecordJSON.relationship(.references([4, 5]), toMany: true).compact == "[4,5]")
        #expect(RecordJSON.relationship(nil, toMany: false).compact == "null")
    }

    // MARK: file helpers

    static func names(in folder: String) -> [String] { directoryEntries(folder) }

    static func size(of path: String) -> UInt64 { fileSize(path) }

    /// Every file's name and size.
    static func files(in folder: String) -> [String: UInt64] {
        Dictionary(uniqueKeysWithValues: names(in: folder).map { ($0, size(of: folder + "/" + $0)) })
    }
}
