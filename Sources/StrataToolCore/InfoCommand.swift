#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Strata
import StrataSchema

/// `strata info PATH`: what the store is made of, from one snapshot of its latest commit.
enum InfoCommand {
    static let command = StrataTool.Command(
        name: "info", grammar: CommandArguments.Grammar(positionals: ["PATH"], flags: ["json"]),
        summary: "format, files, space, schema versions, entities, indexes, history, migration state",
        help: """
            usage: strata info [--json] PATH

            Describes the store in the folder PATH as of its latest commit: the format version; its
            files and their sizes; the log's bytes, how many of them are live (the rest is dead
            space compaction reclaims) and the space amplification; pages, the last LSN and the
            checkpoint epoch; every schema version of its catalog with its checksum; each entity
            with its record count, next id and indexes; the history journal's tokens, timestamps,
            size and consumers; a migration in progress; deferred compression pending; and the
            records a migration quarantined.

            It reads without taking the store's lock: an app may be writing the store meanwhile.

            options:
              --json   one JSON object instead of text (Docs/Tools.md lists its members)

            exit status: 0, or 3 when the store cannot be read.

            """,
        run: run)

    static func run(_ line: CommandArguments, _ output: ToolOutput) throws -> ToolExitStatus {
        let store = try StoreInspection(at: line.positionals[0])
        defer { store.close() }
        let info = try Info(store)
        output.write(line.flags.contains("json") ? info.json.pretty + "\n" : info.text)
        return .success
    }

    /// Everything `info` reports, read once.
    struct Info {
        var path: String
        var formatVersion: Int
        var files: [(name: String, bytes: UInt64)]
        var space: (logBytes: UInt64, liveBytes: UInt64, segments: Int, pages: Int, lastLSN: UInt64, checkpointEpoch: UInt64)
        var catalog: SchemaCatalog? = nil
        var names: CatalogNames
        var entities: [StoreInspection.EntityTree]
        var journal: StoreInspection.Journal?
        var migration: StoreInspection.Migration?
        var quarantine: (records: UInt64, bytes: UInt64) = (0, 0)
        /// Why the catalog or the quarantine could not be read, when it could not.
        var catalogError: String?
        var quarantineError: String?

        init(_ store: StoreInspection) throws {
            path = store.path
            formatVersion = store.formatVersion
            files = try store.files()
            space = store.space
            // Damage to the catalog or the quarantine is reported in its place: the rest of the
            // store is still worth describing (`verify` says more).
            do { catalog = try store.catalog() } catch { catalogError = "\(error)" }
            names = CatalogNames(catalog)
            entities = store.entityTrees
            journal = store.journal
            migration = store.migration
            do { quarantine = try store.quarantine() } catch { quarantineError = "\(error)" }
        }

        var amplification: Double? {
            space.liveBytes == 0 ? nil : (Double(space.logBytes) / Double(space.liveBytes) * 100).rounded() / 100
        }

        var pendingCompression: [String] {
            entities.filter(\.hasUncompressedLeaves).map { names.entity($0.entityID) }
        }

        var text: String {
            var lines: [String] = []
            lines.append("store: \(path)")
            lines.append("format version: \(formatVersion)")
            lines.append("files: \(files.count) (\(files.reduce(0) { $0 + $1.bytes }) bytes)")
            for file in files { lines.append("  \(file.name): \(file.bytes) bytes") }
            let dead = space.logBytes >= space.liveBytes ? space.logBytes - space.liveBytes : 0
            lines.append("log: \(space.logBytes) bytes in \(plural(space.segments, "segment")), \(space.liveBytes) live, \(dead) dead"
                + (amplification.map { " (space amplification \($0))" } ?? ""))
            lines.append("pages: \(space.pages), last LSN \(space.lastLSN), checkpoint epoch \(space.checkpointEpoch)")
            let versions = catalog?.versions ?? []
            lines.append("schema versions: " + (catalogError.map { "unreadable: \($0)" }
                ?? (versions.isEmpty ? "none (no schema stored yet)" : String(versions.count))))
            for version in versions {
                lines.append("  \(version.id): \(version.schemaVersion) checksum \(version.checksum)" + (version.id == catalog?.latest?.id ? " (newest)" : ""))
            }
            lines.append("entities: \(entities.count)")
            for entity in entities {
                lines.append("  \(names.entity(entity.entityID)) (id \(entity.entityID)): \(plural(Int(entity.records), "record")), next id \(entity.nextID)")
                for index in entity.indexes {
                    lines.append("    \(index.isUnique ? "unique index" : "index") on \(names.attribute(index.attributeID, of: entity.entityID)): "
                        + plural(Int(index.entries), "entry", "entries"))
                }
            }
            if let journal {
                if journal.newestToken >= journal.oldestToken {
                    var history = "history: tokens \(journal.oldestToken) to \(journal.newestToken), \(journal.bytes) bytes"
                    if let oldest = journal.oldestTimestamp, let newest = journal.newestTimestamp {
                        history += ", \(RecordJSON.iso8601(oldest) ?? "?") to \(RecordJSON.iso8601(newest) ?? "?")"
                    }
                    lines.append(history)
                } else {
                    lines.append("history: empty (the next token is \(journal.newestToken + 1))")
                }
                for (name, token) in journal.consumers.sorted(by: { $0.key < $1.key }) { lines.append("  consumer \(name): token \(token)") }
            } else {
                lines.append("history: no journal")
            }
            if let migration {
                let from = catalog?.version(id: migration.fromCatalogVersion).map { " (\($0.schemaVersion))" } ?? ""
                lines.append("migration: in progress: step \(migration.stage), phase \(migration.phase), from catalog version "
                    + "\(migration.fromCatalogVersion)\(from)"
                    + (migration.closureFlushed ? "; a closure had flushed changes: the app undoes the migration and runs it again" : ""))
            } else {
                lines.append("migration: none")
            }
            let pending = pendingCompression
            lines.append("deferred compression: " + (pending.isEmpty ? "none pending" : "pending for \(pending.joined(separator: ", "))"))
            lines.append("quarantine: " + (quarantineError.map { "unreadable: \($0)" }
                ?? plural(Int(quarantine.records), "record") + (quarantine.records > 0 ? " (\(quarantine.bytes) bytes)" : "")))
            return lines.joined(separator: "\n") + "\n"
        }

        var json: JSONText {
            let dead = space.logBytes >= space.liveBytes ? space.logBytes - space.liveBytes : 0
            let journalJSON: JSONText = journal.map { journal in
                .object([
                    ("oldestToken", .int(journal.oldestToken)), ("newestToken", .int(journal.newestToken)), ("bytes", .int(journal.bytes)),
                    ("oldestTimestamp", journal.oldestTimestamp.flatMap(RecordJSON.iso8601).map(JSONText.string) ?? .null),
                    ("newestTimestamp", journal.newestTimestamp.flatMap(RecordJSON.iso8601).map(JSONText.string) ?? .null),
                    ("consumers", .object(journal.consumers.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                ])
            } ?? .null
            let migrationJSON: JSONText = migration.map { migration in
                .object([("step", .int(migration.stage)), ("phase", .string(migration.phase)),
                         ("fromCatalogVersion", .int(migration.fromCatalogVersion)), ("closureFlushed", .bool(migration.closureFlushed))])
            } ?? .null
            return .object([
                ("path", .string(path)),
                ("formatVersion", .int(formatVersion)),
                ("files", .array(files.map { .object([("name", .string($0.name)), ("bytes", .int($0.bytes))]) })),
                ("logBytes", .int(space.logBytes)), ("liveBytes", .int(space.liveBytes)), ("deadBytes", .int(dead)),
                ("spaceAmplification", amplification.map(JSONText.double) ?? .null),
                ("segments", .int(space.segments)), ("pages", .int(space.pages)), ("lastLSN", .int(space.lastLSN)),
                ("checkpointEpoch", .int(space.checkpointEpoch)),
                ("schemaError", catalogError.map(JSONText.string) ?? .null),
                ("schemaVersions", .array((catalog?.versions ?? []).map {
                    .object([("id", .int($0.id)), ("version", .string("\($0.schemaVersion)")), ("checksum", .string("\($0.checksum)"))])
                })),
                ("entities", .array(entities.map { entity in
                    .object([
                        ("id", .int(entity.entityID)), ("name", .string(names.entity(entity.entityID))), ("records", .int(entity.records)),
                        ("nextID", .int(entity.nextID)), ("uncompressedLeaves", .bool(entity.hasUncompressedLeaves)),
                        ("indexes", .array(entity.indexes.map { index in
                            .object([("attribute", .string(names.attribute(index.attributeID, of: entity.entityID))),
                                     ("unique", .bool(index.isUnique)), ("entries", .int(index.entries))])
                        })),
                    ])
                })),
                ("history", journalJSON),
                ("migration", migrationJSON),
                ("deferredCompression", .array(pendingCompression.map(JSONText.string))),
                ("quarantine", .object([("records", .int(quarantine.records)), ("bytes", .int(quarantine.bytes)),
                                        ("error", quarantineError.map(JSONText.string) ?? .null)])),
            ])
        }
    }
}

/// `1 record`, `2 records`.
func plural(_ count: Int, _ singular: String, _ pluralForm: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : pluralForm ?? singular + "s")"
}

/// Names of entity and property ids through a catalog: from the newest version that has the
/// id (an entity or attribute later removed keeps its last name), `#id` when none has it.
struct CatalogNames {
    let catalog: SchemaCatalog?

    init(_ catalog: SchemaCatalog?) { self.catalog = catalog }

    /// The newest catalog version that has entity `entityID`.
    func version(of entityID: UInt32) -> CatalogVersion? {
        catalog?.versions.last { $0.entity(id: entityID) != nil }
    }

    func entity(_ entityID: UInt32) -> String {
        version(of: entityID)?.entity(id: entityID)?.name ?? "#\(entityID)"
    }

    func attribute(_ attributeID: UInt32, of entityID: UInt32) -> String {
        for version in (catalog?.versions ?? []).reversed() {
            if let attribute = version.resolvedAttributes(ofEntity: entityID).first(where: { $0.id == attributeID }) { return attribute.name }
        }
        return "#\(attributeID)"
    }
}
