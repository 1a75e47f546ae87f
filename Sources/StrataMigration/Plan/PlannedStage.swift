import StrataSchema
import StrataRecords

/// A declared stage of a plan as this layer checks and runs it: its versions and what it does,
/// without its closures (those take the facade's `Context`; the facade's `MigrationStage`
/// keeps them and runs them through `MigrationHost`).
package struct PlannedStage {
    /// What the stage does.
    package enum Kind {
        /// Metadata only.
        case lightweight
        /// Closures and/or transforms.
        case custom(transforms: [RecordTransform], batchSize: Int, rejected: RejectedRecordPolicy)
    }

    /// The version migrated from.
    package let fromVersion: any VersionedSchema.Type
    /// The version migrated to.
    package let toVersion: any VersionedSchema.Type
    /// What the stage does.
    package let kind: Kind
    /// Whether it has a `willMigrate` or a `didMigrate` closure.
    package let hasClosures: Bool

    /// A stage of `kind` between the two versions.
    package init(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type, kind: Kind, hasClosures: Bool) {
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.kind = kind
        self.hasClosures = hasClosures
    }

    /// `"lightweight"` or `"custom"`.
    package var kindName: String {
        switch kind {
        case .lightweight: "lightweight"
        case .custom: "custom"
        }
    }

    /// Whether the stage rewrites records (a custom stage with transforms).
    package var rewritesRecords: Bool {
        if case .custom(let transforms, _, _) = kind { return !transforms.isEmpty }
        return false
    }

    /// Whether the stage is custom at all (code or transforms): such a stage needs the
    /// migration's rollback point.
    package var rewritesOrRunsCode: Bool {
        if case .custom = kind { return true }
        return false
    }

    /// Whether the stage runs code of its own.
    package var hasCode: Bool {
        switch kind {
        case .lightweight: false
        case .custom(let transforms, _, _): hasClosures || !transforms.isEmpty
        }
    }
}
