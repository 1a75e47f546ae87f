import StrataSchema
import StrataRecords

/// One frozen version of an app's schema, in SwiftData's vocabulary: its version number and
/// its record types. Declare each version in a namespace of its own, so the types of every
/// version an installed app may have written stay in the app unchanged:
///
/// ```swift
/// enum SchemaV1: VersionedSchema {
///     static let versionIdentifier = Schema.Version(1, 0, 0)
///     static var models: [any PersistentRecord.Type] { [Person.self] }
///     struct Person: PersistentRecord { var fullName: String }
/// }
/// ```
///
/// A new version is needed only when the stored shape changes (an attribute, entity,
/// relationship or storage option); the same shape under a new number is a validation error
/// of the plan (see ``SchemaMigrationPlan``). Docs/Migrations.md is the guide.
public protocol VersionedSchema {
    /// The version's number, such as `Schema.Version(1, 0, 0)`.
    static var versionIdentifier: Schema.Version { get }
    /// The record types of this version, one entity each (SwiftData's `models`).
    static var models: [any PersistentRecord.Type] { get }
}

extension VersionedSchema {
    /// The version's schema: the entities derived from ``models``, numbered ``versionIdentifier``.
    /// - Throws: `StrataError.invalidSchema` when an entity cannot be derived or the schema is
    ///   not valid.
    public static func schema() throws -> Schema {
        let schema: Schema
        do { schema = try Schema(version: versionIdentifier, types: models) } catch {
            throw StrataError.invalidSchema(reason: "\(Self.self): \(error)")
        }
        do { try schema.validate() } catch { throw StrataError.invalidSchema(reason: "\(Self.self): \(error)") }
        return schema
    }

    /// The name the plan's errors and reports use: the type's name and its version.
    static var displayName: String { "\(Self.self) (\(versionIdentifier))" }
}

/// How the store gets from one schema version to the next (SwiftData's `MigrationStage`).
///
/// - ``lightweight(fromVersion:toVersion:)``: the change needs no record rewritten (an
///   attribute added with a default or as optional, removed, renamed through `originalName`;
///   an entity added or removed; …). Applied at open by writing the new catalog version only,
///   whatever the store's size. Such a change needs no declared stage at all: between two
///   consecutive versions of a plan with no stage, a lightweight change is applied
///   automatically (``SchemaMigrationPlan/lint()`` points out declared stages it would
///   handle).
/// - ``custom(fromVersion:toVersion:willMigrate:didMigrate:)``: closures that run before the
///   change, with a context on the old version, and after it, with a context on the new one.
///   Changes they make are saved with the stage (a closure never loses unsaved changes).
public struct MigrationStage {
    /// What the stage does.
    enum Kind {
        case lightweight
        case custom(willMigrate: ((Context) throws -> Void)?, didMigrate: ((Context) throws -> Void)?,
                    transforms: [RecordTransform], batchSize: Int, rejected: RejectedRecordPolicy)
    }

    /// The version migrated from.
    public let fromVersion: any VersionedSchema.Type
    /// The version migrated to.
    public let toVersion: any VersionedSchema.Type
    let kind: Kind

    /// A stage whose change needs no record rewritten (metadata only).
    public static func lightweight(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type) -> MigrationStage {
        MigrationStage(fromVersion: fromVersion, toVersion: toVersion, kind: .lightweight)
    }

    /// A stage with code: `willMigrate` runs with a context on `fromVersion`'s schema before
    /// the change, `didMigrate` with a context on `toVersion`'s after it. Either may be nil;
    /// either may throw, which fails the migration and leaves the store as it was.
    public static func custom(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type,
                              willMigrate: ((Context) throws -> Void)?, didMigrate: ((Context) throws -> Void)?) -> MigrationStage {
        custom(fromVersion: fromVersion, toVersion: toVersion, transforms: [], willMigrate: willMigrate, didMigrate: didMigrate)
    }

    /// A stage that rewrites records: each ``RecordTransform`` streams every record of its
    /// entity from the old version to the new one, in batches of `batchSize` records, each
    /// committed durably with the stage's progress; `willMigrate` runs before them (context on
    /// the old version), `didMigrate` after the switch (context on the new one). An entity
    /// whose change needs records rewritten must be a transform's target. A record a
    /// transform throws on fails the stage, or with `rejectedRecords: .quarantine` is kept in
    /// the store's quarantine while the stage goes on.
    public static func custom(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type,
                              transforms: [RecordTransform], batchSize: Int = 10_000,
                              rejectedRecords: RejectedRecordPolicy = .failStage,
                              willMigrate: ((Context) throws -> Void)? = nil, didMigrate: ((Context) throws -> Void)? = nil) -> MigrationStage {
        MigrationStage(fromVersion: fromVersion, toVersion: toVersion,
                       kind: .custom(willMigrate: willMigrate, didMigrate: didMigrate, transforms: transforms, batchSize: max(1, batchSize),
                                     rejected: rejectedRecords))
    }

    /// `"lightweight"` or `"custom"`.
    public var kindName: String {
        switch kind {
        case .lightweight: "lightweight"
        case .custom: "custom"
        }
    }

    /// Whether the stage rewrites records (a custom stage with transforms).
    var rewritesRecords: Bool {
        if case .custom(_, _, let transforms, _, _) = kind { return !transforms.isEmpty }
        return false
    }

    /// Whether the stage is custom at all (code or transforms): such a stage needs the
    /// migration's rollback point.
    var rewritesOrRunsCode: Bool {
        if case .custom = kind { return true }
        return false
    }

    /// Whether the stage runs code of its own.
    var hasCode: Bool {
        switch kind {
        case .lightweight: false
        case .custom(let willMigrate, let didMigrate, let transforms, _, _): willMigrate != nil || didMigrate != nil || !transforms.isEmpty
        }
    }
}

/// The ordered versions of an app's schema and the stages between them (SwiftData's
/// `SchemaMigrationPlan`).
///
/// ```swift
/// enum PeoplePlan: SchemaMigrationPlan {
///     static var schemas: [any VersionedSchema.Type] { [SchemaV1.self, SchemaV2.self] }
///     static var stages: [MigrationStage] { [.lightweight(fromVersion: SchemaV1.self, toVersion: SchemaV2.self)] }
/// }
/// ```
///
/// Rules, checked by ``validate()`` before a store is touched (call it from a unit test to
/// find a plan's mistakes before shipping): `schemas` are in ascending version order, with
/// distinct version identifiers and distinct shapes (checksums); each stage goes from one
/// version to the next one in `schemas`; at most one stage per step; a step with no stage must
/// be lightweight.
public protocol SchemaMigrationPlan {
    /// Every version an installed app may have written, oldest first; the last is current.
    static var schemas: [any VersionedSchema.Type] { get }
    /// The stages between consecutive versions of ``schemas``, in order.
    static var stages: [MigrationStage] { get }
}

extension SchemaMigrationPlan {
    /// Checks the plan, touching no store.
    /// - Throws: the first ``MigrationPlanError`` found (see there for each rule).
    public static func validate() throws(MigrationPlanError) {
        _ = try MigrationPlanCheck(plan: Self.self)
    }

    /// Warnings about a plan that is valid but probably not what its author meant: a declared
    /// stage the automatic lightweight path would handle; an attribute removed while one of
    /// the same type is added to the same entity without `originalName` (a probable rename
    /// that would drop the stored values); and every attribute, relationship or entity whose
    /// stored values a step drops, with the attribute they probably moved to.
    /// - Throws: ``MigrationPlanError`` when the plan is not valid.
    public static func lint() throws(MigrationPlanError) -> [MigrationLintWarning] {
        try MigrationPlanCheck(plan: Self.self).warnings
    }
}

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
                + "A schema whose stored shape does not change needs no new version: remove \(second), or make it differ"
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
    var renamedAttribute: String? {
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
