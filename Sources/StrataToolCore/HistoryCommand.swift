#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Strata
import StrataSchema

/// `strata history PATH`: the journal's transactions with their changes (Docs/History.md),
/// read through the store's newest schema version; `--follow` keeps delivering new ones.
enum HistoryCommand {
    static let command = StrataTool.Command(
        name: "history",
        grammar: CommandArguments.Grammar(positionals: ["PATH"], flags: ["follow", "json"],
                                          options: ["after": 1, "author": 1, "entity": 1, "limit": 1]),
        summary: "journaled transactions with their changes, old and new values; --follow for new ones",
        help: """
            usage: strata history [--after TOKEN] [--author A] [--entity E] [--limit N] [--follow] [--json] PATH

            Lists the transactions the history journal of the store in the folder PATH keeps,
            oldest first: each with its token, time (UTC), author and schema version, then each
            change: a record inserted, an update with each attribute's old and new value, a
            delete with the values kept for it (preserveValueOnDeletion), or what a migration
            rewrote. Values are written as dump writes them. Entities and attributes are named as
            in the store's newest schema version.

              #2 2026-12-02T02:13:38.275249Z by app (schema 1.0.0): 2 changes
                insert Person 3
                update Person 1: note "first" -> "second"

            options:
              --after TOKEN   only transactions after this token (a number; 0: from the oldest)
              --author A      only transactions by author A
              --entity E      only changes to entity E and the entities below it
              --limit N       at most N transactions (with --follow: stop after N)
              --follow        after the journal's transactions, wait for new ones and write each
                              as it is committed (by any process), until interrupted
              --json          one JSON object a line per transaction (Docs/Tools.md shows it)

            It takes no lock: an app may be writing the store meanwhile.

            exit status: 0; 2 for a bad TOKEN or N, or an entity no schema version has; 3 when the
            store cannot be read, has no schema, or the journal no longer keeps transactions
            after TOKEN (retention deleted them).

            """,
        run: run)

    static func run(_ line: CommandArguments, _ output: ToolOutput) throws -> ToolExitStatus {
        let path = line.positionals[0]
        let limit = try line.count("limit")
        var requested: HistoryToken?
        if let text = line.value("after") {
            guard let raw = UInt64(text) else { throw CommandArguments.UsageError(message: "--after must be a token (a whole number), not \(text)") }
            requested = HistoryToken(rawValue: raw)
        }
        let inspection = try StoreInspection(at: path)
        let catalog = try inspection.catalog()
        inspection.close()
        guard let latest = catalog?.latest else { throw HistoryCommandError.noSchema(path: path) }
        var filter = HistoryDescriptor()
        if let author = line.value("author") { filter.authors = [author] }
        if let entity = line.value("entity") {
            guard catalog?.versions.contains(where: { $0.entity(named: entity) != nil }) == true else {
                let known = Set(catalog?.versions.flatMap { $0.entities.map(\.name) } ?? []).sorted().joined(separator: ", ")
                throw CommandArguments.UsageError(message: "the store has no entity \(entity); its entities: \(known)")
            }
            filter.entityNames = [entity]
        }
        var configuration = Store.Configuration()
        configuration.isReadOnly = true
        let store = try Store(at: path, schema: latest.shape, configuration: configuration)
        defer { try? store.close() }
        let json = line.flags.contains("json")
        var after = try requested ?? store.oldestHistoryToken()
        if line.flags.contains("follow") {
            try follow(store, after: after, filter: filter, limit: limit, json: json, output: output)
            return .success
        }
        // Page by page: memory holds one page of transactions, whatever the journal's size.
        var written = 0
        while limit.map({ written < $0 }) ?? true {
            let page = min(256, limit.map { $0 - written } ?? .max)
            let (batch, through) = try store.history(after: after, matching: filter, limit: page)
            for transaction in batch { output.write(json ? jsonLine(transaction) : text(transaction)) }
            written += batch.count
            after = through
            if batch.count < page { break }
        }
        return .success
    }

    /// Writes the transactions after `token`, then each new one as it commits, until `limit`
    /// were written (nil: until the process is interrupted); each is flushed at once.
    static func follow(_ store: Store, after token: HistoryToken, filter: HistoryDescriptor, limit: Int?, json: Bool,
                       output: ToolOutput) throws {
        guard limit != 0 else { return }
        /// The output and the outcome, handed between this thread and the observing task.
        final class Shared: @unchecked Sendable {
            let output: ToolOutput
            var error: (any Error)?
            init(_ output: ToolOutput) { self.output = output }
        }
        let shared = Shared(output)
        let done = DispatchSemaphore(value: 0)
        let observer = HistoryObserver(store: store, after: token, filter: filter)
        Task.detached {
            defer { done.signal() }
            do {
                var written = 0
                for try await transaction in observer {
                    shared.output.write(json ? jsonLine(transaction) : text(transaction))
                    shared.output.flush()
                    written += 1
                    if let limit, written >= limit { break }
                }
            } catch {
                shared.error = error
            }
        }
        done.wait()
        if let error = shared.error { throw error }
    }

    /// A transaction as text: a heading, then one indented line per change.
    static func text(_ transaction: HistoryTransaction) -> String {
        var lines = ["#\(transaction.token.rawValue) \(RecordJSON.iso8601(transaction.timestamp) ?? "\(transaction.timestamp)")"
            + (transaction.author.map { " by \($0)" } ?? "") + (transaction.schemaVersion.map { " (schema \($0))" } ?? "")
            + ": \(plural(transaction.changes.count, "change"))"]
        for change in transaction.changes {
            switch change.kind {
            case .insert: lines.append("  insert \(change.entityName) \(change.recordNumber)")
            case .update:
                lines.append("  update \(change.entityName) \(change.recordNumber): " + change.updatedAttributes.map { attribute in
                    "\(attribute.name) \(RecordJSON.value(attribute.oldValue).compact) -> \(RecordJSON.value(attribute.newValue).compact)"
                }.joined(separator: ", "))
            case .delete:
                let kept = change.tombstone.sorted { $0.key < $1.key }.map { "\($0.key) \(RecordJSON.value($0.value).compact)" }
                lines.append("  delete \(change.entityName) \(change.recordNumber)" + (kept.isEmpty ? "" : " (kept: \(kept.joined(separator: ", ")))"))
            case .migration:
                let counts = change.migratedRecords
                lines.append("  migration \(change.entityName): \(counts?.inserted ?? 0) inserted, \(counts?.updated ?? 0) updated, "
                    + "\(counts?.deleted ?? 0) deleted")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A transaction as one JSON line: `{"token", "timestamp", "author", "schemaVersion",
    /// "changes": [{"kind", "entity", "id", …}]}`.
    static func jsonLine(_ transaction: HistoryTransaction) -> String {
        let changes: [JSONText] = transaction.changes.map { change in
            var members: [(String, JSONText)] = [("entity", .string(change.entityName))]
            switch change.kind {
            case .insert:
                members.insert(("kind", .string("insert")), at: 0)
                members.append(("id", .int(change.recordNumber)))
            case .update:
                members.insert(("kind", .string("update")), at: 0)
                members.append(("id", .int(change.recordNumber)))
                members.append(("attributes", .array(change.updatedAttributes.map { attribute in
                    .object([("name", .string(attribute.name)), ("old", RecordJSON.value(attribute.oldValue)),
                             ("new", RecordJSON.value(attribute.newValue))])
                })))
            case .delete:
                members.insert(("kind", .string("delete")), at: 0)
                members.append(("id", .int(change.recordNumber)))
                members.append(("kept", .object(change.tombstone.sorted { $0.key < $1.key }.map { ($0.key, RecordJSON.value($0.value)) })))
            case .migration:
                members.insert(("kind", .string("migration")), at: 0)
                let counts = change.migratedRecords
                members += [("inserted", .int(counts?.inserted ?? 0)), ("updated", .int(counts?.updated ?? 0)),
                            ("deleted", .int(counts?.deleted ?? 0))]
            }
            return .object(members)
        }
        return JSONText.object([
            ("token", .int(transaction.token.rawValue)),
            ("timestamp", .string(RecordJSON.iso8601(transaction.timestamp) ?? "\(transaction.timestamp)")),
            ("author", transaction.author.map(JSONText.string) ?? .null),
            ("schemaVersion", transaction.schemaVersion.map { .string("\($0)") } ?? .null),
            ("changes", .array(changes)),
        ]).compact + "\n"
    }
}

/// Why `strata history` cannot list a store's history.
enum HistoryCommandError: Error, CustomStringConvertible {
    /// The store has no schema catalog: nothing was ever written through a schema.
    case noSchema(path: String)

    var description: String {
        switch self {
        case .noSchema(let path): "the store at \(path) has no schema yet, so no history"
        }
    }
}
