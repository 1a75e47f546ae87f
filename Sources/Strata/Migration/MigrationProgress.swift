import Dispatch
import StrataSchema

/// What `Store.opening(at:schema:migrationPlan:configuration:)` delivers.
public enum MigrationEvent: Sendable {
    /// A migration's progress (only when the store needs one).
    case progress(MigrationProgress)
    /// A read-only store on the old version of a stage that rewrites records, readable while
    /// the stage streams, retired at its switch (see `Store.Configuration.migrationOldVersion`).
    case oldVersionReadable(Store)
    /// The store, opened (migrated first if it needed it). The last event.
    case opened(Store)
}

extension Store {
    /// Opens the store as `init(at:schema:migrationPlan:configuration:)` does — on a thread of
    /// its own — and streams the migration's progress while it runs, then the opened store:
    ///
    /// ```swift
    /// for try await event in Store.opening(at: path, schema: SchemaV2.self, migrationPlan: Plan.self) {
    ///     switch event {
    ///     case .progress(let progress): showProgress(progress.stageName, progress.fractionDone)
    ///     case .oldVersionReadable(let old): showReadOnly(old)   // the old data, while it migrates
    ///     case .opened(let store): self.store = store
    ///     }
    /// }
    /// ```
    ///
    /// The stream ends after `.opened`, or throws what opening throws. Cancelling the consuming
    /// task does not stop a migration that has started (it is atomic, and resumes at the next
    /// open if the process ends).
    public static func opening(at path: String, schema: any VersionedSchema.Type, migrationPlan: (any SchemaMigrationPlan.Type)?,
                               configuration: Configuration = Configuration()) -> AsyncThrowingStream<MigrationEvent, any Error> {
        AsyncThrowingStream { continuation in
            var configuration = configuration
            let earlier = configuration.migrationProgress
            configuration.migrationProgress = { progress in
                earlier?(progress)
                continuation.yield(.progress(progress))
            }
            let earlierOldVersion = configuration.migrationOldVersion
            configuration.migrationOldVersion = { store in
                earlierOldVersion?(store)
                continuation.yield(.oldVersionReadable(store))
            }
            let opening = configuration
            let types = SchemaTypes(schema: schema, plan: migrationPlan)
            DispatchQueue.global(qos: .userInitiated).async {
                do {
                    let store = try Store(at: path, schema: types.schema, migrationPlan: types.plan, configuration: opening)
                    continuation.yield(.opened(store))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
        }
    }
}

/// A schema and plan handed to the thread that opens the store. Thread-safety
/// (`@unchecked Sendable`): metatypes are immutable, and the protocols' requirements are static
/// declarations the app writes once (not state that could be mutated across threads).
private struct SchemaTypes: @unchecked Sendable {
    let schema: any VersionedSchema.Type
    let plan: (any SchemaMigrationPlan.Type)?
}
