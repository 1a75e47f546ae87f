import StrataSchema

/// A validated ``SchemaMigrationPlan``: its schemas, and for each step from one version to the
/// next, the declared stage (if any) and the differences the step makes, as a store's catalog
/// would see them (the versions registered one after the other, so renames through
/// `originalName` are renames). Built by ``SchemaMigrationPlan/validate()`` and by opening a
/// store with a plan, before any byte is written.
struct MigrationPlanCheck {
    /// One version of the plan.
    struct Version {
        let type: any VersionedSchema.Type
        let schema: Schema
        var name: String { type.displayName }
    }

    /// The step from `versions[index]` to `versions[index + 1]`.
    struct Step {
        /// The declared stage and its position in the plan's `stages`, or nil (automatic).
        let stage: (index: Int, stage: MigrationStage)?
        let differences: [SchemaDifference]

        /// Differences that need records rewritten (a new unique constraint is not one: the
        /// index build checks it, as opening without a plan does).
        var blocking: [SchemaDifference] {
            differences.filter { difference in
                if case .uniqueAdded = difference.change { return false }
                return !difference.isLightweight
            }
        }
    }

    let versions: [Version]
    let steps: [Step]
    private(set) var warnings: [MigrationLintWarning] = []

    init(plan: any SchemaMigrationPlan.Type) throws(MigrationPlanError) {
        try self.init(schemas: plan.schemas, stages: plan.stages)
    }

    init(schemas: [any VersionedSchema.Type], stages: [MigrationStage]) throws(MigrationPlanError) {
        guard !schemas.isEmpty else { throw .noSchemas }
        var versions: [Version] = []
        for type in schemas {
            do { versions.append(Version(type: type, schema: try type.schema())) } catch {
                let reason = (error as? StrataError).map { "\($0)" } ?? "\(error)"
                throw .invalidSchema(schema: type.displayName, reason: reason)
            }
        }
        self.versions = versions

        // Version identifiers: distinct, ascending.
        for (index, version) in versions.enumerated() {
            let sharing = versions.filter { $0.schema.version == version.schema.version }
            if sharing.count > 1 {
                throw .duplicateVersionIdentifier(version.schema.version, schemas: sharing.map { "\($0.type)" })
            }
            if index > 0, !(versions[index - 1].schema.version < version.schema.version) {
                throw .versionsOutOfOrder(earlier: versions[index - 1].name, later: version.name)
            }
        }
        // Shapes: distinct.
        for (index, version) in versions.enumerated() {
            if let earlier = versions[..<index].first(where: { $0.schema.checksum == version.schema.checksum }) {
                throw .duplicateChecksum(first: earlier.name, second: version.name, checksum: "\(version.schema.checksum)")
            }
        }

        // Stages: each from one version to the next, one per step.
        let positions = Dictionary(versions.enumerated().map { (ObjectIdentifier($1.type), $0) }, uniquingKeysWith: { first, _ in first })
        var declared: [Int: (index: Int, stage: MigrationStage)] = [:]
        for (index, stage) in stages.enumerated() {
            guard let from = positions[ObjectIdentifier(stage.fromVersion)] else {
                throw .stageVersionNotInPlan(stage: index, schema: stage.fromVersion.displayName)
            }
            guard let to = positions[ObjectIdentifier(stage.toVersion)] else {
                throw .stageVersionNotInPlan(stage: index, schema: stage.toVersion.displayName)
            }
            guard to == from + 1 else {
                let expected = from + 1 < versions.count ? versions[from + 1].name : "none: \(versions[from].name) is the last version"
                throw .brokenChain(stage: index, from: versions[from].name, to: versions[to].name, expectedTo: expected)
            }
            if let other = declared[from] { throw .duplicateStage(stages: [other.index, index], from: versions[from].name) }
            declared[from] = (index, stage)
        }

        // Each step's differences, as a store that went through the versions in order sees them.
        var catalog = SchemaCatalog()
        var previous: CatalogVersion?
        var steps: [Step] = []
        var warnings: [MigrationLintWarning] = []
        for (index, version) in versions.enumerated() {
            let registered: (catalog: SchemaCatalog, versionID: UInt32)
            do { registered = try catalog.register(version.schema) } catch {
                throw .invalidSchema(schema: version.name, reason: "\(error)")
            }
            catalog = registered.catalog
            guard let current = catalog.version(id: registered.versionID) else {
                throw .invalidSchema(schema: version.name, reason: "its catalog version is missing after registration")
            }
            defer { previous = current }
            guard let previous else { continue }
            let step = Step(stage: declared[index - 1], differences: current.differences(from: previous))
            let from = versions[index - 1].name
            let blocking = step.blocking.map(\.description)
            switch step.stage?.stage.kind {
            case nil:
                if !blocking.isEmpty { throw .unreachableVersion(schema: version.name, from: from, differences: blocking) }
            case .lightweight?:
                if !blocking.isEmpty {
                    throw .stageNotLightweight(stage: step.stage?.index ?? 0, from: from, to: version.name, differences: blocking)
                }
            case .custom?:
                break
            }
            if let (stageIndex, stage) = step.stage, !stage.hasCode, blocking.isEmpty {
                warnings.append(.redundantStage(stage: stageIndex, from: from, to: version.name))
            }
            warnings += Self.probableRenames(from: previous, to: current, schema: version.name)
            steps.append(step)
        }
        self.steps = steps
        self.warnings = warnings
    }

    /// Attributes of one entity removed while one of the same type is added (ids, so a rename
    /// through `originalName` keeps its id and is not reported).
    private static func probableRenames(from old: CatalogVersion, to new: CatalogVersion, schema: String) -> [MigrationLintWarning] {
        var warnings: [MigrationLintWarning] = []
        for entity in new.entities {
            guard let before = old.entity(id: entity.id) else { continue }
            let newIDs = Set(entity.attributes.map(\.id)), oldIDs = Set(before.attributes.map(\.id))
            let removed = before.attributes.filter { !newIDs.contains($0.id) }
            let added = entity.attributes.filter { !oldIDs.contains($0.id) }
            for gone in removed {
                if let candidate = added.first(where: { $0.type == gone.type }) {
                    warnings.append(.probableRename(schema: schema, entity: entity.name, removed: gone.name, added: candidate.name))
                }
            }
        }
        return warnings
    }

    /// The position in ``versions`` of the schema with this checksum, or nil.
    func position(of checksum: SchemaChecksum) -> Int? {
        versions.firstIndex { $0.schema.checksum == checksum }
    }
}
