import Strata
import StrataSchema

/// `strata schema PATH`: every version of the store's schema catalog.
enum SchemaCommand {
    static let command = StrataTool.Command(
        name: "schema", grammar: CommandArguments.Grammar(positionals: ["PATH"], flags: ["json"], options: ["diff": 2]),
        summary: "every schema version of the catalog: entities, attributes, relationships, checksums",
        help: """
            usage: strata schema [--json] [--diff V1 V2] PATH

            Lists every version of the schema catalog the store in the folder PATH carries, oldest
            first: its catalog id, the version number the app gave it and its checksum; each
            entity with its id, parent and whether it is abstract; each attribute with its id,
            type, whether it is optional, its default (as JSON, as dump writes values), and
            whether it is unique or indexed; each relationship with its id, cardinality,
            destination, inverse, delete rule and whether it is optional; for each, the
            originalName the schema declared ("originally NAME"). Ids are stable across versions:
            a renamed entity or property keeps its id (catalogs written before format 3 keep no
            original names; there the same id under a new name is the rename).

            options:
              --diff V1 V2   the differences from version V1 to version V2 instead, each marked
                             lightweight or not; a version is a catalog id (1, 2, …) or a
                             version number (1.2.0: the newest catalog version with it)
              --json         JSON instead of text (Docs/Tools.md shows its shape)

            exit status: 0; 2 when a --diff version is not in the catalog; 3 when the store cannot
            be read.

            """,
        run: run)

    static func run(_ line: CommandArguments, _ output: ToolOutput) throws -> ToolExitStatus {
        let path = line.positionals[0]
        let store = try StoreInspection(at: path)
        defer { store.close() }
        let catalog = try store.catalog() ?? SchemaCatalog()
        let json = line.flags.contains("json")
        if let diff = line.options["diff"] {
            let from = try version(diff[0], in: catalog), to = try version(diff[1], in: catalog)
            let differences = to.differences(from: from)
            if json {
                output.line(JSONText.object([
                    ("from", .object([("id", .int(from.id)), ("version", .string("\(from.schemaVersion)"))])),
                    ("to", .object([("id", .int(to.id)), ("version", .string("\(to.schemaVersion)"))])),
                    ("differences", .array(differences.map { difference in
                        .object([("entity", .string(difference.entity)), ("change", .string(difference.description)),
                                 ("lightweight", .bool(difference.isLightweight))])
                    })),
                ]).pretty)
            } else {
                output.line("from version \(from.id) (\(from.schemaVersion)) to version \(to.id) (\(to.schemaVersion)): "
                    + (differences.isEmpty ? "no difference" : plural(differences.count, "difference")))
                for difference in differences {
                    output.line("  \(difference) [\(difference.isLightweight ? "lightweight" : "needs a migration")]")
                }
            }
            return .success
        }
        if json {
            output.line(JSONText.object([("path", .string(path)), ("versions", .array(catalog.versions.map(versionJSON)))]).pretty)
        } else {
            output.line("store: \(path)")
            output.line("catalog: \(catalog.versions.isEmpty ? "empty (no schema stored yet)" : plural(catalog.versions.count, "version"))")
            for version in catalog.versions { output.write(versionText(version)) }
        }
        return .success
    }

    /// The catalog version `name` denotes: a catalog id, or the newest with that version number.
    /// - Throws: `CommandArguments.UsageError` when there is none.
    static func version(_ name: String, in catalog: SchemaCatalog) throws(CommandArguments.UsageError) -> CatalogVersion {
        if let id = UInt32(name), let version = catalog.version(id: id) { return version }
        if let number = Schema.Version(name), let version = catalog.versions.last(where: { $0.schemaVersion == number }) { return version }
        let known = catalog.versions.map { "\($0.id) (\($0.schemaVersion))" }.joined(separator: ", ")
        throw CommandArguments.UsageError(message: "the catalog has no version \(name); it has \(known.isEmpty ? "none" : known)")
    }

    static func versionText(_ version: CatalogVersion) -> String {
        var lines = ["version \(version.id): \(version.schemaVersion), checksum \(version.checksum)"]
        for entity in version.entities {
            var heading = "  entity \(entity.name) (id \(entity.id))"
            var traits: [String] = []
            if let parent = entity.parentID { traits.append("parent \(version.entity(id: parent)?.name ?? "#\(parent)")") }
            if entity.isAbstract { traits.append("abstract") }
            if let originalName = entity.originalName { traits.append("originally \(originalName)") }
            if !traits.isEmpty { heading += ": " + traits.joined(separator: ", ") }
            lines.append(heading)
            for attribute in entity.attributes {
                lines.append("    attribute \(attribute.name) (id \(attribute.id)): " + attributeTraits(attribute).joined(separator: ", "))
            }
            for relationship in entity.relationships {
                lines.append("    relationship \(relationship.name) (id \(relationship.id)): "
                    + relationshipTraits(relationship, in: version).joined(separator: ", "))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func attributeTraits(_ attribute: CatalogAttribute) -> [String] {
        var traits = ["\(attribute.type)"]
        if attribute.isOptional { traits.append("optional") }
        if !attribute.defaultValue.isNull { traits.append("default \(RecordJSON.value(attribute.defaultValue).compact)") }
        if attribute.isUnique { traits.append("unique") }
        if attribute.isIndexed { traits.append("indexed") }
        if let originalName = attribute.originalName { traits.append("originally \(originalName)") }
        return traits
    }

    static func relationshipTraits(_ relationship: CatalogRelationship, in version: CatalogVersion) -> [String] {
        var traits = ["\(relationship.cardinality == .toMany ? "to-many" : "to-one") \(destination(relationship, in: version))"]
        if let inverse = inverse(relationship, in: version) { traits.append("inverse \(inverse)") }
        traits.append("delete rule \(relationship.deleteRule)")
        traits.append(relationship.isOptional ? "optional" : "required")
        if let originalName = relationship.originalName { traits.append("originally \(originalName)") }
        return traits
    }

    static func destination(_ relationship: CatalogRelationship, in version: CatalogVersion) -> String {
        version.entity(id: relationship.destinationID)?.name ?? "#\(relationship.destinationID)"
    }

    static func inverse(_ relationship: CatalogRelationship, in version: CatalogVersion) -> String? {
        relationship.inverseID.map { id in version.entities.flatMap(\.relationships).first { $0.id == id }?.name ?? "#\(id)" }
    }

    static func versionJSON(_ version: CatalogVersion) -> JSONText {
        .object([
            ("id", .int(version.id)), ("version", .string("\(version.schemaVersion)")), ("checksum", .string("\(version.checksum)")),
            ("entities", .array(version.entities.map { entity in
                .object([
                    ("id", .int(entity.id)), ("name", .string(entity.name)),
                    ("parent", entity.parentID.map { .string(version.entity(id: $0)?.name ?? "#\($0)") } ?? .null),
                    ("abstract", .bool(entity.isAbstract)), ("originalName", entity.originalName.map(JSONText.string) ?? .null),
                    ("attributes", .array(entity.attributes.map { attribute in
                        .object([("id", .int(attribute.id)), ("name", .string(attribute.name)), ("type", .string("\(attribute.type)")),
                                 ("optional", .bool(attribute.isOptional)), ("default", RecordJSON.value(attribute.defaultValue)),
                                 ("unique", .bool(attribute.isUnique)), ("indexed", .bool(attribute.isIndexed)),
                                 ("originalName", attribute.originalName.map(JSONText.string) ?? .null)])
                    })),
                    ("relationships", .array(entity.relationships.map { relationship in
                        .object([("id", .int(relationship.id)), ("name", .string(relationship.name)),
                                 ("cardinality", .string(relationship.cardinality == .toMany ? "to-many" : "to-one")),
                                 ("destination", .string(destination(relationship, in: version))),
                                 ("inverse", inverse(relationship, in: version).map(JSONText.string) ?? .null),
                                 ("deleteRule", .string("\(relationship.deleteRule)")), ("optional", .bool(relationship.isOptional)),
                                 ("originalName", relationship.originalName.map(JSONText.string) ?? .null)])
                    })),
                ])
            })),
        ])
    }
}
