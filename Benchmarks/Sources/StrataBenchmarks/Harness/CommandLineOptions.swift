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
    /// `--cores 1|2|both`: the CPU counts each workload is measured at, in that order (the
    /// driver restricts its workload processes with `taskset`). A workload or part process
    /// gets one count and checks that it runs on exactly that many CPUs.
    var coreCounts: [Int] = [2, 1]
    /// Whether `--cores` was given. Without it, a quick run measures at one core only the
    /// workloads whose two-core rows have a ratio (a baseline), to stay near ten minutes.
    var coresGiven = false
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
        usage: StrataBenchmarks [--quick | --full] [--cores 1|2|both] [--only NAME[,NAME...]] [--dir PATH] [--json PATH]
               StrataBenchmarks --list
          --quick       the default sizes
          --full        the larger sizes
          --cores       measure with every process on 1 CPU, on 2, or both (the default: 2, then 1; a quick
                        run without --cores repeats on 1 CPU only the workloads with a baseline)
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
            case "--cores":
                let text = try value(of: argument)
                switch text {
                case "both": coreCounts = [2, 1]
                case "1": coreCounts = [1]
                case "2": coreCounts = [2]
                default: throw BenchmarkError.usage("--cores needs 1, 2 or both, not '\(text)'")
                }
                coresGiven = true
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

    /// The CPU count a workload or part process was started for: the one `--cores` given.
    var restrictedCores: Int? {
        coreCounts.count == 1 ? coreCounts[0] : nil
    }

    /// The arguments that give a workload process the same sizes as this run, on `cores` CPUs.
    func workloadArguments(name: String, folder: String, cores: Int) -> [String] {
        ["--run-workload", name, "--\(scale.rawValue)", "--cores", String(cores), "--workdir", folder]
    }

    /// The arguments that make a part process run `qualifiedName` ("WORKLOAD:PART") with
    /// `scale`'s sizes in `folder` (checking it runs on `cores` CPUs, when given).
    static func partArguments(qualifiedName: String, scale: WorkloadScale, folder: String, cores: Int?) -> [String] {
        ["--run-part", qualifiedName, "--\(scale.rawValue)", "--workdir", folder] + (cores.map { ["--cores", String($0)] } ?? [])
    }
}
