// The public surface of Strata, declared in one place.
//
// An app imports `Strata` only. The types below are defined in the layers under this facade
// (Docs/Architecture.md, "Layers") and re-exported here by name — each one deliberately, so
// nothing else of those layers (their `package` engine types) is part of the API. The facade's
// own public types (Store, Context, FetchDescriptor, …) are declared in its files.

import StrataPageLog

// Schemas and records (StrataSchema): the model an app declares and the values it stores.
@_exported import protocol StrataSchema.PersistentRecord
@_exported import struct StrataSchema.RecordID
@_exported import struct StrataSchema.Schema
@_exported import struct StrataSchema.Entity
@_exported import struct StrataSchema.Attribute
@_exported import enum StrataSchema.AttributeType
@_exported import struct StrataSchema.Relationship
@_exported import struct StrataSchema.RelationshipRule
@_exported import struct StrataSchema.SchemaChecksum
@_exported import enum StrataSchema.SchemaError
@_exported import enum StrataSchema.Value
// Hand-coded record encoding (`PersistentRecord.encode(to:)` / `init(from:)` without Codable).
@_exported import struct StrataSchema.RecordWriter
@_exported import struct StrataSchema.RecordReader
@_exported import struct StrataSchema.RecordEncoder
@_exported import struct StrataSchema.RecordDecoder
@_exported import enum StrataSchema.RecordCodingError

// Errors and history tokens (StrataRecords): what every layer above reports.
@_exported import enum StrataRecords.StrataError
@_exported import struct StrataRecords.MigrationFailureReport
@_exported import struct StrataRecords.HistoryToken

// The history journal's transactions and queries (StrataHistory).
@_exported import struct StrataHistory.HistoryTransaction
@_exported import struct StrataHistory.HistoryChange
@_exported import struct StrataHistory.AttributeChange
@_exported import struct StrataHistory.HistoryChanges
@_exported import struct StrataHistory.HistoryDescriptor

// Migrations (StrataMigration): versions, plan errors, transforms, progress, quarantine.
@_exported import protocol StrataMigration.VersionedSchema
@_exported import enum StrataMigration.MigrationPlanError
@_exported import enum StrataMigration.MigrationLintWarning
@_exported import struct StrataMigration.RecordTransform
@_exported import class StrataMigration.MigrationWriter
@_exported import struct StrataMigration.MigrationProgress
@_exported import enum StrataMigration.RejectedRecordPolicy
@_exported import struct StrataMigration.QuarantinedRecord
@_exported import struct StrataMigration.MigrationEstimate

/// When a commit (a `Context.save()`) is durable: `.durable` (on stable storage when the call
/// returns) or `.relaxed` (crash-consistent, synced later). The page log's own type, so the
/// setting reaches the log unchanged.
public typealias Durability = StrataPageLog.Durability
