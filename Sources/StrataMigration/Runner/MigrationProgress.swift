import Dispatch
import StrataSchema
import StrataRecords

/// Where a running migration is: the stage, how much of it is done, and how long the rest
/// should take. Delivered after each stage starts, after each committed batch of a streaming
/// stage, and when each stage ends — to `Store.Configuration.migrationProgress` and as the
/// events of `Store.opening(at:schema:migrationPlan:configuration:)`.
public struct MigrationProgress: Sendable, Equatable {
    /// The stage's position among the plan's steps (0-based).
    public var stageIndex: Int
    /// How many steps the plan has.
    public var stageCount: Int
    /// The stage's name ("custom SchemaV1 (1.0.0) → SchemaV2 (2.0.0)").
    public var stageName: String
    /// Whether the stage writes metadata only (a lightweight step): it takes milliseconds.
    public var isMetadataOnly: Bool
    /// Records rewritten so far by the stage's transforms (0 for a stage with none).
    public var recordsDone: UInt64
    /// Records the stage's transforms rewrite in all (0 for a stage with none).
    public var recordsTotal: UInt64
    /// Bytes of old records rewritten so far.
    public var bytesDone: UInt64
    /// The stage's bytes of old records in all: exact when the stage is done, estimated from
    /// the records' average size until then.
    public var bytesTotal: UInt64
    /// Time since the migration began.
    public var elapsed: Duration
    /// Time the stage still needs at its throughput so far; nil before anything was measured.
    public var estimatedRemaining: Duration?
    /// Whether the stage is done.
    public var isStageFinished: Bool

    /// The fraction of the stage done, 0…1.
    public var fractionDone: Double {
        if isStageFinished { return 1 }
        return recordsTotal == 0 ? 0 : min(1, Double(recordsDone) / Double(recordsTotal))
    }
}
