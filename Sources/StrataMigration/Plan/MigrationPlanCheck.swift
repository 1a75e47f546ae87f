import StrataSchema
import StrataRecords

/// A validated ``SchemaMigrationPlan``: its schemas, and for each step from one version to the
/// next, the declared stage (if any) and the differences the step makes, as a store's catalog
/// would see them (the versions registered one after the other, so renames through
/// `originalName` are renames). Built by ``SchemaMigrationPlan/validate()`` and by opening a
/// store with a plan, before any byte is written.
package struct MigrationPlanCheck {
    /// One version of the plan.
    package struct Version {
        package let type: any VersionedSchema.Type
        package let schema: Schema
        package var name: String { type.displayName }
    }

    /// The step from `versions[index]` to `versions[index + 1]`.
    package struct Step {
        /// The declared stage and its position in the plan's `stages`, or nil (automatic).
        package let stage: (index: Int, stage: PlannedStage)?
        package let differences: [SchemaDifference]
        /// The stored values the step drops with no transform reading them: (entity, property)
        /// by their names in the step's old version; a nil property is the whole entity.
        package var dropped: [(entity: String, property: String?)] = []

        /// Differences that need records rewritten (a new unique constraint is not one: the
        /// index build checks it, as opening without a plan does).
        var blocking: [SchemaDifference] { differences.filter(\.isBlocking) }
    }

    package let versions: [Version]
    package let steps: [Step]
    package private(set) var warnings: [MigrationLintWarning] = []

    /// Checks the plan of `schemas` (oldest first) and `stages` (in the plan's order).
    /// - Throws: the first ``MigrationPlanError`` found.
    package init(schemas: [any VersionedSchema.Type], stages: [PlannedStage]) throws(MigrationPlanError) {
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
        var declared: [Int: (index: Int, stage: PlannedStage)] = [:]
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
            var step = Step(stage: declared[index - 1],
                            differences: current.differences(from: previous, nullFieldIDs: catalog.mayHoldNullFields(through: previous.id)))
            let from = versions[index - 1].name
            let blocking = SchemaDifference.explained(step.blocking)
            var rewritten: Set<UInt32> = []  // old entity ids a transform of the step reads
            switch step.stage?.stage.kind {
            case nil:
                if !step.blocking.isEmpty {
                    throw .unreachableVersion(schema: version.name, from: from, differences: blocking + Self.renameHints(step))
                }
            case .lightweight?:
                if !step.blocking.isEmpty {
                    throw .stageNotLightweight(stage: step.stage?.index ?? 0, from: from, to: version.name,
                                               differences: blocking + Self.renameHints(step))
                }
            case .custom(let transforms, _, _)?:
                let stageIndex = step.stage?.index ?? 0
                let targets = try Self.checkTransforms(transforms, stage: stageIndex, from: previous, fromName: from,
                                                       to: current, toName: version.name)
                rewritten = Set(transforms.compactMap { previous.entity(named: $0.sourceEntity)?.id })
                // What the stage's switch cannot apply: a blocking change of an entity no transform
                // writes. A change of a property reaches every entity below the one declaring it:
                // each keeps its records in a tree of its own, and a transform rewrites its own
                // entity's records only, so each sub-entity needs a transform too.
                let unhandled = step.blocking.flatMap { Self.reach(of: $0, in: current) }.filter { !targets.contains($0.entity) }
                if !unhandled.isEmpty {
                    throw .missingTransform(stage: stageIndex, from: from, to: version.name,
                                            differences: SchemaDifference.explained(unhandled) + Self.renameHints(step))
                }
            }
            if let (stageIndex, stage) = step.stage, !stage.hasCode, step.blocking.isEmpty {
                warnings.append(.redundantStage(stage: stageIndex, from: from, to: version.name))
            }
            // A transform reads the whole old record: what it drops is its author's choice.
            let renames = Self.probableRenames(from: previous, to: current, schema: version.name).filter { warning in
                guard case .probableRename(_, let entity, _, _) = warning, let id = current.entity(named: entity)?.id else { return true }
                return !rewritten.contains(id)
            }
            warnings += renames
            let renamed = Set(renames.compactMap(\.renamedAttribute))
            for drop in Self.droppedValues(from: previous, to: current, rewritten: rewritten) {
                step.dropped.append((drop.oldEntity, drop.property))
                // A probable rename's warning already says its values are dropped.
                if let property = drop.property, renamed.contains("\(drop.entity).\(property)") { continue }
                warnings.append(.dropsStoredValues(schema: version.name, entity: drop.entity, property: drop.property,
                                                   probableMove: drop.probableMove))
            }
            steps.append(step)
        }
        self.steps = steps
        self.warnings = warnings
    }

    /// The entities whose records a blocking change needs rewritten: its own, and for a change
    /// of a property every entity that inherits it in `version` (each named as the changed one).
    private static func reach(of difference: SchemaDifference, in version: CatalogVersion) -> [SchemaDifference] {
        switch difference.change {
        case .attributeAdded, .attributeRemoved, .attributeRenamed, .attributeTypeChanged, .attributeMadeCodable,
             .attributeBecameOptional, .attributeBecameRequired, .attributeDefaultChanged, .uniqueAdded, .uniqueRemoved,
             .indexAdded, .indexRemoved, .relationshipAdded, .relationshipRemoved, .relationshipChanged, .relationshipBecameToOne:
            guard let id = version.entity(named: difference.entity)?.id else { return [difference] }
            return version.family(ofEntity: id).compactMap { member in
                version.entity(id: member).map { SchemaDifference(entity: $0.name, change: difference.change) }
            }
        case .entityAdded, .entityRemoved, .entityRenamed, .parentChanged:
            return [difference]
        }
    }

    /// The probable renames of a step, as hints for its error.
    private static func renameHints(_ step: Step) -> [String] {
        SchemaDifference.probableRenames(in: step.differences).map {
            "[probable rename] " + SchemaDifference.renameHint(entity: $0.entity, removed: $0.removed, added: $0.added)
        }
    }

    /// Checks a custom stage's transforms against the two versions — each source an entity of
    /// the old version, each target one of the new version that is its source (the same id) or
    /// new in it, no two with one target — as the stage would when it runs. Returns the
    /// targets' names in the new version.
    private static func checkTransforms(_ transforms: [RecordTransform], stage: Int, from old: CatalogVersion, fromName: String,
                                        to new: CatalogVersion, toName: String) throws(MigrationPlanError) -> Set<String> {
        var targets: Set<UInt32> = []
        var names: Set<String> = []
        for transform in transforms {
            func fail(_ reason: String) -> MigrationPlanError {
                .transformNotPossible(stage: stage, source: transform.sourceEntity, target: transform.targetEntity, reason: reason)
            }
            guard let source = old.entity(named: transform.sourceEntity) else {
                throw fail("\(fromName) has no entity \(transform.sourceEntity): read records of the stage's fromVersion")
            }
            guard let target = new.entity(named: transform.targetEntity) else {
                throw fail("\(toName) has no entity \(transform.targetEntity): write records of the stage's toVersion")
            }
            guard target.id == source.id || old.entity(id: target.id) == nil else {
                throw fail("\(transform.targetEntity) exists in \(fromName) and is not \(transform.sourceEntity): a transform writes "
                    + "into its own entity or one new in \(toName); rewrite \(transform.targetEntity) with a transform of its own")
            }
            guard targets.insert(target.id).inserted else {
                throw fail("two transforms of the stage write \(transform.targetEntity); one transform per target entity. To merge "
                    + "entities into one, migrate through an intermediate version that has the old entities and the new one: a "
                    + "custom stage to it whose didMigrate inserts the new entity's records from the old ones, then a lightweight "
                    + "stage from it that removes the old entities (Docs/Migrations.md, \"Merging entities\")")
            }
            names.insert(target.name)
        }
        return names
    }

    /// A warning for every attribute, relationship and entity whose stored values the step
    /// drops (removed from an entity no transform of the step reads, or a removed entity no
    /// transform reads), with a probable move: the same name and type new in another entity —
    /// a sub-entity (data moving down a new hierarchy) or any other.
    private static func droppedValues(from old: CatalogVersion, to new: CatalogVersion, rewritten: Set<UInt32>)
        -> [(oldEntity: String, entity: String, property: String?, probableMove: String?)] {
        var dropped: [(oldEntity: String, entity: String, property: String?, probableMove: String?)] = []
        for before in old.entities where !rewritten.contains(before.id) {
            guard let entity = new.entity(id: before.id) else {
                dropped.append((before.name, before.name, nil, nil))
                continue
            }
            let kept = Set(new.resolvedAttributes(ofEntity: entity.id).map(\.id))
            for attribute in old.resolvedAttributes(ofEntity: before.id) where !kept.contains(attribute.id) {
                dropped.append((before.name, entity.name, attribute.name, probableMove(of: attribute, from: entity, old: old, new: new)))
            }
            let keptRelationships = Set(new.resolvedRelationships(ofEntity: entity.id).map(\.id))
            for relationship in old.resolvedRelationships(ofEntity: before.id) where !keptRelationships.contains(relationship.id) {
                dropped.append((before.name, entity.name, relationship.name, nil))
            }
        }
        return dropped
    }

    /// Where a dropped attribute probably moved: an attribute of its name and type that another
    /// entity of the new version gains (new to it), sub-entities of `entity` first.
    private static func probableMove(of attribute: CatalogAttribute, from entity: CatalogEntity, old: CatalogVersion,
                                     new: CatalogVersion) -> String? {
        let candidates = new.entities.filter { other in
            guard other.id != entity.id,
                  let match = new.resolvedAttributes(ofEntity: other.id).first(where: { $0.name == attribute.name && $0.type == attribute.type })
            else { return false }
            return !(old.entity(id: other.id).map { old.resolvedAttributes(ofEntity: $0.id).contains { $0.id == match.id } } ?? false)
        }
        let isSub = { (other: CatalogEntity) in new.ancestry(ofEntity: other.id).contains { $0.id == entity.id } }
        guard let target = candidates.first(where: isSub) ?? candidates.first else { return nil }
        return "\(target.name).\(attribute.name)" + (isSub(target) ? " (\(target.name) is a sub-entity of \(entity.name))" : "")
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
    package func position(of checksum: SchemaChecksum) -> Int? {
        versions.firstIndex { $0.schema.checksum == checksum }
    }
}
