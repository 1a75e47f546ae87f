/// A named measurement. Each one lives in its own file under `Workloads/` and is listed in
/// `WorkloadRegistry`; the driver runs each in a fresh process of its own.
struct Workload: Sendable {
    /// The name used by `--only` and shown in the table, e.g. "page-append".
    let name: String
    /// One line saying what is measured against what.
    let summary: String
    /// Runs the measurement in the current process and returns its rows: one per baseline
    /// (e.g. SQLite, LMDB, RocksDB), most workloads have one. Throws when the workload cannot
    /// run or when what it reads back differs from what it wrote.
    let run: @Sendable (WorkloadContext) throws -> [WorkloadResult]
    /// Parts of the workload that `run` has run in processes of their own
    /// (`context.runPartProcess(name)`), so that the workload process's peak memory is that
    /// of the Strata work it times: the baseline's half (SQLite), or a setup step that would
    /// leave its memory high-water mark behind. Each part returns what `run` needs (times,
    /// sizes, checksums) as a JSON object. Empty for workloads that do everything in `run`.
    let parts: [String: Part]

    /// A part run in a process of its own.
    typealias Part = @Sendable (WorkloadContext) throws -> JSONValue

    /// A workload with one row.
    init(
        name: String, summary: String,
        run: @escaping @Sendable (WorkloadContext) throws -> WorkloadResult,
        parts: [String: Part] = [:]
    ) {
        self.init(name: name, summary: summary, rows: { [try run($0)] }, parts: parts)
    }

    /// A workload with a row per baseline.
    init(
        name: String, summary: String,
        rows: @escaping @Sendable (WorkloadContext) throws -> [WorkloadResult],
        parts: [String: Part] = [:]
    ) {
        self.name = name
        self.summary = summary
        self.run = rows
        self.parts = parts
    }
}

/// How big the workloads are: `quick` (the default) for a run of a few minutes, `full` for
/// the larger, slower sizes.
enum WorkloadScale: String, Sendable {
    case quick
    case full

    /// The value for this scale.
    func pick<T>(quick: T, full: T) -> T {
        self == .quick ? quick : full
    }
}

/// What a workload gets to run with.
struct WorkloadContext: Sendable {
    /// The name of the running workload.
    let workloadName: String
    /// The sizes to use.
    let scale: WorkloadScale
    /// An empty folder that belongs to this workload; the driver removes it afterwards.
    let folder: String
    /// How many CPUs the processes are restricted to (`--cores`); nil when not restricted.
    var cores: Int? = nil

    /// The path of `name` inside the workload's folder.
    func path(_ name: String) -> String {
        folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }

    /// Runs part `name` of this workload (`Workload.parts`) in a new process of this
    /// executable, on the same folder and sizes, waits for it and returns what it reported.
    func runPartProcess(_ name: String) throws -> PartReport {
        try PartProcess.spawn(name, of: self)
    }

    /// Prints a progress line on standard error (standard output carries the result).
    func progress(_ message: String) {
        StandardError.write("  [\(workloadName)\(cores.map { ", \($0) core\($0 == 1 ? "" : "s")" } ?? "")] \(message)\n")
    }
}
