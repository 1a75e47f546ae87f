import Strata

/// `strata backup PATH DEST`: an online backup of the store at PATH into the new folder DEST,
/// as `Store.backup(to:progress:)` does from a read-only store.
enum BackupCommand {
    static let command = StrataTool.Command(
        name: "backup", grammar: CommandArguments.Grammar(positionals: ["PATH", "DEST"]),
        summary: "copy the store to a new folder while an app may be writing it",
        help: """
            usage: strata backup PATH DEST

            Backs the store in the folder PATH up into the new folder DEST, as the app's
            Store.backup(to:) does: DEST holds exactly one committed state of the store — every
            transaction committed before the command started, perhaps some committed during it,
            nothing partial — and opens as a store of its own.

            It reads the store as the read-only commands do: an app writing the store meanwhile
            is never kept waiting, and its commits, checkpoints and compactions go on. The copy
            is written into the folder DEST.tmp beside DEST, every file synced, opened and
            verified in full (as `strata verify` checks a store), and only then renamed to DEST:
            DEST never holds a half-written or unverified backup. On any failure DEST.tmp is
            removed and nothing is at DEST. Memory stays bounded whatever the store's size.

            When standard error is a terminal, a progress bar shows the bytes copied.

            Prints one line: the bytes and files copied and what the verification read.

            exit status: 0 when the backup is verified and in place; 2 for a usage error; 3 when
            there is no store at PATH, something already exists at DEST, the store cannot be
            read, the copy cannot be written (no space, no permission) or fails verification.

            """,
        run: { line, output in
            let (path, destination) = (line.positionals[0], line.positionals[1])
            let store = try StoreInspection(at: path)
            defer { store.close() }
            var bar: ProgressBar?
            var verifying = false
            let report = try store.backup(to: destination) { progress in
                if bar == nil { bar = ProgressBar(total: progress.bytesTotal, label: "copying", output: output) }
                bar?.update(done: progress.bytesCopied)
                if progress.isVerifying && !verifying {
                    verifying = true
                    bar?.finish()
                    if output.errorIsTerminal { output.error("verifying the copy…") }
                }
            }
            let verification = report.verification
            output.line("backed up \(path) to \(report.path): \(report.bytes) bytes in \(report.files) files; the copy verified "
                + "(\(verification.pages) pages, \(verification.records) records, \(verification.indexEntries) index entries, "
                + "\(verification.historyParts) history parts)")
            return .success
        })
}
