import Strata

/// The `strata` command-line tool (Docs/Tools.md): looks inside a store folder through the
/// schema catalog the store carries — no app types needed — and runs its maintenance.
///
/// `run` is the whole tool; the `strata` executable only hands it the process's arguments and
/// streams, so tests run every command in-process.
package enum StrataTool {
    /// One command: its name, grammar, one-line summary, help text and what it does.
    struct Command: Sendable {
        var name: String
        var grammar: CommandArguments.Grammar
        var summary: String
        var help: String
        var run: @Sendable (CommandArguments, ToolOutput) throws -> ToolExitStatus
    }

    static let commands: [Command] = [InfoCommand.command, VerifyCommand.command, SchemaCommand.command, DumpCommand.command,
                                      HistoryCommand.command, ExportCommand.command, ImportCommand.command, BackupCommand.command, MaintenanceCommands.compact, MaintenanceCommands.checkpoint]

    /// Runs the tool on `arguments` (without the program's name), writing to `output`, and
    /// returns the exit status (flushing `output` first).
    package static func run(_ arguments: [String], output: ToolOutput) -> ToolExitStatus {
        defer { output.flush() }
        guard let first = arguments.first else {
            output.error(overview)
            return .usage
        }
        if first == "--help" || first == "-h" || first == "help" {
            if first == "help", arguments.count > 1 {
                guard let command = commands.first(where: { $0.name == arguments[1] }) else {
                    output.error("strata: unknown command \(arguments[1])\n\n\(overview)")
                    return .usage
                }
                output.write(command.help)
            } else {
                output.write(overview)
            }
            return .success
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            output.error("strata: unknown command \(first)\n\n\(overview)")
            return .usage
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            output.write(command.help)
            return .success
        }
        do {
            let line = try CommandArguments(rest, grammar: command.grammar)
            return try command.run(line, output)
        } catch let error as CommandArguments.UsageError {
            output.error("strata \(command.name): \(error.message)\n\(usageLine(of: command))\nSee 'strata \(command.name) --help'.")
            return .usage
        } catch StrataError.locked(let path) {
            output.error("strata \(command.name): locked: the store at \(path) is open for writing by another process (the app?); "
                + "nothing was changed. Run it again once that process closed the store.")
            return .locked
        } catch {
            output.error("strata \(command.name): \(error)")
            return .storeError
        }
    }

    /// The first line of a command's help: `usage: strata info [--json] PATH`.
    static func usageLine(of command: Command) -> String {
        String(command.help.prefix { $0 != "\n" })
    }

    /// `strata --help`.
    static var overview: String {
        let width = commands.map(\.name.count).max() ?? 0
        return """
            strata — look inside a Strata store folder and maintain it, without the app's code.

            usage: strata COMMAND [OPTIONS] PATH
                   strata COMMAND --help     (or: strata help COMMAND)

            commands:
            \(commands.map { "  " + $0.name + String(repeating: " ", count: width - $0.name.count + 2) + $0.summary }.joined(separator: "\n"))

            Read-only commands (info, verify, schema, dump, history, export, backup) never block an app
            writing the store: they read its latest commit. compact and checkpoint need the store to themselves;
            import writes a new store.

            exit statuses:
              0  success (verify: the store is sound)
              1  verify found problems (or a store too damaged to open)
              2  usage error (unknown command or option, missing argument)
              3  the store could not be read or changed (not found, damaged, I/O error, migration in progress);
                 import: the file is not a valid export, or NEWPATH exists;
                 backup: something already at DEST, the copy not written or not sound
              4  locked: another process has the store open for writing (compact, checkpoint)

            Docs/Tools.md describes every command and its output.

            """
    }
}
