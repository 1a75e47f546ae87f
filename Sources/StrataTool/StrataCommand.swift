import StrataIO
import StrataToolCore

/// The `strata` executable: hands the process's arguments and streams to `StrataTool.run`
/// (Sources/StrataToolCore) and exits with the status it returns (Docs/Tools.md).
@main
enum StrataCommand {
    static func main() {
        let output = ToolOutput(output: { StandardStreams.write($0, to: StandardStreams.output) },
                                error: { StandardStreams.write(Array($0.utf8), to: StandardStreams.error) },
                                errorIsTerminal: StandardStreams.isTerminal(StandardStreams.error))
        let status = StrataTool.run(Array(CommandLine.arguments.dropFirst()), output: output)
        StandardStreams.exit(status: status.rawValue)
    }
}
