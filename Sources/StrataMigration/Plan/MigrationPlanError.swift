import StrataSchema
import StrataRecords

/// A mistake in a ``SchemaMigrationPlan``, found by ``SchemaMigrationPlan/validate()`` (and
/// by opening a store with the plan) before any byte is written.
public enum MigrationPlanError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The plan lists no schema.
    case noSchemas
    /// A version's schema cannot be derived or is not valid.
    case invalidSchema(schema: String, reason: String)
    /// Two schemas of the plan have one version identifier.
    case duplicateVersionIdentifier(Schema.Version, schemas: [String])
    /// The schemas are not in ascending version order.
    case versionsOutOfOrder(earlier: String, later: String)
    /// Two schemas of the plan have the same shape (schema checksum).
    case duplicateChecksum(first: String, second: String, checksum: String)
    /// A stage names a schema the plan's `schemas` do not list.
    case stageVersionNotInPlan(stage: Int, schema: String)
    /// A stage does not go from one version of the plan to the next one.
    case brokenChain(stage: Int, from: String, to: String, expectedTo: String)
    /// Two stages start from the same version.
    case duplicateStage(stages: [Int], from: String)
    /// No stage leads from a version to the next one, and the change is not lightweight.
    case unreachableVersion(schema: String, from: String, differences: [String])
    /// A declared lightweight stage's change needs records rewritten.
    case stageNotLightweight(stage: Int, from: String, to: String, differences: [String])
    /// A custom stage changes an entity in a way that needs its records rewritten, and none of
    /// its transforms writes that entity: opening would fail (category `schemaChange`). Each
    /// difference comes with its fix.
    case missingTransform(stage: Int, from: String, to: String, differences: [String])
    /// A custom stage's transform cannot run: its source or target is not an entity of the
    /// stage's versions, it writes into an existing entity other than its own, or two
    /// transforms write one entity.
    case transformNotPossible(stage: Int, source: String, target: String, reason: String)
    /// The store was opened with a current schema that is not the plan's last.
    case currentSchemaNotLast(current: String, last: String)

    /// A sentence for a person: what is wrong and how to fix it.
    public var description: String {
        switch self {
        case .noSchemas: "the migration plan lists no schema"
        case .invalidSchema(let schema, let reason): "schema \(schema) is not valid: \(reason)"
        case .duplicateVersionIdentifier(let version, let schemas):
            "version identifier \(version) is used by \(schemas.joined(separator: " and ")); each version needs its own"
        case .versionsOutOfOrder(let earlier, let later):
            "the plan lists \(earlier) before \(later), but its version is not lower; list schemas oldest first"
        case .duplicateChecksum(let first, let second, let checksum):
            "duplicate version checksums across stages: \(first) and \(second) have the same shape (checksum \(checksum.prefix(16))…). "
                + "A schema whose stored shape does not change needs no new version: remove \(second), or make it differ. "
                + "(Every integer width is stored as one kind, Float as Double, a Codable type as its JSON: a property narrowed "
                + "— Int → Int32, Double → Float — or a Codable type whose fields or cases changed keeps the shape, and a stored "
                + "value the new type cannot hold fails when read. To convert the values, move them to a new attribute of the "
                + "new type with a custom stage's RecordTransform: Docs/Migrations.md, \"Reading records written under older versions\".)"
        case .stageVersionNotInPlan(let stage, let schema):
            "stage \(stage) names \(schema), which is not in the plan's schemas (unknown model version)"
        case .brokenChain(let stage, let from, let to, let expectedTo):
            "stage \(stage) goes from \(from) to \(to); stages must go from each version to the next one in the plan (\(expectedTo))"
        case .duplicateStage(let stages, let from):
            "stages \(stages.map(String.init).joined(separator: " and ")) both start from \(from); keep one stage per step"
        case .unreachableVersion(let schema, let from, let differences):
            "\(schema) is unreachable: no stage leads to it from \(from), and the change needs records rewritten: "
                + differences.joined(separator: "; ")
        case .stageNotLightweight(let stage, let from, let to, let differences):
            "stage \(stage) from \(from) to \(to) is declared lightweight, but its change needs records rewritten: "
                + differences.joined(separator: "; ")
        case .missingTransform(let stage, let from, let to, let differences):
            "stage \(stage) from \(from) to \(to) would fail at open: no transform of the stage writes what this change needs "
                + "rewritten (willMigrate and didMigrate run before and after the change, not instead of it): "
                + differences.joined(separator: "; ")
        case .transformNotPossible(let stage, let source, let target, let reason):
            "stage \(stage)'s transform from \(source) to \(target) cannot run: \(reason)"
        case .currentSchemaNotLast(let current, let last):
            "the current schema \(current) is not the migration plan's last schema (\(last)); list it last"
        }
    }
}

/// A warning of ``SchemaMigrationPlan/lint()``: valid, but probably not meant.
public enum MigrationLintWarning: Sendable, Equatable, CustomStringConvertible {
    /// A declared stage with no code whose change the automatic lightweight path would apply.
    case redundantStage(stage: Int, from: String, to: String)
    /// An attribute removed while one of the same type is added to the same entity without
    /// `originalName`: if it is a rename, the stored values would be dropped.
    case probableRename(schema: String, entity: String, removed: String, added: String)
    /// A step drops stored values: `entity`'s attribute or relationship `property` (nil: the
    /// whole entity, removed) is gone from the new version and no transform of the step reads
    /// the entity. `probableMove` names an attribute of the same name and type new in another
    /// entity (a sub-entity first), where the values probably should have gone.
    /// `Store.dryRun` counts the values.
    case dropsStoredValues(schema: String, entity: String, property: String?, probableMove: String?)

    /// "Entity.attribute" of a probable rename's removed attribute.
    package var renamedAttribute: String? {
        if case .probableRename(_, let entity, let removed, _) = self { return "\(entity).\(removed)" }
        return nil
    }

    /// A sentence for a person.
    public var description: String {
        switch self {
        case .redundantStage(let stage, let from, let to):
            "stage \(stage) from \(from) to \(to) runs no code and its change is lightweight: the automatic path applies it; the stage can go"
        case .probableRename(let schema, let entity, let removed, let added):
            "\(schema): \(entity).\(removed) is removed and \(entity).\(added) of the same type is added; if this is a rename, declare "
                + "originalName \"\(removed)\" on \(added) (originalAttributeNames), or the stored values of \(removed) are dropped"
        case .dropsStoredValues(let schema, let entity, let property, let probableMove):
            if let property {
                "\(schema) drops the stored values of \(entity).\(property): no transform of the step reads \(entity)"
                    + (probableMove.map {
                        "; \($0) has the same name and type — to move the values there, make the step a custom stage with one "
                            + "RecordTransform per target entity (Docs/Migrations.md, \"Moving records into a sub-entity\")"
                    } ?? ". Store.dryRun counts them; if they matter, read them in a transform or willMigrate")
            } else {
                "\(schema) removes entity \(entity) and drops its stored records: no transform of the step reads them. "
                    + "Store.dryRun counts them; if they matter, move them in a transform"
            }
        }
    }
}
