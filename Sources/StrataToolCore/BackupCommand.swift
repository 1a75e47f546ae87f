import Strata

/// `strata backup PATH DEST`: an online backup of the store at PATH into the new folder DEST,
/// as `Store.backup(to:verification:progress:)` does from a read-only store.
enum BackupCommand {
    static let command = StrataTool.Command(
        name: "backup", grammar: CommandArguments.Grammar(positionals: ["PATH", "DEST"], options: ["verify": 1]),
        summary: "copy the store to a new folder while an app may be writing it",
        help: """
            usage: strata backup [--verify frames|full] PATH DEST

            Backs the store in the folder PATH up into the new folder DEST, as the app's
            Store.backup(to:) does: DEST holds exactly one committed state of the store — every
            transaction committed before the command started, perhaps some committed during it,
            nothing partial — and opens as a store of its own.

            It reads the store as the read-only commands do: an app writing the store meanwhile
            is never kept waiting, and its commits, checkpoints and compactions go on. The copy
            is written into the folder DEST.tmp beside DEST, every file synced, opened and
            verified (--verify), and only then renamed to DEST: DEST never holds a half-written
            or unverified backup. On any failure DEST.tmp is removed and nothing is at DEST.
            Memory stays bounded whatever the store's size.

            --verify frames   (the default) check that the copy opens and that every page's
                              frame is whole (checksum, header, the page id and LSN its table
                              expects) without decoding anything: reads the copy once
            --verify full     check the copy as `strata verify` does: every page, record,
                              index entry and history part, decoded (about ten times longer)

            When standard error is a terminal, a progress bar shows the bytes copied.

            Prints one line: the bytes and files copied and what the verification read.

            exit status: 0 when the backup is verified and in place; 2 for a usage error; 3 when
            there is no store at PATH, something already exists at DEST, the store cannot be
            read, the copy cannot be written (no space, no permission) or fails verification.

            """,
        run: { line, output in
            let (path, destination) = (line.positionals[0], line.positionals[1])
            let verification: BackupVerification
            switch line.value("verify") ?? "frames" {
            case "full": verification = .full
            case "frames": verification = .frames
            case let other: throw CommandArguments.UsageError(message: "--verify must be frames or full, not \(other)")
            }
            let store = try StoreInspection(at: path)
            defer { store.close() }
            var bar: ProgressBar?
            var verifying = false
            let report = try store.backup(to: destination, verification: verification) { progress in
                if bar == nil { bar = ProgressBar(total: progress.bytesTotal, label: "copying", unit: .bytes, output: output) }
                bar?.update(done: progress.bytesCopied)
                if progress.isVerifying && !verifying {
                    verifying = true
                    bar?.finish()
                    if output.errorIsTerminal { output.error("verifying the copy…") }
                }
            }
            let checked = report.verification
            output.line("backed up \(path) to \(report.path): \(report.bytes) bytes in \(report.files) files; the copy verified "
                + (verification == .frames ? "(\(checked.pages) page frames)"
                    : "(\(checked.pages) pages, \(checked.records) records, \(checked.indexEntries) index entries, \(checked.historyParts) history parts)"))
            return .success
        })
}
