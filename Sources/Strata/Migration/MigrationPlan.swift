import StrataMigration
import StrataSchema
import StrataRecords

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
    public var kindName: String { planned.kindName }

    /// The stage as the migration layer checks and runs it (its closures stay here and run
    /// through `StoreMigrationHost`).
    var planned: PlannedStage {
        switch kind {
        case .lightweight:
            PlannedStage(fromVersion: fromVersion, toVersion: toVersion, kind: .lightweight, hasClosures: false)
        case .custom(let willMigrate, let didMigrate, let transforms, let batchSize, let rejected):
            PlannedStage(fromVersion: fromVersion, toVersion: toVersion,
                         kind: .custom(transforms: transforms, batchSize: batchSize, rejected: rejected),
                         hasClosures: willMigrate != nil || didMigrate != nil)
        }
    }

    /// The closure of `phase`, if the stage has one.
    func closure(_ phase: StageClosurePhase) -> ((Context) throws -> Void)? {
        guard case .custom(let willMigrate, let didMigrate, _, _, _) = kind else { return nil }
        switch phase {
        case .willMigrate: return willMigrate
        case .didMigrate: return didMigrate
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

extension MigrationPlanCheck {
    /// Checks `plan`.
    /// - Throws: the first ``MigrationPlanError`` found.
    init(plan: any SchemaMigrationPlan.Type) throws(MigrationPlanError) {
        try self.init(schemas: plan.schemas, stages: plan.stages.map(\.planned))
    }
}
