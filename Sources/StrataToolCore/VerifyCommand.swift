import Strata

/// `strata verify PATH`: `Store.verify()`'s full check, read-only.
enum VerifyCommand {
    static let command = StrataTool.Command(
        name: "verify", grammar: CommandArguments.Grammar(positionals: ["PATH"], flags: ["json"]),
        summary: "check every page, record, index, the catalog and the history journal",
        help: """
            usage: strata verify [--json] PATH

            Checks the whole store in the folder PATH as Store.verify() does, as of its latest
            commit: every page's frame (checksum, header, the page id and LSN the page table
            expects, decompression) and the page log's bookkeeping; every record tree (order,
            counts, each record's encoding); every index (one entry per record, each its record's
            key); the record graph; the schema catalog; the history journal; the quarantine. It
            prints every problem with the file and byte offset at fault, changes nothing, and
            takes no lock (an app may be writing the store meanwhile).

            A store too damaged to open is reported as one problem, the error that stopped it.

            options:
              --json   one JSON object: {"path", "sound", "pages", "records", "indexEntries",
                       "historyParts", "problems": [{"file", "offset", "what"}]}

            exit status: 0 when the store is sound, 1 when a problem was found, 3 when there is no
            store at PATH or it cannot be read (an I/O error, an unsupported format version).

            """,
        run: run)

    static func run(_ line: CommandArguments, _ output: ToolOutput) throws -> ToolExitStatus {
        let path = line.positionals[0]
        let report: (pages: Int, records: Int, indexEntries: Int, historyParts: Int, problems: [VerificationReport.Problem])
        var opened = true
        do {
            let store = try StoreInspection(at: path)
            defer { store.close() }
            let progress = ProgressBar(total: store.space.pages, label: "verify", output: output)
            let checked = store.verify { progress.update(done: $0) }
            progress.finish()
            report = (checked.pages, checked.records, checked.indexEntries, checked.historyParts, checked.problems)
        } catch StrataError.corruption(let file, let offset, let reason) {
            // Damage that stops the store opening is the one problem found.
            report = (0, 0, 0, 0, [.found(file: file, offset: offset, what: reason)])
            opened = false
        }
        if line.flags.contains("json") {
            let json = JSONText.object([
                ("path", .string(path)), ("sound", .bool(report.problems.isEmpty)), ("pages", .int(report.pages)),
                ("records", .int(report.records)), ("indexEntries", .int(report.indexEntries)), ("historyParts", .int(report.historyParts)),
                ("problems", .array(report.problems.map { problem in
                    .object([("file", .string(problem.file)), ("offset", problem.offset.map(JSONText.int) ?? .null), ("what", .string(problem.what))])
                })),
            ])
            output.line(json.pretty)
        } else {
            output.line("store: \(path)")
            output.line(opened ? "checked: \(plural(report.pages, "page")), \(plural(report.records, "record")), "
                + "\(plural(report.indexEntries, "index entry", "index entries")), \(plural(report.historyParts, "history part"))"
                : "checked: nothing, the store does not open")
            if report.problems.isEmpty {
                output.line("sound: no problem found")
            } else {
                output.line("\(plural(report.problems.count, "problem")):")
                for problem in report.problems { output.line("  \(problem)") }
            }
        }
        return report.problems.isEmpty ? .success : .problemsFound
    }
}
