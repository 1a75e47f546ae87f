import Strata

/// `strata compact PATH` and `strata checkpoint PATH`: the maintenance an app runs through
/// `Store.compact()` and `Store.checkpoint()`, on a store no process has open for writing.
enum MaintenanceCommands {
    static let compact = StrataTool.Command(
        name: "compact", grammar: CommandArguments.Grammar(positionals: ["PATH"]),
        summary: "reclaim dead space (needs the store to itself)",
        help: """
            usage: strata compact PATH

            Compacts the store in the folder PATH as Store.compact() does: compresses records a
            migration left uncompressed, moves the live pages out of the emptiest segments until
            the log is at most 1.5 times the live data, checkpoints and deletes the emptied
            segments. Prints the log's bytes before and after.

            It opens the store for writing, taking its lock: while another process (the app) has
            the store open for writing it changes nothing and fails with "locked". While a
            migration is in progress it changes nothing either: the app that runs the migration
            finishes it first.

            exit status: 0; 3 when there is no store at PATH, it cannot be read or written, or a
            migration is in progress; 4 when the store is locked by another process.

            """,
        run: { line, output in
            let path = line.positionals[0]
            let progress = ProgressBar(total: 1000, label: "compact", output: output)
            let (before, after) = try StoreInspection.compact(at: path) { progress.update(done: Int(($0 * 1000).rounded())) }
            progress.finish()
            output.line("compacted \(path): log \(before) bytes before, \(after) bytes after")
            return .success
        })

    static let checkpoint = StrataTool.Command(
        name: "checkpoint", grammar: CommandArguments.Grammar(positionals: ["PATH"]),
        summary: "write a checkpoint so the next open replays less (needs the store to itself)",
        help: """
            usage: strata checkpoint PATH

            Writes a checkpoint of the store in the folder PATH as Store.checkpoint() does: the
            changed page table chunks, a checkpoint root and the other superblock slot, so opening
            the store next replays no log.

            It opens the store for writing, taking its lock: while another process (the app) has
            the store open for writing it changes nothing and fails with "locked". While a
            migration is in progress it changes nothing either.

            exit status: 0; 3 when there is no store at PATH, it cannot be read or written, or a
            migration is in progress; 4 when the store is locked by another process.

            """,
        run: { line, output in
            let path = line.positionals[0]
            try StoreInspection.checkpoint(at: path)
            output.line("checkpointed \(path)")
            return .success
        })
}
