#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Strata
import StrataSchema

/// `strata export PATH`: the whole store — schema catalog and records — as versioned JSON
/// lines that `strata import` turns back into a store (Docs/Tools.md, "The export format").
enum ExportCommand {
    static let command = StrataTool.Command(
        name: "export", grammar: CommandArguments.Grammar(positionals: ["PATH"]),
        summary: "the schema catalog and every record as JSON lines, for strata import",
        help: """
            usage: strata export PATH > FILE.jsonl

            Writes the store in the folder PATH as of its latest commit to standard output in the
            export format (Docs/Tools.md, "The export format"), JSON lines: a header, every
            version of the schema catalog, then each entity's records (as dump writes them, but
            exact: dates as their stored seconds since 2001, every value as it reads back), and an
            end line. strata import turns it into a new store with the same catalog, record ids,
            relationships and values. The history journal and quarantined records are not
            exported.

            It takes no lock: an app may be writing the store meanwhile. A store with a migration
            in progress is refused: let the app finish it first.

            exit status: 0; 3 when the store cannot be read, a record does not decode, an entity
            is in no schema version, or a migration is in progress.

            """,
        run: run)

    static func run(_ line: CommandArguments, _ output: ToolOutput) throws -> ToolExitStatus {
        let store = try StoreInspection(at: line.positionals[0])
        defer { store.close() }
        try export(store, to: output)
        return .success
    }

    /// Writes `store`'s export to `output`, record by record (memory stays bounded).
    /// - Throws: `ExportError` for a migration in progress or an entity no schema version has;
    ///   `StrataError.corruption` for a record that does not decode.
    static func export(_ store: StoreInspection, to output: ToolOutput) throws {
        if let migration = store.migration { throw ExportError.migrationInProgress(fromCatalogVersion: migration.fromCatalogVersion) }
        let catalog = try store.catalog() ?? SchemaCatalog()
        let names = CatalogNames(catalog)
        let trees = store.entityTrees
        if let uncataloged = trees.first(where: { names.version(of: $0.entityID) == nil }) {
            throw ExportError.uncatalogedEntity(uncataloged.entityID)
        }
        let total = trees.reduce(0) { $0 + $1.records }
        output.line(JSONText.object([
            ("format", .string(ExportFormat.formatName)), ("version", .int(ExportFormat.version)),
            ("catalogVersions", .int(catalog.versions.count)), ("entities", .int(trees.count)), ("records", .int(total)),
        ]).compact)
        output.line(JSONText.object([("catalog", .object([
            ("nextVersionID", .int(catalog.nextVersionID)), ("nextEntityID", .int(catalog.nextEntityID)),
            ("nextPropertyID", .int(catalog.nextPropertyID)),
        ]))]).compact)
        for version in catalog.versions {
            output.line(JSONText.object([("schemaVersion", ExportFormat.versionJSON(version))]).compact)
        }
        let progress = ProgressBar(total: Int(clamping: total), label: "export", output: output)
        var written = 0
        for tree in trees {
            output.line(JSONText.object([("entityTree", .object([
                ("entity", .string(names.entity(tree.entityID))), ("entityID", .int(tree.entityID)),
                ("records", .int(tree.records)), ("nextID", .int(tree.nextID)),
            ]))]).compact)
            let layout = DumpCommand.EntityLayout(entityID: tree.entityID, names: names)
            try store.scan(entity: tree.entityID) { id, values in
                output.line(layout.exportLine(id: id, values: values))
                written += 1
                progress.update(done: written)
                return true
            }
        }
        progress.finish()
        output.line(JSONText.object([("end", .object([("records", .int(written))]))]).compact)
    }
}

extension DumpCommand.EntityLayout {
    /// A record's export line: as `line(id:values:)`, but with values as `ExportFormat.value`
    /// writes them (exact), and codable values that are not one-line JSON as base64 under
    /// `codableBytes` (null in `values`).
    func exportLine(id: UInt64, values: [UInt32: Value]) -> String {
        var members: [(String, JSONText)] = []
        var bytes: [(String, JSONText)] = []
        members.reserveCapacity(attributes.count + relationships.count)
        for attribute in attributes {
            let value = Self.value(of: attribute, in: values)
            if let json = ExportFormat.value(value) {
                members.append((attribute.key, json))
            } else if case .codable(let stored) = value {
                members.append((attribute.key, .null))
                bytes.append((attribute.key, .string(Data(stored).base64EncodedString())))
            }
        }
        for relationship in relationships {
            members.append((relationship.key, RecordJSON.relationship(values[relationship.id], toMany: relationship.toMany)))
        }
        var line = prefix + String(id) + ",\"values\":" + JSONText.object(members).compact
        if !bytes.isEmpty { line += ",\"codableBytes\":" + JSONText.object(bytes).compact }
        return line + "}"
    }
}

/// Why `strata export` refuses a store it could open.
enum ExportError: Error, CustomStringConvertible {
    /// A migration from this catalog version is in progress: records are between versions.
    case migrationInProgress(fromCatalogVersion: UInt32)
    /// Records of an entity no catalog version describes (a store written without a schema).
    case uncatalogedEntity(UInt32)

    var description: String {
        switch self {
        case .migrationInProgress(let version):
            "a migration from catalog version \(version) is in progress; open the store with the app that migrates it to finish it first"
        case .uncatalogedEntity(let id):
            "entity \(id) has records but no schema version describes it (a store written without a schema); export needs one"
        }
    }
}
