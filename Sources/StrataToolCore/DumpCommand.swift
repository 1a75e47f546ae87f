import Strata
import StrataSchema

/// `strata dump PATH`: records as JSON lines (Docs/Tools.md, "The dump format").
enum DumpCommand {
    static let command = StrataTool.Command(
        name: "dump", grammar: CommandArguments.Grammar(positionals: ["PATH"], options: ["entity": 1, "limit": 1]),
        summary: "records as JSON lines, read through the store's own catalog",
        help: """
            usage: strata dump [--entity NAME] [--limit N] PATH

            Writes the records of the store in the folder PATH as of its latest commit, one JSON
            object a line, entity by entity (by entity id), each entity's records by id:

              {"entity":"Person","id":1,"values":{"name":"Ada","age":36,"notes":[3,4]}}

            Values are read as the app reads them, through the newest schema version that has the
            entity: every attribute and relationship of it (inherited ones first), a value the
            record lacks as the attribute's default (null when none); values of properties that
            version no longer has are left out. Relationships are record ids (to-one: an id or
            null; to-many: an array); codable attributes their stored JSON; data base64; dates
            ISO 8601 in UTC with microseconds; UUIDs their text; NaN and the infinities the strings
            "NaN", "Infinity", "-Infinity". Docs/Tools.md has the details.

            options:
              --entity NAME   only the records of entity NAME and the entities below it
              --limit N       at most N records of each entity

            It takes no lock: an app may be writing the store meanwhile.

            exit status: 0; 2 when --entity names no entity of the catalog; 3 when the store cannot
            be read or a record does not decode (the records before it were written).

            """,
        run: run)

    static func run(_ line: CommandArguments, _ output: ToolOutput) throws -> ToolExitStatus {
        let limit = try line.count("limit")
        let store = try StoreInspection(at: line.positionals[0])
        defer { store.close() }
        let catalog = try store.catalog()
        let names = CatalogNames(catalog)
        var entityIDs = store.entityTrees.map(\.entityID)
        if let name = line.value("entity") {
            guard let version = catalog?.versions.last(where: { $0.entity(named: name) != nil }),
                  let entity = version.entity(named: name) else {
                let known = Set(entityIDs.map(names.entity)).sorted().joined(separator: ", ")
                throw CommandArguments.UsageError(message: "the store has no entity \(name); its entities: \(known.isEmpty ? "none" : known)")
            }
            let family = Set(version.family(ofEntity: entity.id))
            entityIDs = entityIDs.filter(family.contains)
        }
        let selected = Set(entityIDs)
        let total = store.entityTrees.filter { selected.contains($0.entityID) }.reduce(0) { $0 + Int(clamping: min($1.records, UInt64(limit ?? .max))) }
        let progress = ProgressBar(total: total, label: "dump", output: output)
        var done = 0
        for entityID in entityIDs {
            let layout = EntityLayout(entityID: entityID, names: names)
            var written = 0
            guard limit != 0 else { continue }
            try store.scan(entity: entityID) { id, values in
                output.line(layout.line(id: id, values: values))
                written += 1
                done += 1
                progress.update(done: done)
                return limit.map { written < $0 } ?? true
            }
        }
        progress.finish()
        return .success
    }

    /// How one entity's records are written: its name and properties in the newest catalog
    /// version that has it.
    struct EntityLayout {
        /// `{"entity":"Person","id":` with the name quoted once.
        let prefix: String
        /// Each attribute's key, id, and the value a record reads where it has none: its
        /// default when absent; for a null field, nil when the attribute is optional, else
        /// the default (Docs/FileFormat.md, "Null fields").
        let attributes: [(key: String, id: UInt32, defaultValue: Value, nullValue: Value)]
        let relationships: [(key: String, id: UInt32, toMany: Bool)]
        /// No catalog version has the entity (a store written without a schema): every stored
        /// value is written under `#` and its property id.
        let isUncataloged: Bool

        init(entityID: UInt32, names: CatalogNames) {
            var prefix = "{\"entity\":"
            JSONText.quote(names.entity(entityID), into: &prefix)
            self.prefix = prefix + ",\"id\":"
            let version = names.version(of: entityID)
            attributes = (version?.resolvedAttributes(ofEntity: entityID) ?? []).map {
                ($0.name, $0.id, $0.defaultValue, $0.isOptional ? .null : $0.defaultValue)
            }
            relationships = (version?.resolvedRelationships(ofEntity: entityID) ?? []).map { ($0.name, $0.id, $0.cardinality == .toMany) }
            isUncataloged = version == nil
        }

        /// The value a read gives `attribute` of a record whose stored values are `values`.
        static func value(of attribute: (key: String, id: UInt32, defaultValue: Value, nullValue: Value), in values: [UInt32: Value]) -> Value {
            guard let stored = values[attribute.id] else { return attribute.defaultValue }
            return stored.isNull ? attribute.nullValue : stored
        }

        func line(id: UInt64, values: [UInt32: Value]) -> String {
            var members: [(String, JSONText)] = []
            if isUncataloged {
                members = values.sorted { $0.key < $1.key }.map { ("#\($0.key)", RecordJSON.value($0.value)) }
            }
            members.reserveCapacity(attributes.count + relationships.count)
            for attribute in attributes { members.append((attribute.key, RecordJSON.value(Self.value(of: attribute, in: values)))) }
            for relationship in relationships {
                members.append((relationship.key, RecordJSON.relationship(values[relationship.id], toMany: relationship.toMany)))
            }
            return prefix + String(id) + ",\"values\":" + JSONText.object(members).compact + "}"
        }
    }
}
