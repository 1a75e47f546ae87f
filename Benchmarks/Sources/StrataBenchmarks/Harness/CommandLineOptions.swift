/// The command line, parsed. The same executable plays four roles:
/// - the driver (no role flag): runs each selected workload in a process of its own, prints
///   the table and writes the JSON file;
/// - a workload process (`--run-workload NAME`): runs one workload, prints one JSON line;
/// - a part process (`--run-part WORKLOAD:PART`, started by a workload process): runs one
///   part of a workload (its baseline's half, or a setup step), prints one JSON line;
/// - a writer (`--run-writer PATH`): writes pages to the store at PATH until it is killed.
struct CommandLineOptions: Sendable {
    enum Role: Sendable {
        case driver
        case workload(name: String)
        case part(qualifiedName: String)
        case writer(storePath: String)
        case help
        case list
    }

    var role: Role = .driver
    var scale: WorkloadScale = .quick
    /// `--only`: the workloads to run, in the registry's order; nil runs all of them.
    var only: [String]?
    /// `--dir`: where the temporary folder is created (default `$TMPDIR`, else `/tmp`).
    var parentDirectory: String?
    /// `--json`: where the results file goes (default `Benchmarks/results/latest.json`).
    var jsonPath: String?
    /// `--workdir` (workload and part processes): the folder to work in, instead of a temporary one.
    var workFolder: String?
    /// `--max-bytes` (writers): stop after this many page bytes, in case nobody kills it.
    var writerByteLimit: UInt64?

    static let usage = """
        usage: StrataBenchmarks [--quick | --full] [--only NAME[,NAME...]] [--dir PATH] [--json PATH]
               StrataBenchmarks --list
          --quick       the default sizes (a few minutes in all)
          --full        the larger sizes
          --only        run only these workloads (see --list)
          --dir PATH    create the temporary store folder under PATH (default $TMPDIR or /tmp)
          --json PATH   write the results there (default Benchmarks/results/latest.json)
        internal roles: --run-workload NAME [--workdir PATH], --run-part WORKLOAD:PART --workdir PATH,
                        --run-writer PATH [--max-bytes N]
        """

    /// Parses the arguments (without the program name).
    init(arguments: [String]) throws {
        var remaining = arguments[...]
        func value(of flag: String) throws -> String {
            guard let next = remaining.popFirst(), !next.hasPrefix("--") else {
                throw BenchmarkError.usage("\(flag) needs a value")
            }
            return next
        }
        func setRole(_ newRole: Role, flag: String) throws {
            guard case .driver = role else { throw BenchmarkError.usage("\(flag) cannot be combined with another role") }
            role = newRole
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "--quick": scale = .quick
            case "--full": scale = .full
            case "--only":
                only = try value(of: argument).split(separator: ",").map { String($0) }.filter { !$0.isEmpty }
            case "--dir": parentDirectory = try value(of: argument)
            case "--json": jsonPath = try value(of: argument)
            case "--workdir": workFolder = try value(of: argument)
            case "--max-bytes":
                let text = try value(of: argument)
                guard let limit = UInt64(text) else { throw BenchmarkError.usage("--max-bytes needs a number, not '\(text)'") }
                writerByteLimit = limit
            case "--run-workload": try setRole(.workload(name: try value(of: argument)), flag: argument)
            case "--run-part": try setRole(.part(qualifiedName: try value(of: argument)), flag: argument)
            case "--run-writer": try setRole(.writer(storePath: try value(of: argument)), flag: argument)
            case "--list": try setRole(.list, flag: argument)
            case "--help", "-h": role = .help
            default: throw BenchmarkError.usage("unknown argument '\(argument)'")
            }
        }
    }

    /// The arguments that give a workload process the same sizes as this run.
    func workloadArguments(name: String, folder: String) -> [String] {
        ["--run-workload", name, "--\(scale.rawValue)", "--workdir", folder]
    }

    /// The arguments that make a part process run `qualifiedName` ("WORKLOAD:PART") with
    /// `scale`'s sizes in `folder`.
    static func partArguments(qualifiedName: String, scale: WorkloadScale, folder: String) -> [String] {
        ["--run-part", qualifiedName, "--\(scale.rawValue)", "--workdir", folder]
    }
}
